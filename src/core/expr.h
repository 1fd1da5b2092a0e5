// Integer arithmetic over named symbols, for shapes and cost models ("2*M*N*K").
// Grammar: expr = term {(+|-) term}; term = factor {(*|/) factor}; factor = int | name | (expr)
// | -factor. Overflow of int64 is an error, never a wrap.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/error.h"

namespace lathe {

result<int64_t> eval_expr(std::string_view text, const std::map<std::string, int64_t>& symbols);

}  // namespace lathe
