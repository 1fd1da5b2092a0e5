// Wrong answers on purpose (--wrong-rate): a kernel that still compiles but computes a wrong
// result, the way a model's slip would. Each kind has a textual signature the mock's `repair`
// recognizes and undoes, so bounded repair can be exercised end to end:
//   bound     the output loop (or a CUDA kernel's index guard) stops one short: `i < n - 1`;
//             the last row/element is never written and keeps the gate's poison
//   store     the last indexed store of the computation is scaled: `y[i] = (expr) * 1.0625f;`
//   constant  a floating-point constant of the computation is perturbed: `(1.0f + 0.0625f)`
// 1/16 is far outside every task's tolerance (softmax: rtol 1e-4; bf16 GEMMs: ~1e-2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "choice.h"
#include "kernel_io.h"

namespace lathe::mock {

enum class wrong_kind : uint8_t { bound, store, constant };
const char* to_string(wrong_kind k);
std::optional<wrong_kind> parse_wrong_kind(std::string_view s);

struct wrong_edit {
  wrong_kind kind = wrong_kind::bound;
  std::string path, text;  // the file changed, its new contents
  std::string where;       // "kernel.cpp:57"
  std::string what;        // what changed, for stderr
};

// A wrong version of `b`. `prefer` names the function the answer already touched (so the slip
// sits in the code the answer is about when possible). `only`: that kind when it applies, else
// another. nullopt when no kind applies (the answer then stays correct).
std::optional<wrong_edit> make_wrong(const mock_bundle& b, std::string_view prefer,
                                     std::optional<wrong_kind> only, stream& s);

// The repair: the first signature of a wrong kind found in `b`, undone.
std::optional<wrong_edit> undo_wrong(const mock_bundle& b);

}  // namespace lathe::mock
