// lathe's device code in the CUDA worker: see device_ops.h. The element functions are the ones
// the host uses (core/rng_element.h), so inputs generated here are bit-identical to
// core/rng.cpp's; the comparison follows gate/check.cpp element by element.
#include "worker/device_ops.h"

#include <cuda_runtime.h>

#include <cmath>

#include "core/poison.h"
#include "core/rng_element.h"

namespace lathe::worker::device_ops {
namespace {

constexpr int threads = 256;
constexpr uint64_t none = ~uint64_t{0};

std::string check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

unsigned blocks_for(uint64_t n) {
  // Grid-stride loops over a bounded grid: enough blocks to fill an H200 several times over, few
  // enough that the per-block atomics of the reductions cost nothing.
  const uint64_t want = (n + threads - 1) / threads;
  return static_cast<unsigned>(want < 2048 ? (want ? want : 1) : 2048);
}

__host__ __device__ uint32_t bytes_of(dtype t) {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
    case dtype::u64: return 8;
    case dtype::f32:
    case dtype::i32:
    case dtype::u32: return 4;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16:
    case dtype::u16: return 2;
    default: return 1;
  }
}

__device__ uint64_t raw_bits(dtype t, const void* data, uint64_t i) {
  switch (bytes_of(t)) {
    case 8: return static_cast<const uint64_t*>(data)[i];
    case 4: return static_cast<const uint32_t*>(data)[i];
    case 2: return static_cast<const uint16_t*>(data)[i];
    default: return static_cast<const uint8_t*>(data)[i];
  }
}

__device__ bool is_poison(dtype t, uint64_t bits) {
  switch (t) {
    case dtype::f32: return bits == poison_bits::f32;
    case dtype::f64: return bits == poison_bits::f64;
    case dtype::f16: return bits == poison_bits::f16;
    case dtype::bf16: return bits == poison_bits::bf16;
    default: {
      uint64_t want = 0;
      for (uint32_t b = 0; b < bytes_of(t); ++b) want |= uint64_t{poison_bits::byte} << (8 * b);
      return bits == want;
    }
  }
}

__device__ uint64_t mix64(uint64_t x) {  // a 64-bit finalizer (xor-shift-multiply)
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__device__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ uint64_t warp_sum(uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ uint64_t warp_min(uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) {
    uint64_t w = __shfl_down_sync(0xffffffffu, v, o);
    v = w < v ? w : v;
  }
  return v;
}
__device__ double warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}
// Non-negative doubles order like their bit patterns.
__device__ void atomic_max_nonneg(double* p, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(p),
            static_cast<unsigned long long>(__double_as_longlong(v)));
}
__device__ void add(uint64_t* p, uint64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ void min_into(uint64_t* p, uint64_t v) {
  atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// n <= 2 * period and rotate <= period: (i + rotate) mod period by at most two subtractions
// (a 64-bit division per element would cost more than the generator).
__global__ void lathe_fill_kernel(dtype t, rng::element_params p, void* dst, uint64_t n,
                                  uint64_t period, uint64_t rotate) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    uint64_t k = i + rotate;
    while (k >= period) k -= period;
    rng::store_element(t, dst, i, rng::element_value(p, t, k));
  }
}

template <class W>
__global__ void lathe_pattern_kernel(W* dst, W value, uint64_t n) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x)
    dst[i] = value;
}

__global__ void lathe_diff_kernel(const uint32_t* a, const uint32_t* b, uint64_t words,
                                  const uint8_t* ta, const uint8_t* tb, uint64_t tail,
                                  uint64_t* differ) {
  uint64_t mine = 0;
  const uint64_t id = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  for (uint64_t i = id; i < words; i += uint64_t{gridDim.x} * blockDim.x) mine += a[i] != b[i];
  if (id < tail) mine += ta[id] != tb[id];
  mine = warp_sum(mine);
  if ((threadIdx.x & 31) == 0 && mine) add(differ, mine);
}

struct rms_sums {
  double squares;
  uint64_t count;
};

__global__ void lathe_rms_kernel(const double* ref, uint64_t n, rms_sums* out) {
  double sq = 0;
  uint64_t c = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const double w = ref[i];
    if (isfinite(w)) sq += w * w, ++c;
  }
  sq = warp_sum(sq);
  c = warp_sum(c);
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out->squares, sq);
    add(&out->count, c);
  }
}

struct compare_sums {
  uint64_t unwritten, mismatches, nonfinite, first_unwritten, first_bad, checksum;
  double max_abs, max_rel, sum_d, sum_r;
};

__global__ void lathe_compare_kernel(dtype t, const void* out, const double* ref, uint64_t n,
                                     double rtol, double atol, double rel_floor,
                                     compare_sums* s) {
  uint64_t unwritten = 0, bad_count = 0, nonfinite = 0, first_u = none, first_b = none, sum = 0;
  double max_abs = 0, max_rel = 0, sum_d = 0, sum_r = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint64_t bits = raw_bits(t, out, i);
    sum += mix64(bits ^ (i * 0x9e3779b97f4a7c15ull));
    const double w = ref[i];
    if (is_poison(t, bits) && !isnan(w)) {
      ++unwritten;
      if (i < first_u) first_u = i;
    }
    const double o = rng::load_element(t, out, i);
    bool bad = false;
    if (!isfinite(w)) {
      bad = !(isnan(w) ? isnan(o) : o == w);
    } else if (!isfinite(o)) {
      bad = true;
      ++nonfinite;
    } else {
      const double d = fabs(o - w);
      sum_d += d * d;
      sum_r += w * w;
      max_abs = fmax(max_abs, d);
      if (fabs(w) > rel_floor) max_rel = fmax(max_rel, d / fabs(w));
      bad = d > atol + rtol * fabs(w);
    }
    if (bad) {
      ++bad_count;
      if (i < first_b) first_b = i;
    }
  }
  unwritten = warp_sum(unwritten);
  bad_count = warp_sum(bad_count);
  nonfinite = warp_sum(nonfinite);
  sum = warp_sum(sum);
  first_u = warp_min(first_u);
  first_b = warp_min(first_b);
  max_abs = warp_max(max_abs);
  max_rel = warp_max(max_rel);
  sum_d = warp_sum(sum_d);
  sum_r = warp_sum(sum_r);
  if ((threadIdx.x & 31) != 0) return;
  if (unwritten) add(&s->unwritten, unwritten);
  if (bad_count) add(&s->mismatches, bad_count);
  if (nonfinite) add(&s->nonfinite, nonfinite);
  add(&s->checksum, sum);
  if (first_u != none) min_into(&s->first_unwritten, first_u);
  if (first_b != none) min_into(&s->first_bad, first_b);
  atomic_max_nonneg(&s->max_abs, max_abs);
  atomic_max_nonneg(&s->max_rel, max_rel);
  atomicAdd(&s->sum_d, sum_d);
  atomicAdd(&s->sum_r, sum_r);
}

// A small device buffer for reduction results, reused across calls.
template <class T>
std::string scratch(T*& p) {
  static void* buffer = nullptr;
  if (!buffer)
    if (auto e = check(cudaMalloc(&buffer, 256), "cudaMalloc (scratch)"); !e.empty()) return e;
  p = static_cast<T*>(buffer);
  return {};
}

}  // namespace

std::string fill(dtype t, const fill_params& fp, void* dst, uint64_t n, void* stream) {
  if (n == 0) return {};
  rng::element_params p;
  p.kind = fp.kind;
  p.a = fp.a;
  p.b = fp.b;
  p.scale = fp.scale;
  p.shift = fp.shift;
  p.seed = fp.seed;
  p.tensor = fp.tensor;
  const uint64_t period = fp.period ? fp.period : n;
  if (fp.rotate > period || n > 2 * period) return "generating inputs: a window outside its tensor";
  lathe_fill_kernel<<<blocks_for(n), threads, 0, as_stream(stream)>>>(t, p, dst, n, period,
                                                                      fp.rotate);
  return check(cudaGetLastError(), "generating inputs");
}

std::string poison(dtype t, void* dst, uint64_t n, void* stream) {
  if (n == 0) return {};
  auto s = as_stream(stream);
  switch (t) {
    case dtype::f32:
      lathe_pattern_kernel<<<blocks_for(n), threads, 0, s>>>(static_cast<uint32_t*>(dst),
                                                             poison_bits::f32, n);
      break;
    case dtype::f64:
      lathe_pattern_kernel<<<blocks_for(n), threads, 0, s>>>(
          static_cast<unsigned long long*>(dst), static_cast<unsigned long long>(poison_bits::f64), n);
      break;
    case dtype::f16:
    case dtype::bf16:
      lathe_pattern_kernel<<<blocks_for(n), threads, 0, s>>>(
          static_cast<uint16_t*>(dst), t == dtype::f16 ? poison_bits::f16 : poison_bits::bf16, n);
      break;
    default:
      return check(cudaMemsetAsync(dst, poison_bits::byte, n * bytes_of(t), s), "poisoning outputs");
  }
  return check(cudaGetLastError(), "poisoning outputs");
}

std::string count_differences(const void* a, const void* b, uint64_t bytes, uint64_t& differ,
                              void* stream) {
  auto s = as_stream(stream);
  uint64_t* d = nullptr;
  if (auto e = scratch(d); !e.empty()) return e;
  if (auto e = check(cudaMemsetAsync(d, 0, sizeof(uint64_t), s), "cudaMemsetAsync"); !e.empty())
    return e;
  const uint64_t words = bytes / 4, tail = bytes % 4;
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  lathe_diff_kernel<<<blocks_for(words), threads, 0, s>>>(
      static_cast<const uint32_t*>(a), static_cast<const uint32_t*>(b), words, pa + 4 * words,
      pb + 4 * words, tail, d);
  if (auto e = check(cudaGetLastError(), "comparing inputs"); !e.empty()) return e;
  if (auto e = check(cudaMemcpyAsync(&differ, d, sizeof differ, cudaMemcpyDeviceToHost, s),
                     "comparing inputs");
      !e.empty())
    return e;
  return check(cudaStreamSynchronize(s), "comparing inputs");
}

std::string finite_rms(const double* ref, uint64_t n, double& rms, void* stream) {
  auto s = as_stream(stream);
  rms_sums* d = nullptr;
  if (auto e = scratch(d); !e.empty()) return e;
  if (auto e = check(cudaMemsetAsync(d, 0, sizeof(rms_sums), s), "cudaMemsetAsync"); !e.empty())
    return e;
  lathe_rms_kernel<<<blocks_for(n), threads, 0, s>>>(ref, n, d);
  rms_sums h{};
  if (auto e = check(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s), "reference rms");
      !e.empty())
    return e;
  if (auto e = check(cudaStreamSynchronize(s), "reference rms"); !e.empty()) return e;
  rms = h.count ? std::sqrt(h.squares / static_cast<double>(h.count)) : 0.0;
  return {};
}

std::string compare(dtype t, const void* out, const double* ref, uint64_t n, double rtol,
                    double atol, double rms, wire::output_stats& st, void* stream) {
  auto s = as_stream(stream);
  compare_sums* d = nullptr;
  if (auto e = scratch(d); !e.empty()) return e;
  compare_sums init{};
  init.first_unwritten = none;
  init.first_bad = none;
  if (auto e = check(cudaMemcpyAsync(d, &init, sizeof init, cudaMemcpyHostToDevice, s), "compare");
      !e.empty())
    return e;
  // Relative errors are reported above a thousandth of the reference's RMS (gate/check.cpp).
  lathe_compare_kernel<<<blocks_for(n), threads, 0, s>>>(t, out, ref, n, rtol, atol, 1e-3 * rms, d);
  if (auto e = check(cudaGetLastError(), "compare"); !e.empty()) return e;
  compare_sums h{};
  if (auto e = check(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s), "compare");
      !e.empty())
    return e;
  if (auto e = check(cudaStreamSynchronize(s), "compare"); !e.empty()) return e;
  st.unwritten = h.unwritten;
  st.mismatches = h.mismatches;
  st.nonfinite = h.nonfinite;
  st.first_unwritten = h.first_unwritten;
  st.first_bad = h.first_bad;
  st.max_abs = h.max_abs;
  st.max_rel = h.max_rel;
  st.sum_d = h.sum_d;
  st.sum_r = h.sum_r;
  st.checksum = h.checksum;
  if (h.first_bad != none) {
    // The values at the first bad element, for the message a user reads.
    uint64_t bits = 0;
    const uint32_t size = bytes_of(t);
    if (auto e = check(cudaMemcpy(&bits, static_cast<const uint8_t*>(out) + h.first_bad * size,
                                  size, cudaMemcpyDeviceToHost),
                       "compare");
        !e.empty())
      return e;
    st.got = rng::load_element(t, &bits, 0);
    if (auto e = check(cudaMemcpy(&st.want, ref + h.first_bad, sizeof(double), cudaMemcpyDeviceToHost),
                       "compare");
        !e.empty())
      return e;
  }
  return {};
}

std::string clear(void* dst, uint64_t bytes, void* stream) {
  return check(cudaMemsetAsync(dst, 0, bytes, as_stream(stream)), "clearing the L2 flush buffer");
}

}  // namespace lathe::worker::device_ops
