#include "core/op_family.h"

#include <algorithm>

namespace lathe {
namespace {

struct entry {
  std::string_view op;
  op_family family;
};

// Task operators (tasks/*/task.toml) and aten base names (what python/lathe_ops.py records of a
// Model's forward on torch 1.13: `addmm` for nn.Linear, `mkldnn_convolution` for a CPU Conv2d,
// `native_layer_norm`, `_softmax`…). Names are matched whole; the prefixes below catch the rest
// of the convolution and pooling kernels.
constexpr entry names[] = {
    // contractions
    {"gemm", op_family::gemm}, {"matmul", op_family::gemm}, {"mm", op_family::gemm},
    {"addmm", op_family::gemm}, {"bmm", op_family::gemm}, {"baddbmm", op_family::gemm},
    {"addbmm", op_family::gemm}, {"linear", op_family::gemm}, {"mv", op_family::gemm},
    {"addmv", op_family::gemm}, {"dot", op_family::gemm}, {"einsum", op_family::gemm},
    {"_addmm_activation", op_family::gemm}, {"conv2d", op_family::conv}, {"conv", op_family::conv},
    {"attention", op_family::attention}, {"scaled_dot_product_attention", op_family::attention},
    // row reductions
    {"reduction", op_family::reduction}, {"sum", op_family::reduction}, {"mean", op_family::reduction},
    {"amax", op_family::reduction}, {"amin", op_family::reduction}, {"max", op_family::reduction},
    {"min", op_family::reduction}, {"prod", op_family::reduction}, {"argmax", op_family::reduction},
    {"argmin", op_family::reduction}, {"var", op_family::reduction}, {"std", op_family::reduction},
    {"var_mean", op_family::reduction}, {"std_mean", op_family::reduction},
    {"linalg_vector_norm", op_family::reduction}, {"logsumexp", op_family::reduction},
    {"cumsum", op_family::reduction}, {"cumprod", op_family::reduction},
    // aten's `norm` is a vector norm, a reduction; named `norm` here so that every family's own
    // name reads back as that family (a card induced on a problem carries its family as operator).
    {"norm", op_family::norm}, {"layernorm", op_family::norm}, {"rmsnorm", op_family::norm}, {"layer_norm", op_family::norm},
    {"native_layer_norm", op_family::norm}, {"batch_norm", op_family::norm},
    {"native_batch_norm", op_family::norm}, {"_native_batch_norm_legit", op_family::norm},
    {"_batch_norm_impl_index", op_family::norm}, {"group_norm", op_family::norm},
    {"native_group_norm", op_family::norm}, {"instance_norm", op_family::norm},
    {"rms_norm", op_family::norm}, {"softmax", op_family::softmax}, {"_softmax", op_family::softmax},
    {"log_softmax", op_family::softmax}, {"_log_softmax", op_family::softmax},
    // element-wise
    {"elementwise", op_family::elementwise}, {"relu", op_family::elementwise},
    {"silu", op_family::elementwise}, {"gelu", op_family::elementwise}, {"add", op_family::elementwise},
    {"sub", op_family::elementwise}, {"rsub", op_family::elementwise}, {"mul", op_family::elementwise},
    {"div", op_family::elementwise}, {"scale", op_family::elementwise}, {"sigmoid", op_family::elementwise},
    {"tanh", op_family::elementwise}, {"neg", op_family::elementwise}, {"exp", op_family::elementwise},
    {"log", op_family::elementwise}, {"sqrt", op_family::elementwise}, {"rsqrt", op_family::elementwise},
    {"pow", op_family::elementwise}, {"abs", op_family::elementwise}, {"clamp", op_family::elementwise},
    {"clamp_min", op_family::elementwise}, {"clamp_max", op_family::elementwise},
    {"hardtanh", op_family::elementwise}, {"leaky_relu", op_family::elementwise},
    {"elu", op_family::elementwise}, {"selu", op_family::elementwise}, {"celu", op_family::elementwise},
    {"softplus", op_family::elementwise}, {"softsign", op_family::elementwise},
    {"mish", op_family::elementwise}, {"hardswish", op_family::elementwise},
    {"hardsigmoid", op_family::elementwise}, {"swish", op_family::elementwise},
    {"where", op_family::elementwise}, {"maximum", op_family::elementwise},
    {"minimum", op_family::elementwise}, {"erf", op_family::elementwise}, {"sign", op_family::elementwise},
    {"reciprocal", op_family::elementwise}, {"sin", op_family::elementwise}, {"cos", op_family::elementwise},
    {"threshold", op_family::elementwise}, {"addcmul", op_family::elementwise},
    {"addcdiv", op_family::elementwise}, {"lerp", op_family::elementwise}, {"relu6", op_family::elementwise},
    {"hardshrink", op_family::elementwise}, {"softshrink", op_family::elementwise},
    {"tanhshrink", op_family::elementwise}, {"logsigmoid", op_family::elementwise},
    {"log_sigmoid_forward", op_family::elementwise}, {"exp2", op_family::elementwise},
    {"expm1", op_family::elementwise}, {"log1p", op_family::elementwise}, {"square", op_family::elementwise},
    // data movement
    {"transpose", op_family::data_movement}, {"copy", op_family::data_movement},
    {"permute", op_family::data_movement}, {"concat", op_family::data_movement},
    {"data_movement", op_family::data_movement}, {"pooling", op_family::pooling}, {"other", op_family::other},
};

// Heaviest first: a problem's family is the first of its ops' families in this order.
constexpr op_family weight_order[] = {op_family::attention, op_family::conv,        op_family::gemm,
                                      op_family::norm,      op_family::softmax,     op_family::pooling,
                                      op_family::reduction, op_family::elementwise, op_family::data_movement,
                                      op_family::other};

int group_of(op_family f) {
  switch (f) {
    case op_family::gemm:
    case op_family::conv:
    case op_family::attention:
      return 1;
    case op_family::reduction:
    case op_family::norm:
    case op_family::softmax:
      return 2;
    case op_family::elementwise: return 3;
    case op_family::pooling: return 4;
    case op_family::data_movement: return 5;
    case op_family::other: return 0;
  }
  return 0;
}

}  // namespace

std::string_view to_string(op_family f) {
  switch (f) {
    case op_family::elementwise: return "elementwise";
    case op_family::reduction: return "reduction";
    case op_family::norm: return "norm";
    case op_family::softmax: return "softmax";
    case op_family::gemm: return "gemm";
    case op_family::conv: return "conv";
    case op_family::attention: return "attention";
    case op_family::pooling: return "pooling";
    case op_family::data_movement: return "data_movement";
    case op_family::other: return "other";
  }
  return "other";
}

op_family family_of_op(std::string_view op) {
  for (const auto& e : names)
    if (e.op == op) return e.family;
  // aten's convolution kernels (convolution, _convolution, mkldnn_convolution,
  // slow_conv_transpose2d, conv_depthwise2d, cudnn_convolution…) and pooling ones (max_pool2d,
  // max_pool2d_with_indices, avg_pool3d, adaptive_avg_pool2d…).
  if (op.find("conv") != std::string_view::npos) return op_family::conv;
  if (op.find("pool") != std::string_view::npos) return op_family::pooling;
  return op_family::other;
}

std::vector<op_family> families_of_ops(const std::vector<std::string>& ops) {
  std::vector<op_family> seen;
  for (const auto& op : ops) seen.push_back(family_of_op(op));
  std::vector<op_family> out;
  for (op_family f : weight_order)
    if (std::find(seen.begin(), seen.end(), f) != seen.end()) out.push_back(f);
  return out;
}

bool related_families(op_family a, op_family b) {
  const int g = group_of(a);
  return g != 0 && g == group_of(b);
}

}  // namespace lathe
