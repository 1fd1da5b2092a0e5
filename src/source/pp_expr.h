// The `#if`/`#elif` condition evaluator used by the lexer (token.cpp) to decide which branch a
// token lies in. Internal to src/source.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lathe::agent::rules::detail {

// The condition of `#if`/`#elif`, evaluated three-valued: a number, or nothing when it depends
// on a macro (`defined(X)`, `N > 2`, `__has_include(…)`) whose value only the compiler's
// command line knows. `&&`, `||` and `?:` short-circuit, so `0 && X` is 0 and `1 || X` is 1.
std::optional<int64_t> eval_pp_condition(std::string_view body);

}  // namespace lathe::agent::rules::detail
