// Correctness of one output against the fp64 reference (PROTOCOL.md "Correctness").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "core/task.h"

namespace lathe::gate {

// The task's overrides, else the dtype's defaults (core/task.h, docs/tasks.md).
using lathe::effective_tolerance;
using lathe::tolerance_for;

// Outputs are poisoned before every call: floating outputs with a NaN whose payload no
// arithmetic produces, integer outputs with 0xA5 bytes. An element still holding the poison
// after the call was not written.
void poison(dtype t, void* data, uint64_t elements);
bool is_poison(dtype t, const void* data, uint64_t i);

// "[12,3]" for flat index 12*C+3 of a row-major shape; with values, "[12,3]: got 1.5, want 2".
std::string index_text(uint64_t flat, const std::vector<int64_t>& shape);
std::string mismatch_text(uint64_t flat, const std::vector<int64_t>& shape, double got, double want);

enum class verdict : uint8_t { pass, unwritten, nan_or_inf, mismatch };

struct output_check {
  verdict v = verdict::pass;
  check_record rec;  // errors and the first few mismatches, with indices and values
};

// Compares `out` (dtype t, row-major `shape`) against `ref` (fp64, same shape). Order of
// verdicts: unwritten elements first (poison left), then NaN/Inf where the reference has none,
// then tolerance and the normalized error (which keeps zeros from passing for tiny outputs).
output_check check_output(const comparison& c, dtype t, const std::vector<int64_t>& shape,
                          const void* out, const double* ref);

// comparison_kind::topk, output 1: the indices of the selected values. Index equality with the
// reference is unsound (with ties at the k-th value any tied position is right, and float inputs
// drawn at random do tie), so each row is checked against the input instead: every index lies in
// [0, C) of input 0's row, no index appears twice in a row, and the input element it points at
// equals (as a number: -0 == +0) the value at the same position of output 0. With output 0's
// values checked as a sorted multiset against the reference, this makes (values, indices) a
// valid top-k for every tie-breaking. `shape` is [..., K] (both outputs), `input_shape` [..., C]
// with the same leading extents. Unwritten indices (poison left) are reported first.
output_check check_topk_indices(dtype index_type, const std::vector<int64_t>& shape,
                                const void* indices, dtype value_type, const void* values,
                                dtype input_type, const std::vector<int64_t>& input_shape,
                                const void* input);

}  // namespace lathe::gate
