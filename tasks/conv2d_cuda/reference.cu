// Trusted fp64 GPU oracle for conv2d_cuda (task.toml: gpu_reference): the function of
// reference.cpp, Y[n,p,q,k] = sum_{r,s,c} X[n,p+r-1,q+s-1,c] * Wt[k,r,s,c] with X and Wt bf16
// widened exactly to double and every product and sum in double, computed on the device.
// Tensors are device pointers, Y is a float64 device buffer, the work goes on a->stream; nothing
// is allocated or synchronized here. The timed set (59 G multiply-adds) would take the CPU
// reference seconds per trial; this kernel takes milliseconds.
//
// Why the accumulation order is sound. A bf16 value has an 8-bit significand, so the product of
// two has at most 16 significant bits and is exact in double: the only rounding is in the sum.
// Each output is owned by one thread, which adds its 9C exact products in the order j = (r*3 +
// s)*C + c = 0, 1, ..., 9C-1 (taps in the padding and the zero padding past 9C add exact zeros).
// A sum of J terms in double errs by at most (J-1)·2^-53·sum|x·w|: with J = 9·256 = 2304 and
// both inputs scaled by 4 (|x|, |w| <= 4, the task's largest perturbation), sum|xw| <= 36864,
// so under 1e-8 absolute, against the task's atol 5e-2 and the bf16 rounding of Y itself (a
// relative 2^-9). reference.cpp's order (the same j order, blocked differently) obeys the same
// bound, so the two references agree far below the tolerance.
//
// Speed: the implicit GEMM Y[m, k] = sum_j A[m, j] W[k, j] (m = (n, p, q), A gathered from X)
// in 64 x 64 block tiles over 16-deep j tiles in shared memory (widened to double once per tile),
// 256 threads each holding a 4 x 4 block of outputs in registers.
#include <cuda_runtime.h>
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_4d(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 4 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA) return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = 3; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int BM = 64, BN = 64, BK = 16;  // block tile: pixels x channels, depth of a j tile
constexpr int TX = 16, TY = 16;           // 256 threads; thread (tx, ty) owns pixels ty + 16 i
constexpr int TM = BM / TY, TN = BN / TX; // and channels tx + 16 t, i < TM = 4, t < TN = 4

__device__ __forceinline__ double bf16_to_double(uint16_t h) {
  return static_cast<double>(__uint_as_float(static_cast<uint32_t>(h) << 16));  // both exact
}

__global__ void __launch_bounds__(TX * TY)
conv_f64(const uint16_t* __restrict__ X, const uint16_t* __restrict__ Wt, double* __restrict__ Y,
         int M, int H, int W, int C, int K) {
  // As is j-major with one double of padding per row: the tile is stored column by column of A
  // (16 consecutive threads write 16 j of one pixel), and the padding spreads those writes.
  __shared__ double As[BK][BM + 1];
  __shared__ double Bs[BK][BN + 1];
  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int J = 9 * C;

  double acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int t = 0; t < TN; ++t) acc[i][t] = 0.0;

  for (int j0 = 0; j0 < J; j0 += BK) {
    // A tile (BM pixels x BK j), gathered: 16 consecutive threads read 16 consecutive j.
    for (int e = tid; e < BM * BK; e += TX * TY) {
      const int r = e / BK, jj = e % BK;
      const int m = m0 + r, j = j0 + jj;
      double v = 0.0;
      if (m < M && j < J) {
        const int q = m % W, p = (m / W) % H, n = m / (W * H);
        const int tap = j / C, c = j % C;
        const int h = p + tap / 3 - 1, x = q + tap % 3 - 1;
        if (h >= 0 && h < H && x >= 0 && x < W)
          v = bf16_to_double(X[((static_cast<size_t>(n) * H + h) * W + x) * C + c]);
      }
      As[jj][r] = v;
    }
    // B tile (BK j x BN channels): filter rows, 16 consecutive threads read 16 consecutive j.
    for (int e = tid; e < BK * BN; e += TX * TY) {
      const int col = e / BK, jj = e % BK;
      const int k = k0 + col, j = j0 + jj;
      Bs[jj][col] = k < K && j < J ? bf16_to_double(Wt[static_cast<size_t>(k) * J + j]) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int jj = 0; jj < BK; ++jj) {
      double a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[jj][ty + TY * i];
#pragma unroll
      for (int t = 0; t < TN; ++t) b[t] = Bs[jj][tx + TX * t];
      // The product is exact, so fma(a, b, acc) rounds exactly as acc + a*b would.
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int t = 0; t < TN; ++t) acc[i][t] = fma(a[i], b[t], acc[i][t]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty + TY * i;
    if (m >= M) continue;
#pragma unroll
    for (int t = 0; t < TN; ++t) {
      const int k = k0 + tx + TX * t;
      if (k < K) Y[static_cast<size_t>(m) * K + k] = acc[i][t];
    }
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d_cuda GPU reference: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_4d(X, kDLBfloat, 16) || !is_4d(Wt, kDLBfloat, 16) || !is_4d(Y, kDLFloat, 64)) {
    set_error(args,
              "conv2d_cuda GPU reference: X, Wt must be contiguous 4-D bfloat16 and Y 4-D "
              "float64, all on the device (kDLCUDA)");
    return 1;
  }
  const int64_t N = X.shape[0], H = X.shape[1], W = X.shape[2], C = X.shape[3], K = Wt.shape[0];
  if (Wt.shape[1] != 3 || Wt.shape[2] != 3 || Wt.shape[3] != C || Y.shape[0] != N ||
      Y.shape[1] != H || Y.shape[2] != W || Y.shape[3] != K) {
    set_error(args,
              "conv2d_cuda GPU reference: shapes disagree (X[N,H,W,C], Wt[K,3,3,C], Y[N,H,W,K])");
    return 1;
  }
  const int64_t M = N * H * W;
  if (M + BM > INT32_MAX || K * 9 * C > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "conv2d_cuda GPU reference: shape too large for this kernel's indices");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  const dim3 grid(static_cast<unsigned>((K + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  conv_f64<<<grid, TX * TY, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const uint16_t>(X), data_of<const uint16_t>(Wt), data_of<double>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
