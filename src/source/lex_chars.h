// Character classes and line splices shared by the lexer (token.cpp), the `#if` evaluator
// (pp_expr.cpp) and the directive readers (directive.cpp). Internal to src/source.
#pragma once

#include <cstddef>
#include <string_view>

namespace lathe::agent::rules::detail {

inline bool is_ident_start(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  // Bytes >= 0x80 are UTF-8 identifier characters (C++23 allows them; nvcc and g++ accept them).
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
inline bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
inline bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

// Length of a line splice at i: a backslash, optional blanks (g++ accepts them with a warning,
// and editors leave them), then a newline. 0 when there is none.
inline size_t splice_len(std::string_view s, size_t i) {
  if (i >= s.size() || s[i] != '\\') return 0;
  size_t j = i + 1;
  while (j < s.size() && is_blank(s[j])) ++j;
  if (j < s.size() && s[j] == '\n') return j + 1 - i;
  return 0;
}

}  // namespace lathe::agent::rules::detail
