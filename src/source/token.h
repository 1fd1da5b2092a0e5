// The rule engine's front end (issue 5): a token-level view of C++ and CUDA source. It is not a
// compiler: it knows comments, string and character literals (raw strings included),
// preprocessor lines, bracket nesting and which `#if` branch a token lies in, so that a rule
// never edits a comment, a string or a dead branch thinking it is code. Semantic facts (no
// loop-carried dependence, alignment, aliasing) are never derived here: a rule records them as
// "assumed; checked by the gate".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::agent::rules {

enum class token_kind : uint8_t {
  identifier,    // names and keywords (`for`, `__global__`, `float4`)
  number,        // pp-number: 1, 0x1f, 1.5e-3f, 1'000
  string,        // "…", u8"…", R"d(…)d", L"…"
  character,     // 'a', u'x'
  punct,         // operators and brackets, longest match (`<<<`, `>>>`, `->`, `::`, `<<=`…)
  comment,       // // … and /* … */
  preprocessor,  // a whole directive line, continuations included (`#pragma unroll 4`)
};

// Whether a token is compiled. `conditional` is a branch whose condition the front end cannot
// decide (`#ifdef __CUDA_ARCH__`, `#if N > 2`); `inactive` is one it can (`#if 0`, the `#else` of
// `#if 1`). Edits in conditional or inactive code are reported as such, never silently made.
// `#if` expressions are evaluated over integer literals, `true`/`false` and the operators;
// `&&`, `||` and `?:` short-circuit (`#if 0 && X` is inactive, `#if 1 || X` active); a macro,
// `defined(X)` or `__has_include` makes the branch conditional. Inactive inside anything stays
// inactive. An include guard (`#ifndef X` + `#define X` before any code) is active.
enum class branch : uint8_t { active, conditional, inactive };

struct token {
  token_kind kind = token_kind::identifier;
  // Byte offsets in the source: text = source.substr(begin, end - begin).
  uint32_t begin = 0, end = 0;
  uint32_t line = 0;   // 1-based line of `begin`
  int32_t depth = 0;   // brackets ((), [], {}) enclosing this token; a bracket pair
                       // itself has the depth of its outside: `f`, `(`, `)` of f(a)
                       // are 0, `a` is 1
  int32_t match = -1;  // for an opening or closing bracket: index of its partner; -1 none
                       // (unbalanced, reported in `errors`). A bracket opened in every
                       // branch of an #if group pairs with the closer after #endif
                       // through the branch most likely compiled.
  branch where = branch::active;
};

struct token_list {
  std::string_view source;          // the text tokenized (must outlive the list)
  std::vector<token> tokens;        // in source order; blanks and line splices are not tokens
  std::vector<std::string> errors;  // unterminated comment/string/raw string, unbalanced bracket
                                    // ("line 12: unterminated raw string"); tokens still cover
                                    // the whole text (the lexer recovers and goes on)

  std::string_view text(const token& t) const { return source.substr(t.begin, t.end - t.begin); }
  std::string_view text(size_t i) const { return text(tokens[i]); }
  // Index of the next / previous token that is not a comment (nothing: tokens.size() / -1).
  size_t next_code(size_t i) const;
  long prev_code(size_t i) const;
};

// Tokenizes C++ or CUDA source. Never throws; problems go to `errors`, sorted by line.
token_list tokenize(std::string_view source);

// Where an edit of the bytes [begin, end) of the source lands: the worst branch (active <
// conditional < inactive) of the tokens it touches; for a range touching none (an insertion
// point, blanks), the branch of that place. An empty branch (`#if 0` directly followed by
// `#endif`) cannot be told from tokens and is reported conditional.
branch branch_of_bytes(const token_list& tl, size_t begin, size_t end);

// Whether token i (a string) lies inside the operands of `asm(…)`, `asm volatile(…)`,
// `__asm__ __volatile__(…)` or `asm goto(…)`: PTX or assembly text, not a C++ string.
bool in_asm(const token_list& tl, size_t i);

// For a preprocessor token: the directive's name (`pragma`, `if`, `include`) and the rest of the
// line with continuations joined and comments removed ("unroll 4", "omp parallel for").
std::string_view directive_name(std::string_view preprocessor_text);
std::string directive_body(std::string_view preprocessor_text);

}  // namespace lathe::agent::rules
