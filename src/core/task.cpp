#include "core/task.h"

namespace lathe {

const char* to_string(platform p) {
  switch (p) {
    case platform::cpu:
      return "cpu";
    case platform::cuda:
      return "cuda";
  }
  return "?";
}

const char* to_string(problem_format f) {
  switch (f) {
    case problem_format::kernelbench:
      return "kernelbench";
    case problem_format::klineage:
      return "klineage";
    case problem_format::klineage_definition:
      return "klineage-definition";
  }
  return "?";
}

const char* to_string(task_role r) {
  switch (r) {
    case task_role::source:
      return "source";
    case task_role::heldout:
      return "heldout";
  }
  return "?";
}

const char* to_string(distribution_kind k) {
  switch (k) {
    case distribution_kind::uniform:
      return "uniform";
    case distribution_kind::normal:
      return "normal";
    case distribution_kind::integers:
      return "integers";
    case distribution_kind::constant:
      return "constant";
  }
  return "?";
}

const char* to_string(comparison_kind k) {
  switch (k) {
    case comparison_kind::elementwise:
      return "elementwise";
    case comparison_kind::sorted_set:
      return "sorted_set";
    case comparison_kind::topk:
      return "topk";
  }
  return "?";
}

std::string comparison_misfit(const task& t) {
  if (t.compare.kind != comparison_kind::topk) return "";
  auto same = [](const dim& a, const dim& b) {
    return a.symbol == b.symbol && (!a.symbol.empty() || a.value == b.value);
  };
  if (t.outputs.size() != 2 || t.inputs.empty())
    return "topk needs an input and exactly two outputs (values, then indices)";
  const tensor_spec &v = t.outputs[0], &ix = t.outputs[1], &in = t.inputs[0];
  const std::string pair = "outputs '" + v.name + "' and '" + ix.name + "'";
  if (!is_floating(v.type) || is_floating(ix.type) || ix.type == dtype::boolean)
    return "topk needs floating values (output '" + v.name + "') and integer indices (output '" +
           ix.name + "')";
  if (v.shape.empty() || v.shape.size() != ix.shape.size() || v.shape.size() != in.shape.size())
    return "topk needs " + pair + " of the rank of input '" + in.name + "' (at least 1)";
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (!same(v.shape[d], ix.shape[d])) return "topk needs " + pair + " of one shape";
    if (d + 1 < v.shape.size() && !same(v.shape[d], in.shape[d]))
      return "topk needs the leading extents of " + pair + " to be those of input '" + in.name + "'";
  }
  return "";
}

effective_tolerance tolerance_for(const comparison& c, dtype t) {
  effective_tolerance e;
  switch (t) {
    case dtype::f64: e = {1e-9, 1e-12, 1e-9}; break;
    case dtype::f32: e = {1e-4, 1e-5, 1e-4}; break;
    case dtype::f16:
    case dtype::bf16: e = {1e-2, 1e-3, 1e-2}; break;
    default: e = {0, 0, 0}; break;
  }
  if (c.tol.rtol) e.rtol = *c.tol.rtol;
  if (c.tol.atol) e.atol = *c.tol.atol;
  if (c.tol.nerr) e.nerr = *c.tol.nerr;
  return e;
}

}  // namespace lathe
