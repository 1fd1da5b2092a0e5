// lathe's own device code in the CUDA worker (device_ops.cu, compiled by nvcc): input generation
// with the shared counter-based RNG, output poisoning, and the comparison of a kernel's outputs
// with fp64 reference outputs — the device half of gate/check.h, for problems too large to copy
// to the host every trial. Streams are cudaStream_t passed as void*, so that callers need no
// CUDA headers. Every function returns an empty string or the CUDA error.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "gate/cpu/wire.h"

namespace lathe::worker::device_ops {

struct fill_params {
  uint8_t kind = 0;  // rng::element_params
  double a = 0, b = 0, scale = 1, shift = 0;
  uint64_t seed = 0;
  uint32_t tensor = 0;
  // Element j of dst is element (j + rotate) mod period of the draw (rotate <= period): a
  // buffer longer than the tensor repeats its first elements (a window's rotation; wire.h).
  uint64_t period = 0, rotate = 0;
};

std::string fill(dtype t, const fill_params& p, void* dst, uint64_t n, void* stream);
std::string poison(dtype t, void* dst, uint64_t n, void* stream);
// Bytes that differ between a and b (both device pointers).
std::string count_differences(const void* a, const void* b, uint64_t bytes, uint64_t& differ,
                              void* stream);
// Root mean square of the finite values of ref (the threshold of the relative error).
std::string finite_rms(const double* ref, uint64_t n, double& rms, void* stream);
// gate/check.h's element-wise comparison of out (type t) with ref: unwritten (poison left where
// the reference is not NaN), non-finite where the reference is finite, tolerance mismatches,
// error maxima and sums, and a checksum of out's bytes.
std::string compare(dtype t, const void* out, const double* ref, uint64_t n, double rtol,
                    double atol, double rms, wire::output_stats& s, void* stream);
// Fills `bytes` with zeros on `stream` (do_bench's L2 flush).
std::string clear(void* dst, uint64_t bytes, void* stream);

}  // namespace lathe::worker::device_ops
