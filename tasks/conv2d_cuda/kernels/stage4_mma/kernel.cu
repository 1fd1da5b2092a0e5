// Stage 4 conv2d: Y[N,H,W,K] (bf16) = conv3x3(X[N,H,W,C] (bf16), Wt[K,3,3,C] (bf16)), stride 1,
// zero padding 1, fp32 accumulation (tasks/conv2d_cuda/task.toml has the contract).
//
// Stage 3 (implicit GEMM over j = (r, s, c), 128 x 128 block tile, 128-bit global loads and
// stores under the contract C, K multiples of 8) plus tensor cores: mma.sync m16n8k16 with bf16
// operands and fp32 accumulators, fed from shared memory by ldmatrix. Four warps each own a
// 64 x 64 tile of Y (4 x 8 mma tiles, 128 fp32 accumulators per thread); the j tile is 32 deep.
//
// Shared memory keeps bf16 now (the tensor cores take it as is), and both tiles are j-contiguous:
// As[pixel][j] is a gathered row of the implicit A (row-major, what mma's A wants) and
// Bs[channel][j] is the filter rows as they lie in Wt (KRSC): B column-major, what mma's ".col"
// B wants, so ldmatrix reads B fragments without .trans. Rows are padded from 32 to 40 bf16
// (80 bytes): the 8 row addresses of one 8x8 ldmatrix then fall on 8 distinct 16-byte bank
// groups.
//
// Loading: 4 chunks of 8 bf16 (one uint4 each) per A row and per B row per j tile, 512 of each
// per tile, 4 + 4 per thread: chunk c4 = t % 4 of rows t / 4 + 32 i. The (p, q) of the thread's 4
// A rows is computed once; the j tile costs one division (j -> tap, channel) per thread. Tiles
// are loaded through registers between two barriers; nothing overlaps the mma yet (the expert's
// cp.async pipeline does that). The epilogue writes accumulator pairs (two adjacent output
// channels) as one 4-byte bf16x2 store.
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

constexpr int BM = 128, BN = 128, BK = 32;           // block tile: pixels x channels x j
constexpr int WM = 64, WN = 64;                      // warp tile
constexpr int WARPS_N = BN / WN;                     // 2 x 2 warps
constexpr int THREADS = 32 * (BM / WM) * WARPS_N;    // 128
constexpr int MT = WM / 16, NT = WN / 8;             // 4 x 8 mma tiles (m16 x n8) per warp
constexpr int LD = BK + 8;                           // 40 bf16 = 80 bytes per shared row
constexpr int CHUNKS = BK / 8;                       // uint4 per row of a tile: 4
constexpr int ROWS = BM * CHUNKS / THREADS;          // rows each thread loads, of A and of B: 4

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
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

__global__ void __launch_bounds__(THREADS)
conv_mma(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ Wt,
         __nv_bfloat16* __restrict__ Y, int M, int H, int W, int C, int K) {
  __shared__ __align__(16) __nv_bfloat16 As[BM * LD];
  __shared__ __align__(16) __nv_bfloat16 Bs[BN * LD];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
  const int m0 = blockIdx.y * BM, k0 = blockIdx.x * BN;
  const int J = 9 * C;
  const int c4 = (tid % CHUNKS) * 8, lr = tid / CHUNKS;  // loader: j offset, first row

  // (p, q) of the loaded A rows; a row past M gets p = -4, so every tap fails the range test.
  int ap[ROWS], aq[ROWS];
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int m = m0 + lr + 32 * i;
    ap[i] = m < M ? (m / W) % H : -4;
    aq[i] = m < M ? m % W : 0;
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

  for (int j0 = 0; j0 < J; j0 += BK) {
    const int j = j0 + c4;
    const bool jin = j < J;  // J and j multiples of 8: the chunk is all in or all out
    const int rs = jin ? j / C : 0, c = j - rs * C;
    const int dr = rs / 3 - 1, ds = rs % 3 - 1;
    uint4 va[ROWS], vb[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const int h = ap[i] + dr, x = aq[i] + ds;
      va[i] = make_uint4(0, 0, 0, 0);
      if (jin && h >= 0 && h < H && x >= 0 && x < W)
        va[i] = *reinterpret_cast<const uint4*>(
            X + (static_cast<int64_t>(m0 + lr + 32 * i) + dr * W + ds) * C + c);
      const int k = k0 + lr + 32 * i;
      vb[i] = make_uint4(0, 0, 0, 0);
      if (jin && k < K) vb[i] = *reinterpret_cast<const uint4*>(Wt + static_cast<int64_t>(k) * J + j);
    }
    __syncthreads();  // every warp is done reading the previous tile
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      *reinterpret_cast<uint4*>(As + (lr + 32 * i) * LD + c4) = va[i];
      *reinterpret_cast<uint4*>(Bs + (lr + 32 * i) * LD + c4) = vb[i];
    }
    __syncthreads();
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
  const dim3 grid(static_cast<unsigned>((K + BN - 1) / BN), static_cast<unsigned>((M + BM - 1) / BM));
  conv_mma<<<grid, THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(X), data_of<const __nv_bfloat16>(Wt), data_of<__nv_bfloat16>(Y),
      static_cast<int>(M), static_cast<int>(H), static_cast<int>(W), static_cast<int>(C),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "conv2d_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}
