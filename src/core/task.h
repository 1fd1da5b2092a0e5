// A task: one operator instance (DESIGN.md vocabulary). Plain value types; parsing lives in
// task_toml.cpp, JSON in task_json.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace lathe {

enum class platform : uint8_t { cpu, cuda };
enum class task_role : uint8_t { source, heldout };

// The layout of a PyTorch problem file (docs/problems.md), as its worker reports it: a
// KernelBench module (Model, get_inputs, get_init_inputs), a KernelLineage module, or a
// KernelLineage JSON definition. Stored and printed as to_string's word.
enum class problem_format : uint8_t { kernelbench, klineage, klineage_definition };

// How input values are drawn. `uniform` in [low, high); `normal` with mean, stddev; `integers` in
// [low, high] as whole numbers; `constant` (value). Every draw comes from the counter-based RNG,
// keyed by (seed, tensor index, element index), so host and device agree bit for bit.
enum class distribution_kind : uint8_t { uniform, normal, integers, constant };

struct distribution {
  distribution_kind kind = distribution_kind::uniform;
  double low = -1.0, high = 1.0;     // uniform, integers
  double mean = 0.0, stddev = 1.0;   // normal
  double value = 0.0;                // constant
};

// A tensor's shape is a list of dimensions, each a literal or a symbol bound per shape set.
struct dim {
  std::string symbol;  // empty when literal
  int64_t value = 0;   // the literal
};

struct tensor_spec {
  std::string name;
  dtype type = dtype::f32;
  std::vector<dim> shape;
  distribution dist;  // inputs only
};

struct scalar_spec {
  std::string name;
  double value = 0.0;
};

struct shape_set {
  std::string name;
  std::map<std::string, int64_t> symbols;  // M=…, N=…
  bool time = false;                       // the set timed (exactly one; default: the largest)
};

// Perturbations the operator's domain allows: inputs may be scaled by a factor in `scale` and
// shifted by an offset in `shift` (both applied to every floating input). Empty = none allowed.
struct perturbations {
  std::vector<double> scale;
  std::vector<double> shift;
};

// Element-wise comparison: |out - ref| <= atol + rtol * |ref| for every element, AND the
// normalized error ||out - ref||_2 / ||ref||_2 <= nerr (so that zeros cannot pass for tiny
// outputs). Defaults come from the output dtype (PROTOCOL.md) unless the task overrides them.
struct tolerance {
  std::optional<double> rtol, atol, nerr;
};

enum class comparison_kind : uint8_t {
  elementwise,
  sorted_set,  // top-k style: each row (last axis) compared as the sorted multiset of values
  // Top-k with indices: output 0 holds each row's selected values (compared as sorted_set),
  // output 1 (an integer tensor of the same shape) their positions along the last axis of input
  // 0. Indices are checked against the input, never against the reference's: with ties at the
  // k-th value any of the tied positions is right. See gate/check.h check_topk_indices.
  topk,
};

struct comparison {
  comparison_kind kind = comparison_kind::elementwise;
  tolerance tol;
};

// The tolerances an output is checked with: the task's overrides, else its dtype's defaults
// (PROTOCOL.md "Correctness"; integers compare exactly).
struct effective_tolerance {
  double rtol = 0, atol = 0, nerr = 0;
};
effective_tolerance tolerance_for(const comparison& c, dtype t);

// Cost model: arithmetic expressions over the shape symbols ("2*M*N*K").
struct cost_model {
  std::string flops;
  std::string bytes;  // minimum bytes moved (inputs read once + outputs written once)
};

struct task {
  std::string name;
  std::string op;  // operator family
  platform plat = platform::cpu;
  task_role role = task_role::source;
  std::string description;
  std::string baseline = "naive";  // kernel name under kernels/
  std::filesystem::path dir;       // where task.toml lives
  std::filesystem::path reference; // reference source, relative to dir
  // CUDA tasks: an fp64 reference on the device (same ABI, device tensors, float64 outputs on
  // the device), for problems whose CPU reference is too slow to run every trial. Optional.
  std::filesystem::path gpu_reference;
  std::vector<tensor_spec> inputs, outputs;
  std::vector<scalar_spec> scalars;
  std::vector<shape_set> shapes;
  perturbations perturb;
  comparison compare;
  cost_model cost;
  std::vector<std::string> allow_libraries;  // vendor libraries candidates may call
  bool allow_fast_math = false;
  // A PyTorch problem file (docs/problems.md): when set, its Python worker draws the inputs and
  // computes the reference instead of `reference` and the distributions above.
  std::filesystem::path problem;
  std::optional<lathe::problem_format> problem_format;  // set with `problem`
  std::string problem_runtime;  // "torch 1.13.1 (cpu, python 3.11.2)"
  // A KernelBench problem's Model as a candidate's ModelNew must mirror it (JSON: init, forward,
  // state, outputs; python/lathe_problem.py model_spec). Empty for other tasks.
  std::string problem_model;
};

// Resolved sizes of one tensor in one shape set; errors on unknown symbols and on overflow.
struct resolved_tensor {
  std::vector<int64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

const char* to_string(platform p);
const char* to_string(task_role r);
const char* to_string(problem_format f);  // kernelbench, klineage, klineage-definition
const char* to_string(distribution_kind k);
const char* to_string(comparison_kind k);

// Why task `t` cannot use its comparison kind (empty when it can): topk needs two outputs of one
// shape, values (floating) then indices (integer), and an input 0 with the same leading extents.
std::string comparison_misfit(const task& t);

}  // namespace lathe
