// Trusted fp64 GPU oracle for gemm_cuda (task.toml: gpu_reference): the function of
// reference.cpp, C = A · B with A and B bf16 widened exactly to double and every product and sum
// in double, computed on the device. Tensors are device pointers, C is a float64 device buffer,
// the work goes on a->stream; nothing is allocated or synchronized here. reference.cpp needs
// several seconds per 4096^3 trial even on many cores; this kernel needs milliseconds.
//
// Why the accumulation order is sound. A bf16 value has an 8-bit significand, so the product of
// two of them has at most 16 significant bits and is exact in double (53): the only rounding is
// in the sum. Each element of C is owned by one thread, which adds its K exact products in the
// order k = 0, 1, ..., K-1 (tiles of BK in order, k in order inside a tile; the zero padding past
// K adds exact zeros). A sum of K terms in double errs by at most (K-1)·2^-53·sum|a_ik·b_kj|:
// with K = 4096 and both inputs scaled by 4 (|a|, |b| <= 4, the task's largest perturbation),
// sum|ab| <= 65536, so under 3e-8 absolute in the worst case, against the task's atol 5e-2 and
// an fp32 kernel's measured 8.6e-3. Any other order of the same double sum (reference.cpp's
// blocked one) obeys the same bound, so the two references agree far below the tolerance.
//
// Speed: 64x64 block tiles over 16-deep k tiles in shared memory (widened to double once per
// tile), 256 threads each holding a 4x4 block of C in registers; per k step a thread reads 4 + 4
// doubles from shared memory (broadcasts within a warp) for 16 DFMA. 4096^3 is 137 GFLOP: a few
// tens of milliseconds even at a fraction of the H200's fp64 rate.
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

bool is_matrix(const DLTensor& t, uint8_t code, uint8_t bits) {
  if (t.ndim != 2 || t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1)
    return false;
  if (t.device.device_type != kDLCUDA) return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int BM = 64, BN = 64, BK = 16;  // block tile of C, depth of a k tile
constexpr int TX = 16, TY = 16;           // 256 threads; thread (tx, ty) owns rows ty + 16 i and
constexpr int TM = BM / TY, TN = BN / TX; // columns tx + 16 j, i < TM = 4, j < TN = 4

__device__ __forceinline__ double bf16_to_double(uint16_t h) {
  return static_cast<double>(__uint_as_float(static_cast<uint32_t>(h) << 16));  // both exact
}

__global__ void __launch_bounds__(TX * TY)
gemm_f64(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B, double* __restrict__ C,
         int M, int N, int K) {
  // As is k-major with one double of padding per k row: the tile is stored column by column of
  // A (a warp writes 2 rows x 16 k), and the padding spreads those writes over distinct banks.
  __shared__ double As[BK][BM + 1];
  __shared__ double Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % TX, ty = tid / TX;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  double acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A tile (BM x BK): 16 consecutive threads read 16 consecutive k of one row of A.
#pragma unroll
    for (int e = tid; e < BM * BK; e += TX * TY) {
      const int r = e / BK, k = e % BK;
      const int gr = row0 + r, gk = k0 + k;
      As[k][r] = gr < M && gk < K ? bf16_to_double(A[static_cast<size_t>(gr) * K + gk]) : 0.0;
    }
    // B tile (BK x BN): 64 consecutive threads read 64 consecutive columns of one row of B.
#pragma unroll
    for (int e = tid; e < BK * BN; e += TX * TY) {
      const int k = e / BN, c = e % BN;
      const int gk = k0 + k, gc = col0 + c;
      Bs[k][c] = gk < K && gc < N ? bf16_to_double(B[static_cast<size_t>(gk) * N + gc]) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      double a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[k][ty + TY * i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx + TX * j];
      // The product is exact, so fma(a, b, acc) rounds exactly as acc + a*b would.
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + ty + TY * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = col0 + tx + TX * j;
      if (c < N) C[static_cast<size_t>(r) * N + c] = acc[i][j];
    }
  }
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm_cuda GPU reference: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (!is_matrix(A, kDLBfloat, 16) || !is_matrix(B, kDLBfloat, 16) || !is_matrix(C, kDLFloat, 64)) {
    set_error(args,
              "gemm_cuda GPU reference: A, B must be contiguous 2-D bfloat16 and C 2-D float64, "
              "all on the device (kDLCUDA)");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm_cuda GPU reference: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  // 32-bit row and column indices; the grid's y extent caps M.
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "gemm_cuda GPU reference: shape too large for this kernel's indices");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  gemm_f64<<<grid, TX * TY, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const uint16_t>(A), data_of<const uint16_t>(B), data_of<double>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda GPU reference: kernel launch failed");
    return 1;
  }
  return 0;
}
