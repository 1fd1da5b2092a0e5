// Function bodies (structure_reader.h): statement boundaries, loops and their induction
// variables, calls and CUDA launches.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "source/code_view.h"
#include "source/structure_reader.h"

namespace lathe::agent::rules::detail {

// The last code position of the statement starting at s (which ends before `limit`).
size_t analyzer::statement_end(size_t s, size_t limit) const {
  if (s >= limit) return limit - 1;
  auto after_parens = [&](size_t kw) -> std::optional<size_t> {
    if (!is(kw + 1, "(")) return std::nullopt;
    long m = match(kw + 1);
    if (m < 0 || static_cast<size_t>(m) >= limit) return std::nullopt;
    return static_cast<size_t>(m) + 1;
  };
  if (is(s, "{")) {
    long m = match(s);
    return m < 0 ? limit - 1 : static_cast<size_t>(m);
  }
  if (is(s, ";")) return s;
  if (word(s, "for") || word(s, "while") || word(s, "switch")) {
    if (auto b = after_parens(s)) return statement_end(*b, limit);
  }
  if (word(s, "if")) {
    size_t kw = s;
    if (word(kw + 1, "constexpr")) ++kw;
    if (auto b = after_parens(kw)) {
      size_t e = statement_end(*b, limit);
      if (word(e + 1, "else")) return statement_end(e + 2, limit);
      return e;
    }
  }
  if (word(s, "do")) {
    size_t e = statement_end(s + 1, limit);
    if (word(e + 1, "while"))
      if (auto b = after_parens(e + 1)) return is(*b, ";") ? *b : *b - 1;
    return e;
  }
  if (word(s, "try")) {
    size_t e = statement_end(s + 1, limit);
    while (word(e + 1, "catch"))
      if (auto b = after_parens(e + 1))
        e = statement_end(*b, limit);
      else
        break;
    return e;
  }
  if ((word(s, "case") || word(s, "default") || (ident(s) && is(s + 1, ":")))) {
    for (size_t q = s; q < limit; ++q)
      if (is(q, ":")) return statement_end(q + 1, limit);
  }
  for (size_t q = s; q < limit; ++q) {
    if (opener(q)) {
      long m = match(q);
      if (m < 0) return limit - 1;
      q = static_cast<size_t>(m);
      continue;
    }
    if (is(q, ";")) return q;
    if (is(q, "}") || is(q, ")")) return q - 1;
  }
  return limit - 1;
}

void analyzer::scan_body(int32_t fi, size_t open, size_t close) {
  std::vector<int32_t> open_loops;
  std::set<size_t> do_tails;  // the `while` of a do-while is not a loop of its own
  for (size_t p = open + 1; p < close; ++p) {
    while (!open_loops.empty() && !st_.loops[open_loops.back()].whole.contains(code_[p]))
      open_loops.pop_back();
    const int32_t innermost = open_loops.empty() ? -1 : open_loops.back();
    if ((word(p, "for") || word(p, "while") || word(p, "do")) && !do_tails.count(p)) {
      if (std::optional<loop> l = read_loop(p, close, do_tails)) {
        l->function = fi;
        l->parent = innermost;
        st_.loops.push_back(std::move(*l));
        open_loops.push_back(static_cast<int32_t>(st_.loops.size() - 1));
      }
      continue;
    }
    if (is(p, "<<<")) {
      read_launch(p, open, close, fi, innermost);
      continue;
    }
    if (ident(p) && !is(p + 1, "::")) read_call(p, open, close, fi, innermost);
  }
}

std::optional<loop> analyzer::read_loop(size_t p, size_t close, std::set<size_t>& do_tails) const {
  loop l;
  l.keyword = code_[p];
  l.where = tl_.tokens[l.keyword].where;
  size_t end = 0;
  if (word(p, "do")) {
    l.kind = loop_kind::do_loop;
    const size_t e = statement_end(p + 1, close);
    if (!word(e + 1, "while") || !is(e + 2, "(") || match(e + 2) < 0) return std::nullopt;
    do_tails.insert(e + 1);
    l.body = span(p + 1, e);
    l.braced = is(p + 1, "{");
    const size_t rp = static_cast<size_t>(match(e + 2));
    l.header = span(e + 2, rp);
    end = is(rp + 1, ";") ? rp + 1 : rp;
  } else {
    l.kind = word(p, "for") ? loop_kind::for_loop : loop_kind::while_loop;
    if (!is(p + 1, "(") || match(p + 1) < 0) return std::nullopt;
    const size_t rp = static_cast<size_t>(match(p + 1));
    if (rp + 1 >= close) return std::nullopt;
    l.header = span(p + 1, rp);
    end = statement_end(rp + 1, close);
    l.body = span(rp + 1, end);
    l.braced = is(rp + 1, "{");
    if (l.kind == loop_kind::for_loop) induction(l, p + 1, rp);
  }
  l.whole = span(p, end);
  // `#pragma` lines directly before the keyword (comments between are fine).
  for (long k = static_cast<long>(l.keyword) - 1; k >= 0; --k) {
    const token& t = tl_.tokens[k];
    if (t.kind == token_kind::comment) continue;
    if (t.kind != token_kind::preprocessor || directive_name(tl_.text(t)) != "pragma") break;
    l.pragmas.insert(l.pragmas.begin(), static_cast<uint32_t>(k));
  }
  return l;
}

// The induction variable of `for (lp … rp)`: the first declared or assigned name of the init
// statement, else the name the increment steps (`for (; c < n; c += 8)`), else none.
void analyzer::induction(loop& l, size_t lp, size_t rp) const {
  std::vector<size_t> semis;
  std::optional<size_t> colon;
  int ternary = 0;
  for (size_t q = lp + 1; q < rp; ++q) {
    if (opener(q)) {
      q = static_cast<size_t>(std::max(match(q), static_cast<long>(q)));
      continue;
    }
    if (is(q, ";")) semis.push_back(q);
    if (is(q, "?")) ++ternary;
    if (is(q, ":")) {
      if (ternary > 0)
        --ternary;
      else if (!colon)
        colon = q;
    }
  }
  auto simple = [&](size_t q) { return ident(q) && !kTypeWords.count(text(q)); };
  if (semis.size() < 2) {  // range for, possibly after an init statement
    if (!colon) return;
    l.range_for = true;
    if (simple(*colon - 1)) l.induction = text(*colon - 1);
    return;
  }
  for (size_t q = lp + 1; q < semis[0]; ++q) {
    if (is(q, "<")) {
      if (auto c = angle_close(q, semis[0], false)) q = *c;
      continue;
    }
    if (is(q, "=") || is(q, "{") || (is(q, "(") && q > lp + 1 && simple(q - 1) && q - 1 > lp + 1)) {
      if (simple(q - 1)) l.induction = text(q - 1);
      return;
    }
    if (is(q, "[") || is(q, "(")) q = static_cast<size_t>(std::max(match(q), static_cast<long>(q)));
  }
  const size_t a = semis[1] + 1;
  if (a >= rp) return;
  if ((is(a, "++") || is(a, "--")) && simple(a + 1) && (a + 2 == rp || is(a + 2, ",")))
    l.induction = text(a + 1);
  else if (simple(a) && a + 1 < rp &&
           (is(a + 1, "++") || is(a + 1, "--") || is(a + 1, "+=") || is(a + 1, "-=") ||
            is(a + 1, "*=") || is(a + 1, "/=") || is(a + 1, "<<=") || is(a + 1, ">>=") ||
            is(a + 1, "=")))
    l.induction = text(a);
}

void analyzer::read_call(size_t p, size_t open, size_t close, int32_t fi, int32_t li) {
  if (kNotCallees.count(text(p))) return;
  size_t lp = p + 1;
  token_span targs;
  if (is(p + 1, "<")) {
    std::optional<size_t> gt = angle_close(p + 1, close, true);
    if (!gt || !is(*gt + 1, "(")) return;
    targs = span(p + 1, *gt);
    lp = *gt + 1;
  }
  if (!is(lp, "(") || match(lp) < 0) return;
  const size_t rp = static_cast<size_t>(match(lp));
  std::optional<size_t> s = name_start(p + 1, open + 1);
  if (!s) return;
  // A declaration with direct initialization (`dim3 grid(x, y)`, `std::vector<int> v(n)`) is
  // no call: the name follows a type.
  if (*s > open + 1) {
    const size_t b = *s - 1;
    if (ident(b) && !kExprKeywords.count(text(b))) return;
    if (kind(b) == token_kind::punct && angle_len(text(b)) > 0 && !is(b, ">>>")) {
      std::optional<size_t> lt = angle_open(b, open + 1);
      if (lt && *lt > 0 && ident(*lt - 1)) return;
    }
  }
  call c;
  for (size_t q = *s; q <= p; ++q) c.name += text(q);
  c.name_token = code_[p];
  c.template_args = targs;
  c.parens = span(lp, rp);
  c.arguments = arg_spans(lp, rp);
  c.function = fi;
  c.loop = li;
  c.whole = span(*s, rp);
  c.where = tl_.tokens[code_[p]].where;
  st_.calls.push_back(std::move(c));
}

void analyzer::read_launch(size_t p, size_t open, size_t close, int32_t fi, int32_t li) {
  // Backwards from `<<<`: the kernel, with template arguments (`k<T><<<…`) and qualifiers.
  size_t ne = p - 1;
  if (ne <= open) return;
  if (is(ne, ">")) {
    std::optional<size_t> lt = angle_open(ne, open + 1);
    if (!lt || *lt == 0) return;
    ne = *lt - 1;
  }
  if (!ident(ne)) return;
  size_t ns = ne;
  while (ns >= open + 3 && is(ns - 1, "::") && ident(ns - 2)) ns -= 2;
  // Forwards: the `>>>` at this level, then the argument list.
  size_t gt = 0;
  for (size_t q = p + 1; q < close && !gt; ++q) {
    if (opener(q)) {
      long m = match(q);
      if (m < 0) return;
      q = static_cast<size_t>(m);
    } else if (is(q, ">>>")) {
      gt = q;
    } else if (is(q, ";")) {
      return;
    }
  }
  if (!gt || !is(gt + 1, "(") || match(gt + 1) < 0) return;
  const size_t rp = static_cast<size_t>(match(gt + 1));
  launch l;
  for (size_t q = ns; q <= ne; ++q) l.kernel += text(q);
  l.kernel_span = span(ns, p - 1);
  l.config = span(p, gt);
  l.config_args = arg_spans(p, gt);
  l.parens = span(gt + 1, rp);
  l.arguments = arg_spans(gt + 1, rp);
  l.function = fi;
  l.loop = li;
  l.whole = span(ns, rp);
  l.where = tl_.tokens[code_[ns]].where;
  st_.launches.push_back(std::move(l));
}

}  // namespace lathe::agent::rules::detail
