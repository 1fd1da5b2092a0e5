// Stage 3 GEMM: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// Adds vectorized 128-bit global accesses to stage 2 (same 128 x 128 x 8 block tile, same 8 x 8
// micro-tile per thread). One uint4 holds 8 bf16, exactly one BK = 8 slice of a row of A, so the
// A tile (128 x 8) is 128 uint4 and the B tile (8 x 128) is 8 rows x 16 uint4 = 128 uint4:
// threads 0-127 (warps 0-3) load A, threads 128-255 (warps 4-7) load B, one 16-byte load each
// instead of stage 2's four 2-byte loads. Shared-memory reads of the micro-tile operands and the
// stores of C are float4 as well. This needs the task's shape contract, K and N multiples of 8:
// every row starts 16-byte aligned and every 8-element chunk is wholly inside or outside the
// matrix, so the edge test is per chunk. M stays arbitrary.
#include <cuda_bf16.h>
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
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

constexpr int BM = 128, BN = 128, BK = 8;  // block tile; BK = 8 bf16 = one uint4
constexpr int TM = 8, TN = 8;                // per-thread micro-tile
constexpr int THREADS = (BM / TM) * (BN / TN);  // 256

// Eight bf16 packed in a uint4 -> eight floats (bf16 is the high half of an fp32).
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}

__global__ void __launch_bounds__(THREADS)
gemm_vector(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
            float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN);
  const int ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const bool loads_a = tid < BM;                                  // warp-uniform role
  const int a_row = tid;                                          // one row of the A tile
  const int b_k = (tid - BM) / (BN / 8), b_col = ((tid - BM) % (BN / 8)) * 8;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    float f[8];
    if (loads_a) {
      const int gr = m0 + a_row;
      if (gr < M && k0 < K)  // K % 8 == 0: the chunk k0..k0+7 is all in or all out
        v = *reinterpret_cast<const uint4*>(A + static_cast<size_t>(gr) * K + k0);
      unpack8(v, f);
#pragma unroll
      for (int q = 0; q < 8; ++q) As[q][a_row] = f[q];
    } else {
      const int gk = k0 + b_k, gc = n0 + b_col;
      if (gk < K && gc < N)  // N % 8 == 0: the chunk gc..gc+7 is all in or all out
        v = *reinterpret_cast<const uint4*>(B + static_cast<size_t>(gk) * N + gc);
      unpack8(v, f);
      *reinterpret_cast<float4*>(&Bs[b_k][b_col]) = make_float4(f[0], f[1], f[2], f[3]);
      *reinterpret_cast<float4*>(&Bs[b_k][b_col + 4]) = make_float4(f[4], f[5], f[6], f[7]);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][ty * TM]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][ty * TM + 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tx * TN]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][tx * TN + 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
      a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
      b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  const int c = n0 + tx * TN;
  if (c >= N) return;  // N % 8 == 0: the 8 columns are all in or all out
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + ty * TM + i;
    if (r >= M) continue;
    float* out = C + static_cast<size_t>(r) * N + c;  // 32-byte aligned: N % 8 == 0
    *reinterpret_cast<float4*>(out) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(out + 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "gemm_cuda: expects inputs A, B and output C");
    return 1;
  }
  const DLTensor& A = args->inputs[0];
  const DLTensor& B = args->inputs[1];
  const DLTensor& C = args->outputs[0];
  if (!is_matrix(A, kDLBfloat, 16) || !is_matrix(B, kDLBfloat, 16) || !is_matrix(C, kDLFloat, 32)) {
    set_error(args, "gemm_cuda: A, B must be contiguous 2-D bfloat16 and C 2-D float32");
    return 1;
  }
  const int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  if (B.shape[0] != K || C.shape[0] != M || C.shape[1] != N) {
    set_error(args, "gemm_cuda: shapes disagree (A[M,K], B[K,N], C[M,N])");
    return 1;
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "gemm_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (K % 8 != 0 || N % 8 != 0) {
    set_error(args, "gemm_cuda: this kernel needs K and N multiples of 8 (16-byte row chunks)");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN),
                  static_cast<unsigned>((M + BM - 1) / BM));
  gemm_vector<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
