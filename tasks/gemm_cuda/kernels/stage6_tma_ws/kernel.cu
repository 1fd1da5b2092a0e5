// Stage 6 GEMM (Hopper): C[M,N] (fp32) = A[M,K] (bf16) · B[K,N] (bf16), fp32 accumulation.
//
// Stage 5 (wgmma.mma_async from shared-memory descriptors, 128B-swizzled tiles) with its cp.async
// feed replaced by the tensor memory accelerator and the block split by role:
//  - TMA: cp.async.bulk.tensor.2d copies whole boxes of A and B from global into shared memory,
//    described by two CUtensorMaps built on the host in lathe_launch (cuTensorMapEncodeTiled, the
//    bundle links the driver: libraries = ["cuda"]) and passed as __grid_constant__ parameters.
//    The maps swizzle 128B, the layout the wgmma descriptors below name, and zero-fill what lies
//    outside the matrix (ragged M, N and K tiles need no predicate on the load side).
//  - warp specialization: warpgroup 0 is the producer (one thread issues every copy, then the
//    warpgroup gives its registers back with setmaxnreg.dec); warpgroups 1 and 2 are consumers,
//    each a 64 x BN slice of the 128 x BN block tile (m64nBNk16 wgmma, BN/2 fp32 accumulators per
//    thread, setmaxnreg.inc to 232 registers).
//  - a ring of STAGES smem buffers (A 128 x 64 + B 64 x BN bf16 each) with two mbarriers per
//    buffer: full[s] (count 1: the producer's arrive.expect_tx; the TMA's complete_tx bytes end
//    the phase) and empty[s] (count 8: lane 0 of each consumer warp, once the wgmma that read the
//    buffer has completed). Phases are tracked by parity: use u = kt / STAGES of buffer s waits
//    for full[s] phase u (parity u & 1); the producer waits for empty[s] with parity (u & 1) ^ 1,
//    which a fresh barrier passes at once (u = 0) and later means "use u - 1 was released".
// Shared layouts (all bases 1024-byte aligned, so the swizzle the TMA applies by address matches
// the one wgmma undoes by address):
//  - A tile: 128 rows (m) of 64 k = 128 bytes, the 16-byte chunk c of row r stored at chunk
//    c ^ (r % 8): the K-major SWIZZLE_128B canonical layout. Descriptor: SBO = 1024 (8 rows), LBO
//    unused (16), swizzle mode 1; the k16 step inside the 128-byte row adds 32 bytes to the start
//    address; consumer c's rows start at 64 c x 128 bytes.
//  - B tile: BN / 64 panels of 64 columns (n); a panel is 64 rows (k) of 64 n = 128 bytes, same
//    swizzle: the MN-major SWIZZLE_128B canonical layout. Descriptor: LBO = 8192 (the next 64
//    columns: the next panel), SBO = 1024 (the next 8 k rows), swizzle mode 1, and the
//    instruction's trans-b = 1 (B is N-major); the k16 step adds 16 rows = 2048 bytes.
// Epilogue: the accumulator fragment of m64nNk16 (thread t of the warpgroup: warp w = t / 32 owns
// rows 16 w .. 16 w + 15; d[4j .. 4j+3] at (row g, cols 8j + 2q, +1) and (row g + 8, same cols),
// g = lane / 4, q = lane % 4) written straight to global as float2, predicated on M and N (N is
// even, so a pair is all in or all out).
// Tuning defines (defaults are the shipped configuration): GEMM_BN (256 or 128), GEMM_STAGES.
// Debug defines (for bring-up on the GPU, e.g. with bench/gemm_hopper_check.cu):
//  - GEMM_NO_SETMAXNREG: keep the launch-time register split (rules out setmaxnreg deadlocks);
//  - GEMM_SERIAL: consumers wait for each k tile's wgmma (wait_group 0) before releasing it, and
//    the producer issues one stage ahead only (STAGES forced to 2), to rule out ring races;
//  - GEMM_B_LBO_SBO_SWAPPED: swap B's descriptor strides (if the MN-major reading is backwards,
//    results go from wrong everywhere to right).
#include <cuda.h>
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

#ifndef GEMM_BN
#define GEMM_BN 256
#endif
#ifndef GEMM_STAGES
#define GEMM_STAGES 4
#endif
#ifdef GEMM_SERIAL
constexpr int STAGES = 2;
#else
constexpr int STAGES = GEMM_STAGES;
#endif
constexpr int BM = 128, BN = GEMM_BN, BK = 64;       // block tile; BK x 2 bytes = one 128B row
constexpr int CONSUMERS = 2;                         // warpgroups of 64 rows each
constexpr int THREADS = 128 * (1 + CONSUMERS);       // producer warpgroup + consumers
constexpr int PANEL = 64;                            // columns of B per TMA box (128 bytes)
constexpr int PANELS = BN / PANEL;
constexpr int A_BYTES = BM * BK * 2;                 // 16 KiB
constexpr int PANEL_BYTES = PANEL * BK * 2;          // 8 KiB
constexpr int STAGE_BYTES = A_BYTES + PANELS * PANEL_BYTES;  // 48 KiB (BN 256), 32 KiB (128)
constexpr int ACC = BN / 2;                          // fp32 accumulators per consumer thread
constexpr int GROUP_M = 8;                           // block raster: 8 row tiles per group
constexpr size_t SMEM_BYTES = size_t(STAGES) * STAGE_BYTES + 2 * STAGES * 8 + 1024;
static_assert(BN == 128 || BN == 256, "GEMM_BN is 128 or 256");
static_assert(STAGE_BYTES % 1024 == 0 && A_BYTES % 1024 == 0, "swizzle atoms stay aligned");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory per block");

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -----------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase of parity `parity` has completed (a fresh barrier is in phase 0, so
// waiting for parity 1 returns at once).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// ---- TMA ----------------------------------------------------------------------------------
// A box of the tensor map at element coordinates (c0 innermost, c1) into shared memory at `dst`;
// completion (the box's bytes, zero-filled parts included) is signalled on `bar`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// ---- wgmma --------------------------------------------------------------------------------
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

#if GEMM_BN == 256
// D[64 x 256] (+)= A (64 x 16, K-major, descriptor) · B (16 x 256, N-major: trans-b = 1);
// scale_d = 0 would ignore D's old value.
__device__ __forceinline__ void wgmma_tile(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                           int scale_d = 1) {
  asm volatile(
      "{\n.reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
}

#else
// D[64 x 128] (+)= A (64 x 16, K-major, descriptor) · B (16 x 128, N-major: trans-b = 1).
__device__ __forceinline__ void wgmma_tile(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                           int scale_d = 1) {
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
#endif


#ifdef GEMM_B_LBO_SBO_SWAPPED
constexpr uint32_t B_LBO = 1024, B_SBO = PANEL_BYTES;
#else
constexpr uint32_t B_LBO = PANEL_BYTES, B_SBO = 1024;  // next 64 columns; next 8 k rows
#endif
constexpr uint32_t A_LBO = 16, A_SBO = 1024;           // LBO unused by K-major 128B swizzle

__global__ void __launch_bounds__(THREADS, 1)
gemm_tma_ws(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
            float* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Tiles at a 1024-aligned base (the 128B swizzle repeats every 8 rows of 128 bytes).
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t tiles = (raw + 1023u) & ~1023u;
  const uint32_t full0 = tiles + STAGES * STAGE_BYTES;  // full[s] = full0 + 8 s
  const uint32_t empty0 = full0 + STAGES * 8;           // empty[s] = empty0 + 8 s

  // Block raster: GROUP_M row tiles share each column tile in turn (B panels stay in L2).
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n;
  const int group = static_cast<int>(blockIdx.x) / per_group;
  const int first_m = group * GROUP_M;
  const int rows_in_group = min(tiles_m - first_m, GROUP_M);
  const int in_group = static_cast<int>(blockIdx.x) % per_group;
  const int m0 = (first_m + in_group % rows_in_group) * BM;
  const int n0 = (in_group / rows_in_group) * BN;
  const int ktiles = (K + BK - 1) / BK;

  const int wg = threadIdx.x / 128, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 4 * CONSUMERS);
    }
    // Make the initialized barriers visible to the async proxy (the TMA unit).
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // Producer warpgroup: one thread drives the TMA; the others have nothing to do.
#ifndef GEMM_NO_SETMAXNREG
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
#endif
    if (threadIdx.x == 0) {
      // Panels wholly right of N are not loaded: they would only feed columns that are never
      // stored (column n of C depends on column n of B alone).
      const int panels = min(PANELS, (N - n0 + PANEL - 1) / PANEL);
      const uint32_t bytes = A_BYTES + panels * PANEL_BYTES;
      for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % STAGES;
        const uint32_t use = kt / STAGES;
        mbar_wait(empty0 + 8 * s, (use & 1) ^ 1);
        const uint32_t full = full0 + 8 * s;
        mbar_arrive_expect_tx(full, bytes);
        const uint32_t a_dst = tiles + s * STAGE_BYTES;
        tma_load_2d(a_dst, &map_a, kt * BK, m0, full);
        for (int p = 0; p < panels; ++p)
          tma_load_2d(a_dst + A_BYTES + p * PANEL_BYTES, &map_b, n0 + p * PANEL, kt * BK, full);
      }
    }
    return;
  }

#ifndef GEMM_NO_SETMAXNREG
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
#endif
  const int c = wg - 1;  // consumer: rows 64 c .. 64 c + 63 of the block tile
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;

  for (int kt = 0; kt < ktiles; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(full0 + 8 * s, (kt / STAGES) & 1);
    const uint32_t a_base = tiles + s * STAGE_BYTES + c * 64 * 128;
    const uint32_t b_base = tiles + s * STAGE_BYTES + A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_tile(acc, smem_desc(a_base + kk * 32, A_LBO, A_SBO),
                 smem_desc(b_base + kk * 16 * 128, B_LBO, B_SBO));
    wgmma_commit();
#ifdef GEMM_SERIAL
    wgmma_wait<0>();
    if (lane == 0) mbar_arrive(empty0 + 8 * s);
#else
    // Tile kt stays in flight; tile kt-1's wgmma has completed, so its buffer goes back.
    wgmma_wait<1>();
    if (kt > 0 && lane == 0) mbar_arrive(empty0 + 8 * ((kt - 1) % STAGES));
#endif
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < ACC; ++i) fence_operand(acc[i]);

  const int w = (threadIdx.x / 32) % 4, g = lane >> 2, q = lane & 3;
  const int r = m0 + c * 64 + w * 16 + g;
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

// A row-major [rows, cols] bf16 matrix as a 2-D tensor map with box [box_rows, 64 columns],
// 128B swizzle, zero fill outside the matrix.
bool encode_map(CUtensorMap* map, const void* base, uint64_t rows, uint64_t cols,
                uint32_t box_rows) {
  const cuuint64_t dims[2] = {cols, rows};                    // innermost first
  const cuuint64_t strides[1] = {cols * sizeof(__nv_bfloat16)};  // bytes, multiple of 16
  const cuuint32_t box[2] = {64, box_rows};                   // 64 bf16 = 128 bytes
  const cuuint32_t elem_strides[2] = {1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base),
                                dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool g_attr_set = false;  // the >48 KiB dynamic shared-memory opt-in, done once per load

int set_smem_attr() {
  if (g_attr_set) return 0;
  if (cudaFuncSetAttribute(gemm_tma_ws, cudaFuncAttributeMaxDynamicSharedMemorySize,
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
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX ||
      ((M + BM - 1) / BM) * ((N + BN - 1) / BN) > INT32_MAX) {
    set_error(args, "gemm_cuda: shape too large for this kernel's 32-bit indices / grid");
    return 1;
  }
  if (K % 8 != 0 || N % 8 != 0) {
    set_error(args, "gemm_cuda: this kernel needs K and N multiples of 8 (16-byte TMA strides)");
    return 1;
  }
  if (M == 0 || N == 0) return 0;
  if (K == 0)  // no tensor map of an empty matrix: C is all zeros
    return cudaMemsetAsync(data_of<float>(C), 0, static_cast<size_t>(M * N) * sizeof(float),
                           static_cast<cudaStream_t>(args->stream)) == cudaSuccess
               ? 0
               : 1;
  const void* a = data_of<const __nv_bfloat16>(A);
  const void* b = data_of<const __nv_bfloat16>(B);
  if ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) % 16 != 0) {
    set_error(args, "gemm_cuda: A and B must be 16-byte aligned for the tensor maps");
    return 1;
  }
  CUtensorMap map_a, map_b;
  if (!encode_map(&map_a, a, static_cast<uint64_t>(M), static_cast<uint64_t>(K), BM) ||
      !encode_map(&map_b, b, static_cast<uint64_t>(K), static_cast<uint64_t>(N), BK)) {
    set_error(args, "gemm_cuda: cuTensorMapEncodeTiled refused the tensor maps");
    return 1;
  }
  if (set_smem_attr() != 0) {
    set_error(args, "gemm_cuda: cannot raise the dynamic shared-memory limit");
    return 1;
  }
  const unsigned blocks = static_cast<unsigned>(((M + BM - 1) / BM) * ((N + BN - 1) / BN));
  gemm_tma_ws<<<blocks, THREADS, SMEM_BYTES, static_cast<cudaStream_t>(args->stream)>>>(
      map_a, map_b, data_of<float>(C), static_cast<int>(M), static_cast<int>(N),
      static_cast<int>(K));
  if (cudaGetLastError() != cudaSuccess) {
    set_error(args, "gemm_cuda: kernel launch failed");
    return 1;
  }
  return 0;
}

extern "C" int lathe_init(void) { return set_smem_attr(); }
