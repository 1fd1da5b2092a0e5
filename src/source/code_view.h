// A token list seen as "code positions": the tokens that are neither comments nor preprocessor
// lines, so that a `#pragma unroll` between a loop header and its body, or a comment inside a
// parameter list, never breaks a pattern. The structure reader (structure_reader.h) works on
// these positions. Internal to src/source.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "source/structure.h"
#include "source/token.h"

namespace lathe::agent::rules::detail {

inline bool word_like(token_kind k) {
  return k == token_kind::identifier || k == token_kind::number || k == token_kind::string ||
         k == token_kind::character;
}

class code_view {
 public:
  explicit code_view(const token_list& tl);

  size_t n() const { return code_.size(); }
  std::string_view text(size_t p) const { return p < n() ? tl_.text(code_[p]) : ""; }
  token_kind kind(size_t p) const {
    return p < n() ? tl_.tokens[code_[p]].kind : token_kind::comment;
  }
  bool is(size_t p, std::string_view t) const {
    return p < n() && kind(p) == token_kind::punct && text(p) == t;
  }
  bool ident(size_t p) const { return p < n() && kind(p) == token_kind::identifier; }
  bool word(size_t p, std::string_view w) const { return ident(p) && text(p) == w; }
  bool opener(size_t p) const { return is(p, "(") || is(p, "[") || is(p, "{"); }
  // The partner of a bracket, as a code position; -1 when unmatched.
  long match(size_t p) const {
    if (p >= n()) return -1;
    const int32_t m = tl_.tokens[code_[p]].match;
    return m < 0 ? -1 : pos_[m];
  }
  // Span of code positions [a, b] inclusive, as token indices.
  token_span span(size_t a, size_t b) const {
    if (b < a || a >= n()) return {};
    return {code_[a], code_[std::min(b, n() - 1)] + 1};
  }

  static int angle_len(std::string_view t) {
    return t == ">" ? 1 : t == ">>" ? 2 : t == ">>>" ? 3 : 0;
  }

  // The `>` closing the `<` at p, before `limit`. `strict` (expressions) refuses spans with
  // `&&`/`||`, which a template argument list rarely has and a comparison chain often does.
  std::optional<size_t> angle_close(size_t p, size_t limit, bool strict) const;
  // The `<` opening the template argument list closed by the `>` at p.
  std::optional<size_t> angle_open(size_t p, size_t floor) const;
  // Splits the code positions (a, b) (exclusive) at top-level commas. In `decl` mode every `<`
  // opens a template argument list (`std::map<int, int> m`); in expressions only one that
  // closes and is followed by what follows a template-id (`f(a < b, c > d)` stays two).
  std::vector<std::pair<size_t, size_t>> split_commas(size_t a, size_t b, bool decl) const;
  std::vector<token_span> arg_spans(size_t a, size_t b) const;
  // Token texts joined the way a person writes a type: "const float* __restrict__".
  std::string join(const std::vector<size_t>& ps) const;

 protected:
  const token_list& tl_;
  std::vector<uint32_t> code_;  // code position -> token index
  std::vector<int32_t> pos_;    // token index -> code position, -1 for comments and directives
};

}  // namespace lathe::agent::rules::detail
