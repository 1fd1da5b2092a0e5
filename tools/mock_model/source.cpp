#include "source.h"

#include <algorithm>

namespace lathe::mock {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<size_t> find_words(std::string_view s, std::string_view word, size_t from, size_t to) {
  std::vector<size_t> out;
  if (to > s.size()) to = s.size();
  for (size_t p = s.find(word, from); p != std::string_view::npos && p + word.size() <= to;
       p = s.find(word, p + 1)) {
    const bool left = p == 0 || !is_ident_char(s[p - 1]);
    const bool right = p + word.size() >= s.size() || !is_ident_char(s[p + word.size()]);
    if (left && right) out.push_back(p);
  }
  return out;
}

source_view::source_view(std::string text) : text_(std::move(text)) {
  code_ = text_;
  enum class st { code, line_comment, block_comment, str, chr } state = st::code;
  for (size_t i = 0; i < code_.size(); ++i) {
    const char c = text_[i];
    const char n = i + 1 < text_.size() ? text_[i + 1] : '\0';
    switch (state) {
      case st::code:
        if (c == '/' && n == '/') {
          state = st::line_comment;
          code_[i] = code_[i + 1] = ' ';
          ++i;
        } else if (c == '/' && n == '*') {
          state = st::block_comment;
          code_[i] = code_[i + 1] = ' ';
          ++i;
        } else if (c == '"') {
          state = st::str;
        } else if (c == '\'' && !(i > 0 && is_ident_char(text_[i - 1]) &&
                                  (text_[i - 1] >= '0' && text_[i - 1] <= '9'))) {
          state = st::chr;  // not a digit separator (1'000)
        }
        break;
      case st::line_comment:
        if (c == '\n')
          state = st::code;
        else
          code_[i] = ' ';
        break;
      case st::block_comment:
        if (c == '*' && n == '/') {
          code_[i] = code_[i + 1] = ' ';
          ++i;
          state = st::code;
        } else if (c != '\n') {
          code_[i] = ' ';
        }
        break;
      case st::str:
      case st::chr:
        if (c == '\\' && n != '\0') {
          code_[i] = ' ';
          if (n != '\n') code_[i + 1] = ' ';
          ++i;
        } else if ((state == st::str && c == '"') || (state == st::chr && c == '\'')) {
          state = st::code;
        } else if (c == '\n') {
          state = st::code;  // unterminated: do not blank the rest of the file
        } else {
          code_[i] = ' ';
        }
        break;
    }
  }
  starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n' && i + 1 < text_.size()) starts_.push_back(i + 1);
  shape_ = code_;
  bool continued = false;
  for (size_t l = 0; l < starts_.size(); ++l) {
    const size_t b = starts_[l], e = line_end(l);
    const auto first = code_.find_first_not_of(" \t", b);
    const bool directive =
        continued || (first != std::string::npos && first < e && code_[first] == '#');
    if (directive) std::fill(shape_.begin() + b, shape_.begin() + e, ' ');
    continued = directive && e > b && text_[e - 1] == '\\';
  }
}

size_t source_view::line_of(size_t offset) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  return static_cast<size_t>(it - starts_.begin()) - 1;
}

size_t source_view::line_end(size_t line) const {
  const auto e = text_.find('\n', starts_[line]);
  return e == std::string::npos ? text_.size() : e;
}

std::string_view source_view::line(size_t l) const {
  return std::string_view(text_).substr(starts_[l], line_end(l) - starts_[l]);
}

std::string_view source_view::code_line(size_t l) const {
  return std::string_view(code_).substr(starts_[l], line_end(l) - starts_[l]);
}

bool source_view::blank_or_comment(size_t l) const {
  return code_line(l).find_first_not_of(" \t\r") == std::string_view::npos;
}

std::string source_view::indent_of(size_t l) const {
  const auto s = line(l);
  return std::string(s.substr(0, s.find_first_not_of(" \t")));
}

size_t match_close(std::string_view s, size_t open) {
  const char o = s[open];
  const char c = o == '(' ? ')' : o == '{' ? '}' : ']';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o)
      ++depth;
    else if (s[i] == c && --depth == 0)
      return i;
  }
  return std::string_view::npos;
}

namespace {

size_t skip_space(std::string_view s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
  return p;
}

bool keyword_at(std::string_view s, size_t p, std::string_view kw) {
  return s.substr(p, kw.size()) == kw &&
         (p + kw.size() >= s.size() || !is_ident_char(s[p + kw.size()])) &&
         (p == 0 || !is_ident_char(s[p - 1]));
}

bool has_word(std::string_view s, std::string_view w) {
  return !find_words(s, w).empty();
}

// The function a declaration head introduces ("__global__ void __launch_bounds__(256) k(int n)"),
// or false when the head is not one (an initializer, a type, a namespace).
bool function_head(std::string_view shape, size_t head, size_t brace, function_span& f) {
  const std::string_view h = shape.substr(head, brace - head);
  if (has_word(h, "struct") || has_word(h, "class") || has_word(h, "union") || has_word(h, "enum"))
    return false;
  // The last top-level parenthesis group is the parameter list; what follows it may only be
  // qualifiers (const, noexcept, override…).
  size_t open = std::string_view::npos, close = std::string_view::npos;
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == '=' && (i + 1 >= h.size() || h[i + 1] != '=') && open == std::string_view::npos)
      return false;  // `T x = {`: an initializer
    if (h[i] == '(') {
      const size_t c = match_close(h, i);
      if (c == std::string_view::npos) return false;
      open = i;
      close = c;
      i = c;
    }
  }
  if (open == std::string_view::npos) return false;
  for (size_t i = close + 1; i < h.size(); ++i)
    if (!(is_ident_char(h[i]) || h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r'))
      return false;
  size_t e = open;
  while (e > 0 && (h[e - 1] == ' ' || h[e - 1] == '\t' || h[e - 1] == '\n')) --e;
  size_t b = e;
  while (b > 0 && is_ident_char(h[b - 1])) --b;
  if (b == e) return false;
  f.name = std::string(h.substr(b, e - b));
  if (f.name == "if" || f.name == "for" || f.name == "while" || f.name == "switch") return false;
  const size_t first = skip_space(shape, head);
  f.head = first;
  f.params_open = head + open;
  f.params_close = head + close;
  f.body_open = brace;
  f.global = has_word(h, "__global__");
  f.device = has_word(h, "__device__");
  return true;
}

}  // namespace

std::vector<function_span> functions(const source_view& v) {
  const std::string& s = v.shape();
  std::vector<function_span> out;
  int containers = 0;  // open namespace / extern "C" blocks
  size_t head = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ';') {
      head = i + 1;
    } else if (c == '}') {
      if (containers > 0) --containers;
      head = i + 1;
    } else if (c == '(') {
      const size_t close = match_close(s, i);
      if (close == std::string::npos) break;
      i = close;  // braces inside parentheses (lambdas, initializers) are not blocks here
    } else if (c == '{') {
      const std::string h = trim(std::string_view(s).substr(head, i - head));
      const bool container = (h.starts_with("namespace") || h.starts_with("extern")) &&
                             h.find('(') == std::string::npos;
      if (container) {
        ++containers;
        head = i + 1;
        continue;
      }
      function_span f;
      const size_t close = match_close(s, i);
      if (close == std::string::npos) break;
      if (function_head(s, head, i, f)) {
        f.body_close = close;
        out.push_back(f);
      }
      i = close;
      head = i + 1;
    }
  }
  return out;
}

bool abi_helper(const source_view& v, const function_span& f) {
  if (f.name == "lathe_launch") return false;
  const std::string_view params =
      std::string_view(v.code()).substr(f.params_open, f.params_close - f.params_open);
  return f.name == "set_error" || params.find("DLTensor") != std::string_view::npos ||
         params.find("lathe_args") != std::string_view::npos;
}

size_t statement_end(std::string_view s, size_t pos) {
  pos = skip_space(s, pos);
  if (pos >= s.size()) return s.size();
  if (s[pos] == '{') {
    const size_t c = match_close(s, pos);
    return c == std::string_view::npos ? s.size() : c + 1;
  }
  for (std::string_view kw : {"for", "while", "switch", "if"}) {
    if (!keyword_at(s, pos, kw)) continue;
    const size_t open = skip_space(s, pos + kw.size());
    if (open >= s.size() || s[open] != '(') break;
    const size_t close = match_close(s, open);
    if (close == std::string_view::npos) return s.size();
    size_t end = statement_end(s, close + 1);
    if (kw == "if") {
      const size_t e = skip_space(s, end);
      if (keyword_at(s, e, "else")) end = statement_end(s, e + 4);
    }
    return end;
  }
  int depth = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '{' || s[i] == '[')
      ++depth;
    else if (s[i] == ')' || s[i] == '}' || s[i] == ']')
      --depth;
    else if (s[i] == ';' && depth <= 0)
      return i + 1;
  }
  return s.size();
}

std::vector<loop_span> loops(const source_view& v, const function_span& f) {
  const std::string& s = v.shape();
  std::vector<loop_span> out;
  for (size_t at : find_words(s, "for", f.body_open, f.body_close)) {
    const size_t open = skip_space(s, at + 3);
    if (open >= f.body_close || s[open] != '(') continue;
    const size_t close = match_close(s, open);
    if (close == std::string::npos || close > f.body_close) continue;
    loop_span l;
    l.at = at;
    l.header_open = open;
    l.header_close = close;
    l.body_begin = skip_space(s, close + 1);
    l.body_end = statement_end(s, close + 1);
    // The header's parts, split at top-level ';'.
    std::vector<std::string> parts;
    int depth = 0;
    size_t from = open + 1;
    for (size_t i = open + 1; i < close; ++i) {
      if (s[i] == '(' || s[i] == '[' || s[i] == '{')
        ++depth;
      else if (s[i] == ')' || s[i] == ']' || s[i] == '}')
        --depth;
      else if (s[i] == ';' && depth == 0) {
        parts.push_back(trim(std::string_view(v.text()).substr(from, i - from)));
        from = i + 1;
      }
    }
    parts.push_back(trim(std::string_view(v.text()).substr(from, close - from)));
    if (parts.size() != 3) continue;  // a range-for: no induction variable to speak of
    l.init = parts[0];
    l.cond = parts[1];
    l.step = parts[2];
    // `int64_t i = 0` declares i; `i = 0` reuses it; `;` leaves it to the condition.
    if (const auto eq = l.init.find('='); eq != std::string::npos) {
      const std::string lhs = trim(std::string_view(l.init).substr(0, eq));
      size_t b = lhs.size();
      while (b > 0 && is_ident_char(lhs[b - 1])) --b;
      l.var = lhs.substr(b);
      l.var_declared = trim(std::string_view(lhs).substr(0, b)).size() > 0;
    } else {
      size_t e = 0;
      while (e < l.cond.size() && is_ident_char(l.cond[e])) ++e;
      l.var = l.cond.substr(0, e);
    }
    const size_t line = v.line_of(at);
    l.own_line =
        trim(std::string_view(s).substr(v.line_start(line), at - v.line_start(line))).empty();
    size_t p = at;
    while (p > f.body_open &&
           (s[p - 1] == ' ' || s[p - 1] == '\t' || s[p - 1] == '\n' || s[p - 1] == '\r'))
      --p;
    l.statement_start = p > 0 && (s[p - 1] == ';' || s[p - 1] == '{' || s[p - 1] == '}');
    out.push_back(l);
  }
  for (auto& l : out)
    for (const auto& o : out) {
      if (&o == &l) continue;
      if (o.at > l.at && o.at < l.body_end) l.innermost = false;
      if (l.at > o.at && l.at < o.body_end) ++l.depth;
    }
  return out;
}

}  // namespace lathe::mock
