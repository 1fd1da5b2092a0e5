// The structure reader behind `analyze` (structure.h): one pass over the code positions of
// code_view.h. Declarations are read in structure.cpp, statements (loops, calls, launches) in
// statements.cpp. Internal to src/source.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "source/code_view.h"
#include "source/structure.h"
#include "source/token.h"

namespace lathe::agent::rules::detail {

// Names followed by `(` that are never calls: statements, operators, casts, attributes and the
// fundamental types (a functional cast `float(x)` converts, it calls nothing).
extern const std::set<std::string_view> kNotCallees;
// Identifiers that may precede a call without making it a declaration (`return f(x)`).
extern const std::set<std::string_view> kExprKeywords;
// Declaration words that are never a parameter's name.
extern const std::set<std::string_view> kTypeWords;
extern const std::set<std::string_view> kFunctionQualifiers;
// What may follow a function's `)` before its body: cv/ref qualifiers, noexcept, a trailing
// return type, a constructor's initializer list, attributes.
extern const std::set<std::string_view> kAfterParams;

class analyzer : public code_view {
 public:
  explicit analyzer(const token_list& tl) : code_view(tl) {}

  structure run();

 private:
  // ---- declarations ------------------------------------------------------------------------

  void region(size_t b, size_t e, bool c_linkage);
  size_t brace(size_t stmt, size_t open, size_t close, bool c_linkage);
  std::optional<size_t> name_start(size_t q, size_t floor) const;
  std::optional<size_t> try_function(size_t stmt, size_t open, bool c_linkage);
  std::optional<size_t> init_list_body(size_t c) const;
  std::vector<param> params(size_t lp, size_t rp) const;

  // ---- statements --------------------------------------------------------------------------

  size_t statement_end(size_t s, size_t limit) const;
  void scan_body(int32_t fi, size_t open, size_t close);
  std::optional<loop> read_loop(size_t p, size_t close, std::set<size_t>& do_tails) const;
  void induction(loop& l, size_t lp, size_t rp) const;
  void read_call(size_t p, size_t open, size_t close, int32_t fi, int32_t li);
  void read_launch(size_t p, size_t open, size_t close, int32_t fi, int32_t li);

  // ---- names -------------------------------------------------------------------------------

  void name_functions();

  structure st_;
};

}  // namespace lathe::agent::rules::detail
