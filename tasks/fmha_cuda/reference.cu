// Trusted fp64 GPU oracle for fmha_cuda (task.toml: gpu_reference): the function of
// reference.cpp, O = softmax(Q Kᵀ · scale [+ causal mask]) V on [B, H, S, 128] bf16 tensors, with
// every product, sum and exponential in double, computed on the device. Tensors are device
// pointers, O is a float64 device buffer, the work goes on a->stream; nothing is allocated or
// synchronized here. reference.cpp needs minutes for the timed set (550 GFLOP); this needs well
// under a second.
//
// Why the order of evaluation is sound. bf16 -> float -> double is exact, and so is the product
// of two bf16 values (16 significant bits). A block owns 16 query rows and walks the keys in tiles
// of 32 with a running maximum m and running sum l in double (the online form of reference.cpp's
// two passes): per tile, m_new = max(m, tile max), alpha = exp(m - m_new), l = l·alpha + Σ exp(s_j
// - m_new), O = O·alpha + Σ exp(s_j - m_new) v_j. Against the direct formula this adds one
// rounding of alpha and one multiply per tile and per element (at most 128 tiles at S = 4096), so
// the relative error of O stays within ~(128 + 3·128 + 4096)·2^-53 ≈ 5e-13 of Σ p_j |v_j| / l,
// under 1e-11 absolute for the task's largest inputs (|v| <= 4 x 4.5): nine orders of magnitude
// below the task's atol (3e-2) and a kernel's error (~1e-3). reference.cpp, which sums in another
// order, obeys the same bound, so the two references agree far below the tolerance.
//
// Speed: per 32-key tile, 256 threads compute the 16 x 32 scores (each 2 dot products of 128
// DFMA; Qs is read as a broadcast, Ks with a 129-float pitch so that 32 keys fall in 32 banks),
// 16 threads update m and l, and every thread updates 8 output elements (one column of V, 8
// rows). About 2·S²·128·B·H DFMA: 275 G for the timed set, tens of milliseconds on an H200.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

constexpr int D = 128;
constexpr int BQ = 16;        // query rows per block
constexpr int BK = 32;        // keys per tile
constexpr int THREADS = 256;
constexpr int RPT = BQ * D / THREADS;  // output elements per thread: 8

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

// A contiguous [B, H, S, 128] device tensor of the given type.
bool is_bhsd(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 4 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA || t.shape[3] != D) return false;
  if (t.strides == nullptr) return true;
  return t.strides[3] == 1 && t.strides[2] == D && t.strides[1] == t.shape[2] * D &&
         t.strides[0] == t.shape[1] * t.shape[2] * D;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

__device__ __forceinline__ float bf16_to_float(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);  // exact
}

__global__ void __launch_bounds__(THREADS)
fmha_f64(const uint16_t* __restrict__ Q, const uint16_t* __restrict__ K,
         const uint16_t* __restrict__ V, double* __restrict__ O, int S, int causal, double scale) {
  __shared__ float Qs[BQ][D];
  __shared__ float Ks[BK][D + 1];
  __shared__ float Vs[BK][D];
  __shared__ double Ps[BQ][BK + 1];
  __shared__ double m_s[BQ], l_s[BQ], alpha_s[BQ];
  const int tid = threadIdx.x;
  const int q0 = blockIdx.x * BQ;
  const size_t head = static_cast<size_t>(blockIdx.y) * S * D;

  for (int e = tid; e < BQ * D; e += THREADS) {
    const int r = e / D, d = e % D;
    Qs[r][d] = q0 + r < S ? bf16_to_float(Q[head + static_cast<size_t>(q0 + r) * D + d]) : 0.0f;
  }
  if (tid < BQ) {
    m_s[tid] = -INFINITY;
    l_s[tid] = 0.0;
  }
  double o[RPT];
#pragma unroll
  for (int i = 0; i < RPT; ++i) o[i] = 0.0;
  const int od = tid % D, orow = tid / D;  // this thread's output column and first row
  const int sc = tid % BK, sr = tid / BK;  // this thread's score column and first row (and +8)
  const int k_end = causal ? min(S, q0 + BQ) : S;

  for (int k0 = 0; k0 < k_end; k0 += BK) {
    __syncthreads();  // the previous tile is consumed
    for (int e = tid; e < BK * D; e += THREADS) {
      const int r = e / D, d = e % D;
      const bool in = k0 + r < S;
      const size_t at = head + static_cast<size_t>(k0 + r) * D + d;
      Ks[r][d] = in ? bf16_to_float(K[at]) : 0.0f;
      Vs[r][d] = in ? bf16_to_float(V[at]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = sr + 8 * h, key = k0 + sc;
      double s = 0.0;
      for (int d = 0; d < D; ++d)
        s = fma(static_cast<double>(Qs[r][d]), static_cast<double>(Ks[sc][d]), s);  // exact product
      Ps[r][sc] = key >= S || (causal && key > q0 + r) ? -INFINITY : s * scale;
    }
    __syncthreads();
    if (tid < BQ) {
      double mt = -INFINITY;
      for (int c = 0; c < BK; ++c) mt = fmax(mt, Ps[tid][c]);
      const double m_new = fmax(m_s[tid], mt);
      const double m_use = m_new == -INFINITY ? 0.0 : m_new;  // exp(-inf - 0) = 0, not NaN
      const double alpha = exp(m_s[tid] - m_use);
      double sum = 0.0;
      for (int c = 0; c < BK; ++c) {
        const double p = exp(Ps[tid][c] - m_use);
        Ps[tid][c] = p;
        sum += p;
      }
      l_s[tid] = l_s[tid] * alpha + sum;
      m_s[tid] = m_new;
      alpha_s[tid] = alpha;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < RPT; ++i) {
      const int r = orow + 2 * i;
      double acc = o[i] * alpha_s[r];
      for (int c = 0; c < BK; ++c) acc = fma(Ps[r][c], static_cast<double>(Vs[c][od]), acc);
      o[i] = acc;
    }
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < RPT; ++i) {
    const int r = orow + 2 * i;
    if (q0 + r < S) O[head + static_cast<size_t>(q0 + r) * D + od] = o[i] / l_s[r];
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 2) {
    set_error(args, "fmha_cuda GPU reference: expects inputs Q, K, V, output O, scalars causal, scale");
    return 1;
  }
  const DLTensor& Qt = args->inputs[0];
  const DLTensor& Kt = args->inputs[1];
  const DLTensor& Vt = args->inputs[2];
  const DLTensor& Ot = args->outputs[0];
  if (!is_bhsd(Qt, kDLBfloat, 16) || !is_bhsd(Kt, kDLBfloat, 16) || !is_bhsd(Vt, kDLBfloat, 16) ||
      !is_bhsd(Ot, kDLFloat, 64)) {
    set_error(args,
              "fmha_cuda GPU reference: Q, K, V must be contiguous bfloat16 [B, H, S, 128] and O "
              "float64, all on the device (kDLCUDA)");
    return 1;
  }
  for (int i = 0; i < 3; ++i)
    if (Kt.shape[i] != Qt.shape[i] || Vt.shape[i] != Qt.shape[i] || Ot.shape[i] != Qt.shape[i]) {
      set_error(args, "fmha_cuda GPU reference: Q, K, V and O must have one shape");
      return 1;
    }
  const int64_t BH = Qt.shape[0] * Qt.shape[1], S = Qt.shape[2];
  if (S > INT32_MAX / 2 || BH > 65535) {
    set_error(args, "fmha_cuda GPU reference: S beyond 2^30 or B*H beyond 65535 (the grid)");
    return 1;
  }
  if (BH == 0 || S == 0) return 0;
  const dim3 grid(static_cast<unsigned>((S + BQ - 1) / BQ), static_cast<unsigned>(BH));
  fmha_f64<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const uint16_t>(Qt), data_of<const uint16_t>(Kt), data_of<const uint16_t>(Vt),
      data_of<double>(Ot), static_cast<int>(S), args->scalars[0] != 0.0 ? 1 : 0, args->scalars[1]);
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "fmha_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
