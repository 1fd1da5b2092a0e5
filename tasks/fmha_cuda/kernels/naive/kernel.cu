// Naive FMHA forward: O = softmax(Q Kᵀ · scale [+ causal mask]) V, bf16 Q, K, V, O in [B, H, S, 128].
//
// One thread per query row, everything from global memory, two passes over the keys:
//  1. the row maximum m of the scaled scores s_j = scale · q·k_j;
//  2. l = Σ exp(s_j - m) and o = Σ exp(s_j - m) · v_j, then O = o / l.
// The output row lives in 128 fp32 accumulators; the query row is re-read from global memory for
// every key (L1 hits: keeping it in registers as well, 64 more, spilled). threadIdx.x runs along
// the query rows, so the 32 threads of a warp read the same key row at the same time (one
// broadcast load per 16 bytes, served by L1/L2); every score is computed twice and nothing is
// shared between threads. The lineage starts here; it handles any S.
// Causal: keys j > i are skipped for query i (the loop bound), so row 0 reads key 0 only.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

constexpr int D = 128;       // head dimension: the task's contract
constexpr int THREADS = 128; // query rows per block

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

// A contiguous [B, H, S, D] bf16 tensor.
bool is_bhsd(const DLTensor& t) {
  if (t.ndim != 4 || t.dtype.code != kDLBfloat || t.dtype.bits != 16 || t.dtype.lanes != 1)
    return false;
  if (t.shape[3] != D) return false;
  if (t.strides == nullptr) return true;
  return t.strides[3] == 1 && t.strides[2] == D && t.strides[1] == t.shape[2] * D &&
         t.strides[0] == t.shape[1] * t.shape[2] * D;
}

bool same_shape(const DLTensor& a, const DLTensor& b) {
  for (int i = 0; i < 4; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// q·k over D = 128, both rows in global memory, 16 bytes (8 bf16) per load.
__device__ __forceinline__ float dot_row(const __nv_bfloat16* q, const __nv_bfloat16* k) {
  const uint4* q4 = reinterpret_cast<const uint4*>(q);
  const uint4* k4 = reinterpret_cast<const uint4*>(k);
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < D / 8; ++c) {
    const uint4 qv = q4[c], kv = k4[c];
    const __nv_bfloat162* qa = reinterpret_cast<const __nv_bfloat162*>(&qv);
    const __nv_bfloat162* ka = reinterpret_cast<const __nv_bfloat162*>(&kv);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 qf = __bfloat1622float2(qa[e]), kf = __bfloat1622float2(ka[e]);
      s = fmaf(qf.x, kf.x, s);
      s = fmaf(qf.y, kf.y, s);
    }
  }
  return s;
}

__global__ void __launch_bounds__(THREADS)
fmha_naive(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
           const __nv_bfloat16* __restrict__ V, __nv_bfloat16* __restrict__ O, int S, int causal,
           float scale) {
  const int i = blockIdx.x * THREADS + threadIdx.x;
  if (i >= S) return;
  const size_t head = static_cast<size_t>(blockIdx.y) * S * D;
  const __nv_bfloat16* k = K + head;
  const __nv_bfloat16* v = V + head;
  const __nv_bfloat16* q = Q + head + static_cast<size_t>(i) * D;
  const int n_keys = causal ? i + 1 : S;

  float m = -INFINITY;
  for (int j = 0; j < n_keys; ++j) m = fmaxf(m, dot_row(q, k + static_cast<size_t>(j) * D) * scale);

  float acc[D];
#pragma unroll
  for (int d = 0; d < D; ++d) acc[d] = 0.0f;
  float l = 0.0f;
  for (int j = 0; j < n_keys; ++j) {
    const float p = expf(dot_row(q, k + static_cast<size_t>(j) * D) * scale - m);
    l += p;
    const uint4* v4 = reinterpret_cast<const uint4*>(v + static_cast<size_t>(j) * D);
#pragma unroll
    for (int c = 0; c < D / 8; ++c) {
      const uint4 vv = v4[c];
      const __nv_bfloat162* va = reinterpret_cast<const __nv_bfloat162*>(&vv);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 vf = __bfloat1622float2(va[e]);
        acc[8 * c + 2 * e] = fmaf(p, vf.x, acc[8 * c + 2 * e]);
        acc[8 * c + 2 * e + 1] = fmaf(p, vf.y, acc[8 * c + 2 * e + 1]);
      }
    }
  }
  // l >= 1: the maximum's own term is exp(0).
  const float inv = 1.0f / l;
  __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(O + head + static_cast<size_t>(i) * D);
#pragma unroll
  for (int d = 0; d < D; d += 2) o[d / 2] = __floats2bfloat162_rn(acc[d] * inv, acc[d + 1] * inv);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 2) {
    set_error(args, "fmha_cuda: expects inputs Q, K, V, output O and scalars causal, scale");
    return 1;
  }
  const DLTensor& Qt = args->inputs[0];
  const DLTensor& Kt = args->inputs[1];
  const DLTensor& Vt = args->inputs[2];
  const DLTensor& Ot = args->outputs[0];
  if (!is_bhsd(Qt) || !is_bhsd(Kt) || !is_bhsd(Vt) || !is_bhsd(Ot) || !same_shape(Qt, Kt) ||
      !same_shape(Qt, Vt) || !same_shape(Qt, Ot)) {
    set_error(args, "fmha_cuda: Q, K, V, O must be contiguous bfloat16 [B, H, S, 128] of one shape");
    return 1;
  }
  const double causal = args->scalars[0], scale = args->scalars[1];
  if ((causal != 0.0 && causal != 1.0) || !(scale > 0.0) || !isfinite(scale)) {
    set_error(args, "fmha_cuda: causal must be 0 or 1 and scale finite and positive");
    return 1;
  }
  const int64_t BH = Qt.shape[0] * Qt.shape[1], S = Qt.shape[2];
  if (S > INT32_MAX / 2 || BH > 65535) {
    set_error(args, "fmha_cuda: S beyond 2^30 or B*H beyond 65535 (this kernel's grid)");
    return 1;
  }
  if (BH == 0 || S == 0) return 0;
  const dim3 grid(static_cast<unsigned>((S + THREADS - 1) / THREADS), static_cast<unsigned>(BH));
  fmha_naive<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(Qt), data_of<const __nv_bfloat16>(Kt),
      data_of<const __nv_bfloat16>(Vt), data_of<__nv_bfloat16>(Ot), static_cast<int>(S),
      causal != 0.0 ? 1 : 0, static_cast<float>(scale));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "fmha_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
