// The code-position view of code_view.h.
#include "source/code_view.h"

namespace lathe::agent::rules::detail {

code_view::code_view(const token_list& tl) : tl_(tl) {
  pos_.assign(tl.tokens.size(), -1);
  for (uint32_t i = 0; i < tl.tokens.size(); ++i) {
    const token_kind k = tl.tokens[i].kind;
    if (k == token_kind::comment || k == token_kind::preprocessor) continue;
    pos_[i] = static_cast<int32_t>(code_.size());
    code_.push_back(i);
  }
}

std::optional<size_t> code_view::angle_close(size_t p, size_t limit, bool strict) const {
  int count = 1;
  for (size_t q = p + 1; q < limit; ++q) {
    if (is(q, "(") || is(q, "[")) {
      long m = match(q);
      if (m < 0) return std::nullopt;
      q = static_cast<size_t>(m);
      continue;
    }
    if (is(q, "<")) ++count;
    count -= kind(q) == token_kind::punct ? angle_len(text(q)) : 0;
    if (count == 0) return q;
    // `>>` closing this list and an outer one: `map` in `g<std::map<int, int>>(x)` is not
    // followed by anything of its own.
    if (count < 0) return std::nullopt;
    if (is(q, ";") || is(q, "{") || is(q, "}") || is(q, ")") || is(q, "]")) return std::nullopt;
    if (strict && (is(q, "&&") || is(q, "||"))) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<size_t> code_view::angle_open(size_t p, size_t floor) const {
  int count = angle_len(text(p));
  for (size_t q = p; q-- > floor;) {
    if (is(q, ")") || is(q, "]")) {
      long m = match(q);
      if (m < 0) return std::nullopt;
      q = static_cast<size_t>(m);
      continue;
    }
    if (kind(q) == token_kind::punct) count += angle_len(text(q));
    if (is(q, "<") && --count == 0) return q;
    if (is(q, ";") || is(q, "{") || is(q, "}") || is(q, "(") || is(q, "[")) return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::pair<size_t, size_t>> code_view::split_commas(size_t a, size_t b,
                                                               bool decl) const {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = a + 1;
  int angle = 0;
  bool in_default = false;
  for (size_t q = a + 1; q < b; ++q) {
    if (opener(q)) {
      long m = match(q);
      if (m > 0 && static_cast<size_t>(m) < b) q = static_cast<size_t>(m);
      continue;
    }
    if (is(q, "<")) {
      if (decl && !in_default) {
        ++angle;
      } else if (q > a + 1 && (ident(q - 1) || is(q - 1, "::"))) {
        std::optional<size_t> c = angle_close(q, b, true);
        if (c) {
          const size_t f = *c + 1;
          if (f >= b || is(f, "(") || is(f, "{") || is(f, "::") || is(f, ",") || is(f, ")") ||
              is(f, ">") || is(f, ">>"))
            q = *c;
        }
      }
      continue;
    }
    if (decl && kind(q) == token_kind::punct && angle_len(text(q)) > 0) {
      angle = std::max(0, angle - angle_len(text(q)));
      continue;
    }
    if (decl && angle == 0 && is(q, "=")) in_default = true;
    if (angle == 0 && is(q, ",")) {
      out.emplace_back(start, q);
      start = q + 1;
      in_default = false;
    }
  }
  if (start < b || !out.empty()) out.emplace_back(start, b);
  return out;
}

std::vector<token_span> code_view::arg_spans(size_t a, size_t b) const {
  std::vector<token_span> out;
  for (auto [x, y] : split_commas(a, b, false))
    out.push_back(y > x ? span(x, y - 1) : token_span{});
  return out;
}

std::string code_view::join(const std::vector<size_t>& ps) const {
  std::string out;
  for (size_t i = 0; i < ps.size(); ++i) {
    const size_t p = ps[i];
    if (i > 0) {
      const size_t q = ps[i - 1];
      const bool after_sep = is(q, ",") || is(q, "*") || is(q, "&") || is(q, "&&");
      if (word_like(kind(p)) && (word_like(kind(q)) || after_sep)) out += ' ';
    }
    out += text(p);
  }
  return out;
}

}  // namespace lathe::agent::rules::detail
