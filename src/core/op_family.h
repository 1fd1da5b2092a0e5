// Operator families (issue 44, item 3): what kind of computation a task or a card's evidence is,
// a closed set, so that a card learned on one operator can be matched to a PyTorch problem, whose
// only name is its file's (`19_ReLU`). A task's operator (`task.toml`'s `operator`: gemm, silu,
// layernorm…) and the compute ops a KernelBench problem's Model runs (aten base names as
// python/lathe_ops.py records them: addmm, sigmoid, sum…) map onto the same families.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lathe {

enum class op_family : uint8_t {
  elementwise,    // one output element from the same element of each input: relu, mul, sigmoid
  reduction,      // rows or tensors reduced: sum, mean, amax, logsumexp
  norm,           // normalization over a row or channel: layer, batch, group, rms norms
  softmax,        // softmax and log-softmax
  gemm,           // matrix products: mm, addmm, bmm, matmul, linear
  conv,           // convolutions, transposed ones included
  attention,      // fused scaled dot-product attention
  pooling,        // max and average pooling
  data_movement,  // transpose, permute, copy, concat
  other,          // none of the above (topk, sort, an operator lathe has no word for)
};

std::string_view to_string(op_family f);

// The family of an operator name: a task's operator, an aten op's base name, or a family's own
// name (to_string reads back). Unknown: other.
op_family family_of_op(std::string_view op);

// The families of a problem's compute ops, each once, heaviest first: attention, conv, gemm,
// norm, softmax, pooling, reduction, elementwise, data movement, other. The first is the
// problem's family: a Linear followed by a sigmoid and a row sum is a gemm problem whose
// epilogue is elementwise and a reduction. Empty for no ops.
std::vector<op_family> families_of_ops(const std::vector<std::string>& ops);

// Families that serve each other's cards (docs/skills.md "Retrieval"): contractions (gemm, conv,
// attention), row reductions (reduction, norm, softmax); every other family only itself, and
// `other` nothing.
bool related_families(op_family a, op_family b);

}  // namespace lathe
