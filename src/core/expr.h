// Integer arithmetic over named symbols, for shapes and cost models ("2*M*N*K").
// Grammar: expr = term {(+|-) term}; term = factor {(*|/|%) factor}; factor = int | name | (expr)
// | -factor. `/` and `%` truncate toward zero, as in C. Overflow of int64 is an error, never a
// wrap.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"

namespace lathe {

result<int64_t> eval_expr(std::string_view text, const std::map<std::string, int64_t>& symbols);

// A condition over the same arithmetic (a tunable's constraint: "BLOCK * ITEMS <= 4096",
// "N % TILE == 0 && TILE >= 16"): cond = and {|| and}; and = not {&& not}; not = !not | cmp;
// cmp = expr [(< | <= | > | >= | == | !=) expr]; parentheses hold a cond. True when non-zero.
result<bool> eval_condition(std::string_view text, const std::map<std::string, int64_t>& symbols);

}  // namespace lathe
