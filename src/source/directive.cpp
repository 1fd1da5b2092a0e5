// The directive readers of token.h: a preprocessor line's name and its body.
#include <algorithm>
#include <string>

#include "source/lex_chars.h"
#include "source/token.h"

namespace lathe::agent::rules {

using detail::is_blank;
using detail::is_ident_char;
using detail::splice_len;

std::string_view directive_name(std::string_view text) {
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size()) {
      if (is_blank(text[i])) {
        ++i;
      } else if (size_t sp = splice_len(text, i)) {
        i += sp;
      } else if (text.substr(i, 2) == "/*") {
        size_t close = text.find("*/", i + 2);
        i = close == std::string_view::npos ? text.size() : close + 2;
      } else {
        break;
      }
    }
  };
  skip();
  if (i >= text.size() || text[i] != '#') return {};
  ++i;
  skip();
  size_t b = i;
  while (i < text.size() && is_ident_char(text[i])) ++i;
  return text.substr(b, i - b);
}

std::string directive_body(std::string_view text) {
  const std::string_view name = directive_name(text);
  size_t i = name.empty() ? text.find('#') + 1
                          : static_cast<size_t>(name.data() - text.data()) + name.size();
  std::string out;
  bool space = false;
  auto put = [&](std::string_view piece) {
    if (space && !out.empty()) out += ' ';
    space = false;
    out += piece;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (size_t sp = splice_len(text, i)) {
      i += sp;
      space = true;  // a continuation separates words the way a line break would
    } else if (is_blank(c) || c == '\n') {
      space = true;
      ++i;
    } else if (text.substr(i, 2) == "//") {
      break;
    } else if (text.substr(i, 2) == "/*") {
      size_t close = text.find("*/", i + 2);
      i = close == std::string_view::npos ? text.size() : close + 2;
      space = true;
    } else if (c == '"' || c == '\'') {
      size_t k = i + 1;
      while (k < text.size() && text[k] != c && text[k] != '\n') k += text[k] == '\\' ? 2 : 1;
      k = std::min(k < text.size() && text[k] == c ? k + 1 : i + 1, text.size());
      put(text.substr(i, k - i));
      i = k;
    } else {
      size_t k = i + 1;
      while (k < text.size() && !is_blank(text[k]) && text[k] != '\n' && text[k] != '"' &&
             text[k] != '\'' && text.substr(k, 2) != "//" && text.substr(k, 2) != "/*" &&
             splice_len(text, k) == 0)
        ++k;
      put(text.substr(i, k - i));
      i = k;
    }
  }
  return out;
}

}  // namespace lathe::agent::rules
