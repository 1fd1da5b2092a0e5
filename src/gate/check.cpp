#include <cstdint>
#include "gate/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/poison.h"
#include "core/rng.h"

namespace lathe::gate {
namespace {

constexpr uint32_t f32_poison = poison_bits::f32;
constexpr uint64_t f64_poison = poison_bits::f64;
constexpr uint16_t f16_poison = poison_bits::f16;
constexpr uint16_t bf16_poison = poison_bits::bf16;
constexpr int max_reported = 5;

}  // namespace

std::string index_text(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = std::max<int64_t>(shape[d], 1);
    idx[d] = static_cast<int64_t>(flat % static_cast<uint64_t>(extent));
    flat /= static_cast<uint64_t>(extent);
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::string mismatch_text(uint64_t flat, const std::vector<int64_t>& shape, double got, double want) {
  return index_text(flat, shape) + ": got " + num(got) + ", want " + num(want);
}

namespace {

uint64_t count(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

void poison(dtype t, void* data, uint64_t n) {
  switch (t) {
    case dtype::f32: {
      auto* p = static_cast<uint32_t*>(data);
      std::fill(p, p + n, f32_poison);
      break;
    }
    case dtype::f64: {
      auto* p = static_cast<uint64_t*>(data);
      std::fill(p, p + n, f64_poison);
      break;
    }
    case dtype::f16:
    case dtype::bf16: {
      auto* p = static_cast<uint16_t*>(data);
      std::fill(p, p + n, t == dtype::f16 ? f16_poison : bf16_poison);
      break;
    }
    default: std::memset(data, poison_bits::byte, n * size_of(t)); break;
  }
}

bool is_poison(dtype t, const void* data, uint64_t i) {
  switch (t) {
    case dtype::f32: return static_cast<const uint32_t*>(data)[i] == f32_poison;
    case dtype::f64: return static_cast<const uint64_t*>(data)[i] == f64_poison;
    case dtype::f16: return static_cast<const uint16_t*>(data)[i] == f16_poison;
    case dtype::bf16: return static_cast<const uint16_t*>(data)[i] == bf16_poison;
    default: {
      const auto* p = static_cast<const uint8_t*>(data) + i * size_of(t);
      for (uint32_t b = 0; b < size_of(t); ++b)
        if (p[b] != poison_bits::byte) return false;
      return true;
    }
  }
}

namespace {

// Element-wise over values already in fp64; `unwritten` flags are computed by the caller.
// Read in place (`out` of dtype `t`, n elements): a copy of both sides in fp64 cost 256 MiB of
// fresh pages for a 16M-element output, more than the comparison itself on the 2-core VM.
void compare_values(const effective_tolerance& tol, dtype t, const void* out, const double* ref, uint64_t n,
                    const std::vector<int64_t>& shape, output_check& r) {
  double sum_d = 0, sum_r = 0;
  bool nonfinite = false;
  // The relative error is reported over elements that are not near zero (above a thousandth of
  // the reference's RMS): near zero it says nothing and would read as 100%.
  double rms = 0;
  size_t finite = 0;
  for (uint64_t i = 0; i < n; ++i)
    if (const double w = ref[i]; std::isfinite(w)) rms += w * w, ++finite;
  rms = finite ? std::sqrt(rms / static_cast<double>(finite)) : 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double o = load_as_double(t, out, i), w = ref[i];
    bool bad = false;
    if (!std::isfinite(w)) {
      bad = !(std::isnan(w) ? std::isnan(o) : o == w);
    } else if (!std::isfinite(o)) {
      bad = true;
      nonfinite = true;
    } else {
      double d = std::fabs(o - w);
      sum_d += d * d;
      sum_r += w * w;
      r.rec.max_abs_err = std::max(r.rec.max_abs_err, d);
      if (std::fabs(w) > 1e-3 * rms) r.rec.max_rel_err = std::max(r.rec.max_rel_err, d / std::fabs(w));
      bad = d > tol.atol + tol.rtol * std::fabs(w);
    }
    if (bad) {
      if (r.rec.mismatches < max_reported)
        r.rec.first_mismatches.push_back(
            mismatch_text(i, shape, o, w));
      ++r.rec.mismatches;
    }
  }
  // Normalized error: relative to the reference's norm, so that an all-zero output cannot pass
  // a task whose outputs are all below atol. A zero reference leaves only the atol criterion.
  r.rec.norm_err = sum_r > 0 ? std::sqrt(sum_d / sum_r) : (sum_d > 0 ? INFINITY : 0.0);
  if (sum_r == 0 && r.rec.mismatches == 0) r.rec.norm_err = 0;
  if (nonfinite) r.v = verdict::nan_or_inf;
  else if (r.rec.mismatches > 0 || r.rec.norm_err > tol.nerr) r.v = verdict::mismatch;
}

}  // namespace

output_check check_output(const comparison& c, dtype t, const std::vector<int64_t>& shape,
                          const void* out, const double* ref) {
  output_check r;
  const uint64_t n = count(shape);
  const effective_tolerance tol = tolerance_for(c, t);

  uint64_t unwritten = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (is_poison(t, out, i) && !std::isnan(ref[i])) {
      if (unwritten < max_reported)
        r.rec.first_mismatches.push_back(index_text(i, shape) + ": never written");
      ++unwritten;
    }
  }
  if (unwritten > 0) {
    r.v = verdict::unwritten;
    r.rec.mismatches = unwritten;
    return r;
  }

  if ((c.kind == comparison_kind::sorted_set || c.kind == comparison_kind::topk) &&
      !shape.empty()) {
    // Top-k style outputs: the order within a row is not part of the contract, the multiset of
    // values is. Sort each row of both, then compare element-wise.
    std::vector<double> o(n), w(ref, ref + n);
    for (uint64_t i = 0; i < n; ++i) o[i] = load_as_double(t, out, i);
    const uint64_t row = static_cast<uint64_t>(std::max<int64_t>(shape.back(), 1));
    for (uint64_t s = 0; s + row <= n; s += row) {
      std::sort(o.begin() + s, o.begin() + s + row);
      std::sort(w.begin() + s, w.begin() + s + row);
    }
    compare_values(tol, dtype::f64, o.data(), w.data(), n, shape, r);
  } else {
    compare_values(tol, t, out, ref, n, shape, r);
  }
  r.rec.passed = r.v == verdict::pass;
  return r;
}

output_check check_topk_indices(dtype index_type, const std::vector<int64_t>& shape,
                                const void* indices, dtype value_type, const void* values,
                                dtype input_type, const std::vector<int64_t>& input_shape,
                                const void* input) {
  output_check r;
  const uint64_t n = count(shape);
  auto note = [&](uint64_t flat, const std::string& what) {
    if (r.rec.mismatches < max_reported)
      r.rec.first_mismatches.push_back(index_text(flat, shape) + ": " + what);
    ++r.rec.mismatches;
  };
  for (uint64_t i = 0; i < n; ++i)
    if (is_poison(index_type, indices, i)) note(i, "never written");
  if (r.rec.mismatches > 0) {
    r.v = verdict::unwritten;
    return r;
  }
  if (shape.empty() || input_shape.empty()) {
    note(0, "top-k indices need a row axis");
    r.v = verdict::mismatch;
    return r;
  }
  const uint64_t k = static_cast<uint64_t>(std::max<int64_t>(shape.back(), 0));
  const int64_t cols = input_shape.back();
  const uint64_t rows = k ? n / k : 0;
  std::vector<uint64_t> seen;  // row-local generation marks: position c seen in row r+1
  seen.assign(static_cast<size_t>(std::max<int64_t>(cols, 0)), 0);
  for (uint64_t row = 0; row < rows; ++row) {
    for (uint64_t j = 0; j < k; ++j) {
      const uint64_t flat = row * k + j;
      // Integer dtypes load exactly into a double up to 2^53; anything outside [0, C) is wrong.
      const double idx = load_as_double(index_type, indices, flat);
      if (!(idx >= 0 && idx < static_cast<double>(cols))) {
        note(flat, "index " + num(idx) + " outside [0, " + std::to_string(cols) + ")");
        continue;
      }
      const uint64_t c = static_cast<uint64_t>(idx);
      if (seen[c] == row + 1) {
        note(flat, "index " + std::to_string(c) + " appears twice in its row");
        continue;
      }
      seen[c] = row + 1;
      const double at = load_as_double(input_type, input, row * static_cast<uint64_t>(cols) + c);
      const double v = load_as_double(value_type, values, flat);
      if (!(at == v) && !(std::isnan(at) && std::isnan(v)))
        note(flat, "index " + std::to_string(c) + " holds " + num(at) + ", the value beside it is " +
                       num(v));
    }
  }
  r.v = r.rec.mismatches ? verdict::mismatch : verdict::pass;
  r.rec.passed = r.v == verdict::pass;
  return r;
}

}  // namespace lathe::gate
