// Stage 5 GEMM (Hopper): C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// The expert's cp.async pipeline with its tensor-core instruction replaced: mma.sync (one warp,
// 16 x 8 x 16, operands in registers through ldmatrix) becomes wgmma.mma_async (a warpgroup of 4
// warps, 64 x 128 x 16, both operands read by the tensor cores straight from shared memory
// through 64-bit matrix descriptors, asynchronously: issue, commit a group, wait for it).
//  - block tile 128 x 128 x 64, two warpgroups (256 threads), each a 64 x 128 slice: 64 fp32
//    accumulators per thread. BK = 64 bf16 = 128 bytes, one swizzle row.
//  - shared layouts are the 128B-swizzled canonical ones wgmma reads (the padding of the earlier
//    stages is not a layout a descriptor can name): the 16-byte chunk c of a 128-byte row r is
//    stored at chunk c ^ (r % 8), every tile base 1024-byte aligned.
//    A tile (K-major): 128 rows of 64 k; descriptor SBO = 1024 (8 rows), LBO unused (16),
//    swizzle mode 1; the k16 step adds 32 bytes to the start address.
//    B tile (N-major, the instruction's trans-b = 1): two panels of 64 columns, each 64 rows (k)
//    of 64 n = 128 bytes; descriptor LBO = 8192 (next panel: the next 64 columns), SBO = 1024
//    (next 8 k rows); the k16 step adds 16 rows = 2048 bytes.
//  - cp.async.cg writes are generic-proxy writes and wgmma reads through the async proxy, so each
//    thread fences (fence.proxy.async.shared::cta) after its copies land, before the barrier.
//  - STAGES = 3 (32 KiB each, 96 KiB per block) lets two blocks share an SM (launch bounds 256,
//    2: <= 128 registers). The wgmma of tile kt is waited for (wait_group 0) at the end of its
//    iteration, so the next barrier also proves its buffer free for the copy of tile kt + 2.
// Epilogue: the m64nNk16 accumulator fragment (warp w of the warpgroup owns rows 16 w .. 16 w +
// 15; d[4j .. 4j+3] at (row g, cols 8j + 2q, +1) and (row g + 8, same), g = lane / 4,
// q = lane % 4) stored as float2, predicated on M and N.
// Debug define GEMM_B_LBO_SBO_SWAPPED swaps B's descriptor strides (the same switch as stage 6).
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

#ifndef GEMM_STAGES
#define GEMM_STAGES 3
#endif
constexpr int STAGES = GEMM_STAGES;
constexpr int BM = 128, BN = 128, BK = 64;     // block tile; BK x 2 bytes = one 128B row
constexpr int THREADS = 256;                   // two warpgroups of 64 rows each
constexpr int PANEL = 64;                      // columns of B per 128-byte panel row
constexpr int A_BYTES = BM * BK * 2;           // 16 KiB
constexpr int PANEL_BYTES = PANEL * BK * 2;    // 8 KiB
constexpr int STAGE_BYTES = A_BYTES + (BN / PANEL) * PANEL_BYTES;  // 32 KiB
constexpr int ACC = BN / 2;                    // fp32 accumulators per thread
constexpr int A_CHUNKS = BM * BK / 8 / THREADS;  // 16-byte copies of A per thread: 4
constexpr int B_CHUNKS = BK * BN / 8 / THREADS;  // and of B: 4
constexpr size_t SMEM_BYTES = size_t(STAGES) * STAGE_BYTES + 1024;
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block");

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

// Shared-memory matrix descriptor: start address, leading / stride byte offsets (all >> 4),
// base offset 0 (bases are 1024-aligned), layout 1 = 128B swizzle (bits 62-63).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16 |
         static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32 | 1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Pins an accumulator: the compiler may not move its reads or writes across this point (the
// wgmma writes it asynchronously, after the asm statement that names it).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// D[64 x 128] (+)= A (64 x 16, K-major, descriptor) · B (16 x 128, N-major: trans-b = 1).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                 int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
}

#ifdef GEMM_B_LBO_SBO_SWAPPED
constexpr uint32_t B_LBO = 1024, B_SBO = PANEL_BYTES;
#else
constexpr uint32_t B_LBO = PANEL_BYTES, B_SBO = 1024;  // next 64 columns; next 8 k rows
#endif
constexpr uint32_t A_LBO = 16, A_SBO = 1024;           // LBO unused by K-major 128B swizzle

// Byte offset of 16-byte chunk `c` (0..7) of 128-byte row `r` in a 128B-swizzled tile.
__device__ __forceinline__ uint32_t swizzled(int r, int c) {
  return static_cast<uint32_t>(r * 128 + ((c ^ (r & 7)) << 4));
}

// Issue the copies of k tile `k0` into the stage at shared address `stage` (A: 128 rows of 8
// chunks; B: 64 k rows of 16 chunks, chunk c16 in panel c16 / 8).
__device__ __forceinline__ void load_tile(uint32_t stage, const __nv_bfloat16* __restrict__ A,
                                          const __nv_bfloat16* __restrict__ B, int M, int N, int K,
                                          int m0, int n0, int k0, int tid) {
#pragma unroll
  for (int i = 0; i < A_CHUNKS; ++i) {
    const int idx = tid + i * THREADS, r = idx / 8, c = idx % 8;
    const int gr = m0 + r, gk = k0 + c * 8;
    const bool in = gr < M && gk < K;
    cp_async16(stage + swizzled(r, c), in ? A + static_cast<size_t>(gr) * K + gk : A, in ? 16 : 0);
  }
#pragma unroll
  for (int i = 0; i < B_CHUNKS; ++i) {
    const int idx = tid + i * THREADS, r = idx / 16, c16 = idx % 16;
    const int gk = k0 + r, gc = n0 + c16 * 8;
    const bool in = gk < K && gc < N;
    cp_async16(stage + A_BYTES + (c16 / 8) * PANEL_BYTES + swizzled(r, c16 % 8),
               in ? B + static_cast<size_t>(gk) * N + gc : B, in ? 16 : 0);
  }
}

__global__ void __launch_bounds__(THREADS, 2)
gemm_wgmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
           float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const uint32_t tiles = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const int tid = threadIdx.x, lane = tid & 31, wg = tid / 128;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int ktiles = (K + BK - 1) / BK;

  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;

  // Prologue: tiles 0 .. STAGES-2 in flight, one commit group per tile slot (empty or not).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(tiles + s * STAGE_BYTES, A, B, M, N, K, m0, n0, s * BK, tid);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to wgmma
    __syncthreads();  // everyone's are; tile kt-1's wgmma (waited for) no longer reads its buffer
    const uint32_t stage = tiles + (kt % STAGES) * STAGE_BYTES;
    const uint32_t a_base = stage + wg * 64 * 128, b_base = stage + A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_m64n128k16(acc, smem_desc(a_base + kk * 32, A_LBO, A_SBO),
                       smem_desc(b_base + kk * 16 * 128, B_LBO, B_SBO), 1);
    wgmma_commit();
    // While the tensor cores work, queue the copy of tile kt + STAGES - 1 into the buffer of
    // tile kt - 1.
    const int next = kt + STAGES - 1;
    if (next < ktiles)
      load_tile(tiles + (next % STAGES) * STAGE_BYTES, A, B, M, N, K, m0, n0, next * BK, tid);
    cp_async_commit();
    wgmma_wait<0>();
  }
  cp_async_wait<0>();  // only empty groups can be pending; leave no copy behind
#pragma unroll
  for (int i = 0; i < ACC; ++i) fence_operand(acc[i]);

  const int w = (tid / 32) % 4, g = lane >> 2, q = lane & 3;
  const int r = m0 + wg * 64 + w * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = n0 + j * 8 + 2 * q;
    if (col >= N) continue;
    if (r < M)
      *reinterpret_cast<float2*>(C + static_cast<size_t>(r) * N + col) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
    if (r + 8 < M)
      *reinterpret_cast<float2*>(C + static_cast<size_t>(r + 8) * N + col) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
  }
}

bool g_attr_set = false;  // the >48 KiB dynamic shared-memory opt-in, done once per load

int set_smem_attr() {
  if (g_attr_set) return 0;
  if (cudaFuncSetAttribute(gemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(SMEM_BYTES)) != cudaSuccess)
    return 1;
  g_attr_set = true;
  return 0;
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
  if (set_smem_attr() != 0) {
    set_error(args, "gemm_cuda: cannot raise the dynamic shared-memory limit");
    return 1;
  }
  gemm_wgmma<<<grid, THREADS, SMEM_BYTES, static_cast<cudaStream_t>(args->stream)>>>(
      data_of<const __nv_bfloat16>(A), data_of<const __nv_bfloat16>(B), data_of<float>(C),
      static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}

extern "C" int lathe_init(void) { return set_smem_attr(); }
