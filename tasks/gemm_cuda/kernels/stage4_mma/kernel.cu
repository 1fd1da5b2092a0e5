// Stage 4 GEMM: C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// Adds tensor cores to stage 3: the FMAs of the register micro-tile become warp-wide
// mma.sync.aligned.m16n8k16 (bf16 in, fp32 accumulate), fed by ldmatrix from shared memory.
// Tiles (where the numbers come from):
//  - block tile BM x BN x BK = 128 x 128 x 32, 4 warps as 2 (M) x 2 (N), each warp a 64 x 64 tile
//    of C = 4 x 8 mma tiles of 16 x 8, i.e. 128 fp32 accumulators per thread. 64 x 64 per warp is
//    the largest tile whose accumulators and operand fragments (16 + 16 registers) stay under the
//    255-register limit, and it needs 8 ldmatrix.x4 per 32 mma per 16-deep k step, so shared
//    memory is not the bottleneck. BK = 32 is two k16 steps per barrier. 128 threads x ~220
//    registers let two blocks share an SM (__launch_bounds__(128, 2)), so one block's loads
//    overlap the other's math; a 128 x 256 tile with 8 warps (one block per SM) measured slower
//    on the H200 (the same code with the cp.async pipeline: 268 vs 330 TFLOP/s at 4096^3).
//  - A sits in shared memory as As[m][k] (k contiguous: ldmatrix gives the row-major A fragment)
//    and B as Bs[k][n] (n contiguous: ldmatrix.trans gives the "col" B fragment). Rows are padded
//    by 8 bf16 (16 bytes): 80-byte and 272-byte row pitches put the 8 rows one ldmatrix reads in 8
//    different 16-byte bank groups, so it is conflict-free.
// Global loads are stage 3's 16-byte uint4 (the task's contract: K and N multiples of 8; chunks
// outside the matrix are zero), staged through registers into shared memory; one barrier before
// and one after the compute of each k tile, no overlap of loads and math yet (that is the expert).
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

constexpr int BM = 128, BN = 128, BK = 32;          // block tile
constexpr int WM = 64, WN = 64;                      // warp tile
constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;  // 2 x 2 warps
constexpr int THREADS = 32 * WARPS_M * WARPS_N;      // 128
constexpr int MT = WM / 16, NT = WN / 8;             // 4 x 8 mma tiles (m16 x n8) per warp
constexpr int PAD = 8;                               // 16 bytes of bf16 per shared row
constexpr int AS_LD = BK + PAD;                      // 40 bf16 = 80 bytes
constexpr int BS_LD = BN + PAD;                      // 136 bf16 = 272 bytes
constexpr int A_CHUNKS = BM * BK / 8 / THREADS;      // uint4 of the A tile per thread: 4
constexpr int B_CHUNKS = BK * BN / 8 / THREADS;      // uint4 of the B tile per thread: 4

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A (16x16 row) · B (16x8 col) + D, bf16 operands, fp32 accumulators.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One BK-deep step of the warp's 64 x 64 tile from shared tiles As[BM][AS_LD], Bs[BK][BS_LD].
__device__ __forceinline__ void warp_mma_tile(const __nv_bfloat16* As, const __nv_bfloat16* Bs,
                                              int wm, int wn, int lane,
                                              float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    uint32_t af[MT][4], bfr[NT][2];
    // A fragment of mma tile mt: lanes 0-15 address rows 0-15 at k = kk, lanes 16-31 the same
    // rows at k = kk + 8, giving the four 8x8 matrices in the order a0..a3 of the fragment.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      ldmatrix_x4(af[mt], smem_u32(As + (wm * WM + mt * 16 + (lane & 15)) * AS_LD + kk +
                                   (lane >> 4) * 8));
    // B fragments of two n8 tiles at once: lanes 0-15 address k rows kk..kk+15 at column n,
    // lanes 16-31 the same rows at n + 8; .trans turns each k-major 8x8 block into the
    // (k = 2t, 2t+1; n = g) pairs the fragment wants: b0, b1 of tile n, then b0, b1 of tile n + 8.
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t r[4];
      ldmatrix_x4_trans(r, smem_u32(Bs + (kk + (lane & 15)) * BS_LD + wn * WN + np * 16 +
                                    (lane >> 4) * 8));
      bfr[2 * np][0] = r[0];
      bfr[2 * np][1] = r[1];
      bfr[2 * np + 1][0] = r[2];
      bfr[2 * np + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_bf16_16816(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
  }
}

// Accumulator fragment: c0, c1 at (row g, cols 2t, 2t+1), c2, c3 at row g + 8 (g = lane / 4,
// t = lane % 4). Columns come in pairs and N is even, so a pair is all in or all out.
__device__ __forceinline__ void store_tile(float* __restrict__ C, int M, int N, int m0, int n0,
                                           int wm, int wn, int lane,
                                           const float (&acc)[MT][NT][4]) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int r = m0 + wm * WM + mt * 16 + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int c = n0 + wn * WN + nt * 8 + 2 * t;
      if (c >= N) continue;
      if (r < M)
        *reinterpret_cast<float2*>(C + static_cast<size_t>(r) * N + c) =
            make_float2(acc[mt][nt][0], acc[mt][nt][1]);
      if (r + 8 < M)
        *reinterpret_cast<float2*>(C + static_cast<size_t>(r + 8) * N + c) =
            make_float2(acc[mt][nt][2], acc[mt][nt][3]);
    }
  }
}

__global__ void __launch_bounds__(THREADS, 2)  // two blocks per SM
gemm_mma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
         float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(128) __nv_bfloat16 As[BM * AS_LD];
  __shared__ __align__(128) __nv_bfloat16 Bs[BK * BS_LD];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[mt][nt][q] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    // Global -> registers, 16 bytes per access: A tile rows have BK / 8 = 4 chunks, B tile rows
    // BN / 8 = 16 (a warp reads two 256-byte rows of B).
    uint4 ra[A_CHUNKS], rb[B_CHUNKS];
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int idx = tid + i * THREADS, r = idx / (BK / 8), c = (idx % (BK / 8)) * 8;
      const int gr = m0 + r, gk = k0 + c;
      ra[i] = (gr < M && gk < K)
                  ? *reinterpret_cast<const uint4*>(A + static_cast<size_t>(gr) * K + gk)
                  : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int idx = tid + i * THREADS, r = idx / (BN / 8), c = (idx % (BN / 8)) * 8;
      const int gk = k0 + r, gc = n0 + c;
      rb[i] = (gk < K && gc < N)
                  ? *reinterpret_cast<const uint4*>(B + static_cast<size_t>(gk) * N + gc)
                  : make_uint4(0u, 0u, 0u, 0u);
    }
    // Registers -> shared.
#pragma unroll
    for (int i = 0; i < A_CHUNKS; ++i) {
      const int idx = tid + i * THREADS;
      *reinterpret_cast<uint4*>(As + (idx / (BK / 8)) * AS_LD + (idx % (BK / 8)) * 8) = ra[i];
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS; ++i) {
      const int idx = tid + i * THREADS;
      *reinterpret_cast<uint4*>(Bs + (idx / (BN / 8)) * BS_LD + (idx % (BN / 8)) * 8) = rb[i];
    }
    __syncthreads();
    warp_mma_tile(As, Bs, wm, wn, lane, acc);
    __syncthreads();  // the tiles are overwritten by the next iteration
  }
  store_tile(C, M, N, m0, n0, wm, wn, lane, acc);
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
  gemm_mma<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
