// Expert conv2d: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)), stride 1,
// zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// Stage 4 (implicit GEMM over j = (r, s, c) on tensor cores: mma.sync m16n8k16 bf16 -> fp32 fed
// by ldmatrix, 128 x 128 x 32 block tile, 4 warps of 64 x 64, rows padded to 40 bf16) plus a
// multistage cp.async pipeline: the im2col gather of A and the filter rows of B are copied
// straight from global into shared memory by cp.async.cg (16 bytes = 8 channels of one pixel or
// of one filter row, bypassing registers and L1), STAGES j tiles deep, so the copies of tiles
// kt+1 .. kt+STAGES-1 are in flight while the warps do the mma of tile kt. One barrier per tile:
// at iteration kt, cp.async.wait_group(STAGES-2) guarantees this thread's copies of tile kt have
// landed, the barrier makes everyone's visible and proves every warp has finished tile kt-1,
// whose buffer the prefetch of tile kt+STAGES-1 then reuses. The convolution's zero padding and
// the ragged edges (pixels past N*H*W, channels past K, j past 9C) are copies with src-size 0,
// which write 16 zero bytes and read nothing; the contract (C and K multiples of 8) makes every
// chunk wholly a tap's 8 channels or wholly outside.
//
// STAGES = 4: a stage is 2 x 128 x 40 x 2 bytes = 20 KiB, 4 stages 80 KiB of dynamic shared
// memory, so two blocks (2 x 128 threads, launch bounds (128, 2)) share an SM's 228 KiB. At the
// timed shape (N*H*W = 100352 = 784 x 128 pixels, K = 256: 1568 blocks, 72 j tiles each) the
// filter (1.2 MB) stays in L2 and each activation tile is fetched for both column blocks of its
// row in neighbouring blocks. CONV_STAGES overrides the depth for tuning variants.
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

// A contiguous row-major 4-D bf16 tensor.
bool is_bf16_4d(const DLTensor& t) {
  if (t.ndim != 4 || t.dtype.code != kDLBfloat || t.dtype.bits != 16 || t.dtype.lanes != 1)
    return false;
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

#ifndef CONV_STAGES
#define CONV_STAGES 4
#endif
constexpr int STAGES = CONV_STAGES;
constexpr int BM = 128, BN = 128, BK = 32;           // block tile: pixels x channels x j
constexpr int WM = 64, WN = 64;                      // warp tile
constexpr int WARPS_N = BN / WN;                     // 2 x 2 warps
constexpr int THREADS = 32 * (BM / WM) * WARPS_N;    // 128
constexpr int MT = WM / 16, NT = WN / 8;             // 4 x 8 mma tiles (m16 x n8) per warp
constexpr int LD = BK + 8;                           // 40 bf16 = 80 bytes per shared row
constexpr int CHUNKS = BK / 8;                       // 16-byte chunks per row of a tile: 4
constexpr int ROWS = BM * CHUNKS / THREADS;          // rows each thread copies, of A and of B: 4
constexpr int STAGE_ELEMS = (BM + BN) * LD;          // bf16 per pipeline stage (A then B)
constexpr size_t SMEM_BYTES = size_t(STAGES) * STAGE_ELEMS * sizeof(__nv_bfloat16);

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i of every
// lane holds (row lane / 4, columns 2 (lane % 4), +1) of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A (16x16, row) · B (16x8, col) + D; bf16 operands, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Where this thread copies from: chunk offset c4 (in j) of A rows / B rows lr + 32 i, with the
// (p, q) of each A row (p = -4 past M, so every tap fails the range test).
struct loader {
  int c4, lr;
  int ap[ROWS], aq[ROWS];
};

// Issue the copies of j tile j0 into stage buffer s.
__device__ __forceinline__ void load_tile(__nv_bfloat16* smem, int s, const loader& ld,
                                          const __nv_bfloat16* __restrict__ X,
                                          const __nv_bfloat16* __restrict__ Wt, int m0, int k0,
                                          int j0, int H, int W, int C, int K, int J) {
  __nv_bfloat16* As = smem + s * STAGE_ELEMS;
  __nv_bfloat16* Bs = As + BM * LD;
  const int j = j0 + ld.c4;
  const bool jin = j < J;  // J and j multiples of 8: the chunk is all in or all out
  const int rs = jin ? j / C : 0, c = j - rs * C;
  const int dr = rs / 3 - 1, ds = rs % 3 - 1;
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int row = ld.lr + 32 * i;
    const int h = ld.ap[i] + dr, x = ld.aq[i] + ds;
    const bool ain = jin && h >= 0 && h < H && x >= 0 && x < W;
    const __nv_bfloat16* a = ain ? X + (static_cast<int64_t>(m0 + row) + dr * W + ds) * C + c : X;
    cp_async16(smem_u32(As + row * LD + ld.c4), a, ain ? 16 : 0);
    const bool bin = jin && k0 + row < K;
    const __nv_bfloat16* b = bin ? Wt + static_cast<int64_t>(k0 + row) * J + j : Wt;
    cp_async16(smem_u32(Bs + row * LD + ld.c4), b, bin ? 16 : 0);
  }
}

// One BK-deep step of the warp's 64 x 64 tile from shared tiles As[BM][LD], Bs[BN][LD].
__device__ __forceinline__ void warp_mma_tile(const __nv_bfloat16* As, const __nv_bfloat16* Bs,
                                              int wm, int wn, int lane, float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    uint32_t af[MT][4], bfr[NT][2];
    // A, tile mt: lanes 0-15 address rows 0-15 at column kk, lanes 16-31 the same rows at
    // kk + 8: matrices (rows 0-7, k lo), (8-15, lo), (0-7, hi), (8-15, hi) = a0, a1, a2, a3.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      ldmatrix_x4(af[mt], smem_u32(As + (wm * WM + mt * 16 + (lane & 15)) * LD + kk +
                                   (lane >> 4) * 8));
    // B, tiles 2np and 2np + 1: lanes 0-7 address channels 0-7 at kk, lanes 8-15 the same at
    // kk + 8, lanes 16-31 channels 8-15 likewise: b0, b1 of tile 2np, then of tile 2np + 1.
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t r[4];
      ldmatrix_x4(r, smem_u32(Bs + (wn * WN + np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD +
                              kk + ((lane >> 3) & 1) * 8));
      bfr[2 * np][0] = r[0];
      bfr[2 * np][1] = r[1];
      bfr[2 * np + 1][0] = r[2];
      bfr[2 * np + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mma_16816(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
  }
}

__global__ void __launch_bounds__(THREADS, 2)
conv_expert(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
            __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  extern __shared__ __align__(128) __nv_bfloat16 smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int J = 9 * C;
  const int jtiles = (J + BK - 1) / BK;

  loader ld;
  ld.c4 = (tid % CHUNKS) * 8;
  ld.lr = tid / CHUNKS;
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int m = m0 + ld.lr + 32 * i;
    ld.ap[i] = m < M ? (m / W) % H : -4;
    ld.aq[i] = m < M ? m % W : 0;
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

  // Prologue: tiles 0 .. STAGES-2 in flight. Every thread commits one group per tile slot, empty
  // or not, so wait_group counts stay aligned with tile numbers.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < jtiles) load_tile(smem, s, ld, X, Wt, m0, k0, s * BK, H, W, C, K, J);
    cp_async_commit();
  }
  for (int kt = 0; kt < jtiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt are done
    __syncthreads();              // everyone's are, and tile kt-1 is no longer being read
    const int next = kt + STAGES - 1;
    if (next < jtiles) load_tile(smem, next % STAGES, ld, X, Wt, m0, k0, next * BK, H, W, C, K, J);
    cp_async_commit();
    const __nv_bfloat16* As = smem + (kt % STAGES) * STAGE_ELEMS;
    warp_mma_tile(As, As + BM * LD, wm, wn, lane, acc);
  }
  cp_async_wait<0>();  // only empty groups can be pending here; leave no copy behind

  // Accumulators: e = 0, 1 at (row g, channels 2t, 2t + 1), e = 2, 3 at row g + 8 (g = lane / 4,
  // t = lane % 4). Channels come in pairs and K is even: a pair is all in or all out.
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int m = m0 + wm * WM + mt * 16 + g;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int k = k0 + wn * WN + nt * 8 + 2 * t;
      if (k >= K) continue;
      if (m < M)
        *reinterpret_cast<__nv_bfloat162*>(Y + static_cast<int64_t>(m) * K + k) =
            __floats2bfloat162_rn(acc[mt][nt][0], acc[mt][nt][1]);
      if (m + 8 < M)
        *reinterpret_cast<__nv_bfloat162*>(Y + static_cast<int64_t>(m + 8) * K + k) =
            __floats2bfloat162_rn(acc[mt][nt][2], acc[mt][nt][3]);
    }
  }
}

bool g_attr_set = false;  // the >48 KiB dynamic shared-memory opt-in, done once per load

int set_smem_attr() {
  if (g_attr_set) return 0;
  if (cudaFuncSetAttribute(conv_expert, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(SMEM_BYTES)) != cudaSuccess)
    return 1;
  g_attr_set = true;
  return 0;
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d_cuda: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_bf16_4d(X) || !is_bf16_4d(Wt) || !is_bf16_4d(Y)) {
    set_error(args, "conv2d_cuda: X, Wt and Y must be contiguous 4-D bfloat16");
    return 1;
  }
  const int64_t N = X.shape[0], H = X.shape[1], W = X.shape[2], C = X.shape[3], K = Wt.shape[0];
  if (Wt.shape[1] != 3 || Wt.shape[2] != 3 || Wt.shape[3] != C || Y.shape[0] != N ||
      Y.shape[1] != H || Y.shape[2] != W || Y.shape[3] != K) {
    set_error(args, "conv2d_cuda: shapes disagree (X[N,H,W,C], Wt[K,3,3,C], Y[N,H,W,K])");
    return 1;
  }
  if (C % 8 != 0 || K % 8 != 0) {
    set_error(args, "conv2d_cuda: this kernel needs C and K multiples of 8 (16-byte channel chunks)");
    return 1;
  }
  const int64_t M = N * H * W;
  if (M + BM > INT32_MAX || K * 9 * C > INT32_MAX || (M + BM - 1) / BM > 65535) {
    set_error(args, "conv2d_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (M == 0 || K == 0) return 0;
  if (set_smem_attr() != 0) {
    set_error(args, "conv2d_cuda: cannot raise the dynamic shared-memory limit");
    return 1;
  }
  const dim3 grid(static_cast<unsigned>((K + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  conv_expert<<<grid, THREADS, SMEM_BYTES, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}

extern "C" int lathe_init(void) { return set_smem_attr(); }
