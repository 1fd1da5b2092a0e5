// Just enough structure of a C++/CUDA source for mechanical edits: which characters are code
// (not comments or literals), where functions and `for` loops begin and end, and the lines they
// sit on. A textual view, not a parser: it is right on the kernels lathe ships and on the code
// the mock writes itself, and it declines (finds nothing) where it is unsure.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lathe::mock {

class source_view {
 public:
  explicit source_view(std::string text);

  const std::string& text() const { return text_; }
  // Same length as text(): comments blanked, string and character literals' contents blanked
  // (the quotes stay), newlines kept. Searching here never matches inside a comment.
  const std::string& code() const { return code_; }
  // code() with preprocessor lines blanked as well: for braces, parentheses and statements.
  const std::string& shape() const { return shape_; }

  size_t line_count() const { return starts_.size(); }
  size_t line_of(size_t offset) const;  // 0-based line of an offset
  size_t line_start(size_t line) const { return starts_[line]; }
  size_t line_end(size_t line) const;  // offset of the line's '\n' (or the text's end)
  std::string_view line(size_t line) const;
  std::string_view code_line(size_t line) const;
  // True when the line holds no code: blank, or only comment.
  bool blank_or_comment(size_t line) const;
  std::string indent_of(size_t line) const;

 private:
  std::string text_, code_, shape_;
  std::vector<size_t> starts_;
};

// Offset of the bracket closing the one at `open` ('(', '{' or '['), counted on `s`; npos when
// unbalanced.
size_t match_close(std::string_view s, size_t open);

struct function_span {
  std::string name;
  size_t head = 0;                           // where its declaration starts
  size_t params_open = 0, params_close = 0;  // '(' and ')' of its parameter list
  size_t body_open = 0, body_close = 0;      // '{' and '}'
  bool global = false;                       // __global__ (a CUDA kernel)
  bool device = false;                       // __device__
};

// Function definitions at namespace scope (inside namespaces and extern "C" blocks too).
std::vector<function_span> functions(const source_view& v);

// The helpers every shipped kernel carries (argument checks, error text, tensor access, a seed's
// reference) take the ABI's types (DLTensor, lathe_args) and compute nothing of the operator:
// transformations and slips leave them alone. lathe_launch is never one.
bool abi_helper(const source_view& v, const function_span& f);

struct loop_span {
  size_t at = 0;                             // offset of `for`
  size_t header_open = 0, header_close = 0;  // '(' and ')'
  size_t body_begin = 0, body_end = 0;       // the statement it controls, [begin, end)
  std::string var;                           // induction variable ("" when not found)
  bool var_declared = false;                 // declared in the header (`int64_t i = 0`)
  std::string init, cond, step;              // the header's three parts, trimmed
  int depth = 0;                             // loops enclosing it in the same function
  bool innermost = true;
  bool own_line = false;         // `for` is the first code on its line
  bool statement_start = false;  // preceded by ';', '{' or '}' (a pragma may go before)
};

std::vector<loop_span> loops(const source_view& v, const function_span& f);

// End (one past) of the statement starting at or after `pos` on `shape`: a braced block, a
// control statement with its body, or up to its ';'.
size_t statement_end(std::string_view shape, size_t pos);

std::string trim(std::string_view s);
bool is_ident_char(char c);
// Offsets of `word` in `s` as a whole identifier.
std::vector<size_t> find_words(std::string_view s, std::string_view word, size_t from = 0,
                               size_t to = std::string_view::npos);

}  // namespace lathe::mock
