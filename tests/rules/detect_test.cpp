// The feature detectors (features/detect.h): each fires on its instruction and not on its
// look-alikes, on PTX, disassembly and source snippets; then every stage of tasks/gemm_cuda and
// the CPU experts and naives, really built, scored against tasks/gemm_cuda/lineage.toml (ground
// truth: read here, by the scorer, never by a detector).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>
#endif

#include "features/detect.h"
#include "gate/build.h"
#include "spec/bundle.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent::rules;

namespace {

// One PTX entry around `body` (instructions, one per line).
std::string ptx_entry(const std::string& body, const std::string& directives = "") {
  return ".version 9.0\n.target sm_90a\n.address_size 64\n\n"
         ".visible .entry _ZN41_GLOBAL__N__070f76fd_9_kernel_cu_5a2d699710gemm_naiveEPK13__nv_"
         "bfloat16S2_Pfiii(\n\t.param .u64 p0\n)\n" +
         directives + "{\n\t.reg .b32 %r<99>;\n" + body + "\n}\n";
}

const detection* find(const std::vector<detection>& ds, std::string_view name) {
  for (const auto& d : ds)
    if (d.what.name == name) return &d;
  return nullptr;
}

std::string param(const detection* d, const std::string& key) {
  if (!d) return "<no detection>";
  auto it = d->what.params.find(key);
  return it == d->what.params.end() ? "<unset>" : it->second;
}

kernel_bundle source_bundle(const std::string& text, language lang = language::cuda) {
  kernel_bundle b;
  b.name = "snippet";
  b.manifest.lang = lang;
  b.manifest.entry = lang == language::cuda ? "kernel.cu" : "kernel.cpp";
  b.manifest.files = {b.manifest.entry};
  b.sources[b.manifest.entry] = text;
  return b;
}

}  // namespace

TEST(detect_ptx, mma_sync_on_the_instruction_not_in_a_comment) {
  const auto hit = detect_ptx(ptx_entry(
      "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, "
      "%r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};"));
  const detection* d = find(hit, "mma_sync");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->what.method, detection_method::ptx);
  EXPECT_EQ(d->what.locus, "gemm_naive");  // demangled, namespace and parameters dropped
  EXPECT_EQ(param(d, "shape"), "m16n8k16");
  EXPECT_NE(d->evidence.find("ptx:10: mma.sync.aligned.m16n8k16"), std::string::npos)
      << d->evidence;

  EXPECT_TRUE(detect_ptx(ptx_entry("\t// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32\n"
                                   "\t/* wgmma.mma_async.sync.aligned.m64n128k16 */\n"
                                   "\tadd.f32 %f1, %f2, %f3;"))
                  .empty());
  const auto wmma = detect_ptx(
      ptx_entry("\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f1};"));
  EXPECT_EQ(param(find(wmma, "mma_sync"), "shape"), "m16n16k16");
}

TEST(detect_ptx, wgmma_tma_and_ldmatrix) {
  const auto ds = detect_ptx(ptx_entry(
      "\twgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd2, 1, 1, 1, "
      "0, 0;\n"
      "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], "
      "[%rd3, {%r2, %r3}], [%r4];\n"
      "\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r5, %r6, %r7, %r8}, [%r9];"));
  EXPECT_EQ(param(find(ds, "wgmma"), "shape"), "m64n128k16");
  EXPECT_NE(find(ds, "tma"), nullptr);
  EXPECT_NE(find(ds, "ldmatrix"), nullptr);
  EXPECT_EQ(find(ds, "cp_async_pipeline"), nullptr);  // a TMA copy is not a cp.async group
}

TEST(detect_ptx, warp_specialization_from_register_reallocation) {
  const auto ws = detect_ptx(ptx_entry("\tsetmaxnreg.dec.sync.aligned.u32 40;\n"
                                       "\tsetmaxnreg.inc.sync.aligned.u32 232;"));
  ASSERT_NE(find(ws, "warp_specialization"), nullptr);
  EXPECT_NE(find(ws, "warp_specialization")->evidence.find("setmaxnreg.dec"), std::string::npos);
  // TMA and mbarrier waits alone are no evidence of roles.
  const auto tma = detect_ptx(ptx_entry(
      "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], "
      "[%rd3, {%r2, %r3}], [%r4];\n"
      "\tmbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], %r5;"));
  EXPECT_EQ(find(tma, "warp_specialization"), nullptr);
}

TEST(detect_ptx, radix_select_counts_digits_in_shared_memory) {
  // A count of one added to the counter a digit picks: (key >> shift) & mask, scaled, plus base.
  const auto radix = detect_ptx(ptx_entry(
      "\tld.shared.u32 %r29, [%r15];\n"
      "\tshr.u32 %r188, %r29, %r19;\n"
      "\tshl.b32 %r189, %r188, 2;\n"
      "\tand.b32 %r190, %r189, 1020;\n"
      "\tadd.s32 %r192, %r177, %r190;\n"
      "\tatom.shared.add.u32 %r193, [%r192], 1;"));
  ASSERT_NE(find(radix, "radix_select"), nullptr);
  // A block sum through a shared atomic, and a count indexed by the thread, are no digit pass.
  const auto sum = detect_ptx(ptx_entry(
      "\tld.global.f32 %f1, [%rd1];\n"
      "\tmov.u32 %r1, %tid.x;\n"
      "\tshl.b32 %r2, %r1, 2;\n"
      "\tadd.s32 %r3, %r4, %r2;\n"
      "\tatom.shared.add.u32 %r5, [%r3], 1;\n"
      "\tatom.shared.add.f32 %f2, [%r4], %f1;"));
  EXPECT_EQ(find(sum, "radix_select"), nullptr);
  // A reduction (red) with the digit address counts too; adding a value that is not 1 does not.
  const auto red = detect_ptx(ptx_entry(
      "\tbfe.u32 %r2, %r1, 11, 11;\n"
      "\tshl.b32 %r3, %r2, 2;\n"
      "\tadd.s32 %r4, %r5, %r3;\n"
      "\tred.shared.add.u32 [%r4], 1;"));
  EXPECT_NE(find(red, "radix_select"), nullptr);
  const auto weighted = detect_ptx(ptx_entry(
      "\tbfe.u32 %r2, %r1, 11, 11;\n"
      "\tshl.b32 %r3, %r2, 2;\n"
      "\tadd.s32 %r4, %r5, %r3;\n"
      "\tred.shared.add.u32 [%r4], %r9;"));
  EXPECT_EQ(find(weighted, "radix_select"), nullptr);
}

TEST(detect_ptx, vector_access_is_global_and_wide) {
  const auto shared_only = detect_ptx(ptx_entry(
      "\tld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];\n\tst.shared.v2.f32 [%r1], {%f1, %f2};\n"
      "\tld.local.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];"));
  EXPECT_EQ(find(shared_only, "vector_access"), nullptr);
  const auto ds = detect_ptx(ptx_entry(
      "\tst.global.v2.f32 [%rd1], {%f1, %f2};\n"
      "\tld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];\n\tld.global.f32 %f9, [%rd3];"));
  const detection* v = find(ds, "vector_access");
  EXPECT_EQ(param(v, "width"), "128");
  EXPECT_NE(v->evidence.find("st.global.v2.f32"), std::string::npos);  // first evidence kept
  EXPECT_NE(find(ds, "read_only_load"), nullptr);
  const auto plain = detect_ptx(ptx_entry("\tld.global.f32 %f9, [%rd3];"));
  EXPECT_EQ(find(plain, "read_only_load"), nullptr);
}

TEST(detect_ptx, cp_async_pipeline_needs_groups_in_flight_and_counts_stages) {
  const std::string copy = "\tcp.async.cg.shared.global [%r1], [%rd1], 16, %r2;\n";
  const std::string four_stages = copy + "\tcp.async.commit_group;\n" + copy +
                                  "\tcp.async.commit_group;\n" + copy +
                                  "\tcp.async.commit_group;\n$L__BB0_1:\n"
                                  "\tcp.async.wait_group 2;\n\tbar.sync 0;\n" +
                                  copy + "\tcp.async.commit_group;\n\tcp.async.wait_group 0;";
  const auto ds = detect_ptx(ptx_entry(four_stages));
  const detection* p = find(ds, "cp_async_pipeline");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(param(p, "stages"), "4") << p->evidence;
  EXPECT_EQ(param(find(ds, "vector_access"), "width"), "128");  // 16-byte copies

  // Copy, commit, wait for everything: asynchronous, but nothing overlaps: no pipeline.
  const auto serial = detect_ptx(
      ptx_entry(copy + "\tcp.async.commit_group;\n\tcp.async.wait_group 0;\n\tbar.sync 0;"));
  EXPECT_EQ(find(serial, "cp_async_pipeline"), nullptr);
  // Double buffering: the next tile's copy is committed before the mma of this one, then
  // wait_group 0 at the top of the next iteration: two stages.
  const auto twice = detect_ptx(ptx_entry(
      copy + "\tcp.async.commit_group;\n$L__BB0_1:\n\tcp.async.wait_group 0;\n\tbar.sync 0;\n" +
      copy +
      "\tcp.async.commit_group;\n\tld.shared.f32 %f1, [%r3];\n"
      "\tfma.rn.f32 %f2, %f1, %f1, %f2;\n\t@%p1 bra $L__BB0_1;"));
  EXPECT_EQ(param(find(twice, "cp_async_pipeline"), "stages"), "2");
}

TEST(detect_ptx, warp_reduce_needs_a_shuffle_that_feeds_a_reduction) {
  const auto sum = detect_ptx(
      ptx_entry("\tshfl.sync.bfly.b32 %r34|%p9, %r30, %r32, %r31, %r33;\n\tmov.b32 %f167, %r34;\n"
                "\tadd.f32 %f168, %f296, %f167;"));
  EXPECT_NE(find(sum, "warp_reduce"), nullptr);
  const auto broadcast =
      detect_ptx(ptx_entry("\tshfl.sync.idx.b32 %r34|%p9, %r30, 0, 31, -1;\n\tmov.b32 %f1, %r34;\n"
                           "\tadd.f32 %f2, %f1, %f3;"));
  EXPECT_EQ(find(broadcast, "warp_reduce"), nullptr);
  const auto moved = detect_ptx(
      ptx_entry("\tshfl.sync.down.b32 %r34|%p9, %r30, 1, 31, -1;\n\tst.global.u32 [%rd1], %r34;"));
  EXPECT_EQ(find(moved, "warp_reduce"), nullptr);
}

TEST(detect_ptx, smem_tiling_stages_global_data_not_partial_sums) {
  const auto tile = detect_ptx(
      ptx_entry("\tld.global.nc.u16 %rs1, [%rd1];\n\t{ cvt.f32.bf16 %f1, %rs1;}\n"
                "\tst.shared.f32 [%r1], %f1;\n\tbar.sync 0;\n\tld.shared.f32 %f2, [%r2];\n"
                "\tfma.rn.f32 %f3, %f2, %f2, %f3;"));
  const detection* t = find(tile, "smem_tiling");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->evidence.find("st.shared.f32"), std::string::npos);
  // A block reduction: partial sums (arithmetic results) through shared memory.
  const auto reduce = detect_ptx(
      ptx_entry("\tld.global.nc.f32 %f1, [%rd1];\n\tadd.f32 %f2, %f1, %f9;\n"
                "\tst.shared.f32 [%r1], %f2;\n\tbar.sync 0;\n\tld.shared.f32 %f3, [%r2];"));
  EXPECT_EQ(find(reduce, "smem_tiling"), nullptr);
  // Staged but never synchronized: not a shared tile.
  const auto no_barrier = detect_ptx(ptx_entry(
      "\tld.global.f32 %f1, [%rd1];\n\tst.shared.f32 [%r1], %f1;\n\tld.shared.f32 %f2, [%r2];"));
  EXPECT_EQ(find(no_barrier, "smem_tiling"), nullptr);
}

TEST(detect_ptx, fast_math_only_for_approximations_a_precise_build_avoids) {
  // expf() without fast math: range reduction with fma.rm, then ex2.approx: precise.
  const auto precise = detect_ptx(
      ptx_entry("\tfma.rm.f32 %f54, %f53, %f38, %f37;\n\tfma.rn.f32 %f57, %f51, %f42, %f56;\n"
                "\tex2.approx.ftz.f32 %f60, %f57;\n\tdiv.rn.f32 %f61, %f60, %f2;"));
  EXPECT_EQ(find(precise, "fast_math"), nullptr);
  const auto fast_exp =
      detect_ptx(ptx_entry("\tmul.f32 %f2, %f1, 0f3FB8AA3B;\n\tex2.approx.ftz.f32 %f3, %f2;"));
  EXPECT_NE(find(fast_exp, "fast_math"), nullptr);
  EXPECT_NE(find(detect_ptx(ptx_entry("\tdiv.approx.f32 %f3, %f1, %f2;")), "fast_math"), nullptr);
  EXPECT_NE(find(detect_ptx(ptx_entry("\trsqrt.approx.f32 %f3, %f1;")), "fast_math"), nullptr);
}

TEST(detect_ptx, launch_bounds_from_maxntid_and_minnctapersm) {
  const auto ds = detect_ptx(ptx_entry("\tret;", ".maxntid 128, 1, 1\n.minnctapersm 2\n"));
  const detection* d = find(ds, "launch_bounds");
  EXPECT_EQ(param(d, "threads"), "128");
  EXPECT_EQ(param(d, "min_blocks"), "2");
  EXPECT_EQ(find(detect_ptx(ptx_entry("\tret;")), "launch_bounds"), nullptr);
}

TEST(detect_ptx, function_names) {
  EXPECT_EQ(short_function_name("_ZN41_GLOBAL__N__070f76fd_9_kernel_cu_5a2d699711gemm_expertEPK13__"
                                "nv_bfloat16S2_Pfiii"),
            "gemm_expert");
  EXPECT_EQ(short_function_name("(anonymous namespace)::micro_6x16(long, float const*, bool)"),
            "micro_6x16");
  EXPECT_EQ(short_function_name("lathe_launch._omp_fn.0"), "lathe_launch");
  EXPECT_EQ(short_function_name("void ns::f<4>(int) [clone .constprop.0]"), "f");
  EXPECT_EQ(short_function_name("plain_kernel"), "plain_kernel");
}

namespace {
const char* const objdump_text = R"(
kernel.so:     file format elf64-x86-64

Disassembly of section .plt:

0000000000001080 <GOMP_parallel@plt>:
    1080:	jmp    *0x3fa2(%rip)        # 5028 <GOMP_parallel@GOMP_4.0>

Disassembly of section .text:

00000000000010a0 <frame_dummy>:
    10a0:	vaddps %ymm0,%ymm1,%ymm2

0000000000001160 <(anonymous namespace)::micro_6x16(long, float const*, float*)>:
    1160:	vxorps %xmm0,%xmm0,%xmm0
    1164:	vmovups (%rsi),%ymm1
    1168:	vfmadd231ps %ymm1,%ymm2,%ymm0
    116d:	vaddss %xmm1,%xmm0,%xmm0

00000000000019d0 <lathe_launch._omp_fn.0>:
    19d0:	call   1040 <GOMP_loop_nonmonotonic_dynamic_start@plt>
    19d5:	vfmadd231ss %xmm1,%xmm2,%xmm0

0000000000002580 <lathe_launch>:
    2580:	call   1080 <GOMP_parallel@plt>
    2585:	vxorps %xmm0,%xmm0,%xmm0

0000000000002600 <scalar_only(float const*)>:
    2600:	vaddss %xmm1,%xmm0,%xmm0
    2604:	vfmadd231ss %xmm1,%xmm2,%xmm0
    2609:	vmulsd %xmm1,%xmm2,%xmm0
    260d:	vmovaps %xmm1,%xmm0
    2611:	vshufps $0x55,%xmm0,%xmm0,%xmm2

0000000000002700 <wide(float*)>:
    2700:	vaddps %zmm1,%zmm2,%zmm0
    2706:	addps  %xmm1,%xmm0
)";
}  // namespace

TEST(detect_disassembly, packed_arithmetic_is_simd_scalar_and_moves_are_not) {
  const auto ds = detect_disassembly(objdump_text);
  std::map<std::string, const detection*> simd;
  for (const auto& d : ds)
    if (d.what.name == "simd") simd[d.what.locus] = &d;
  ASSERT_TRUE(simd.count("micro_6x16"));
  EXPECT_EQ(simd["micro_6x16"]->what.method, detection_method::disassembly);
  EXPECT_EQ(param(simd["micro_6x16"], "width"), "256");
  EXPECT_NE(simd["micro_6x16"]->evidence.find("0x1168: vfmadd231ps"), std::string::npos);
  EXPECT_NE(simd["micro_6x16"]->evidence.find("fma: 1 packed"), std::string::npos);
  EXPECT_FALSE(simd.count("scalar_only"));   // vaddss, vfmadd231ss, vmulsd, moves, shuffles
  EXPECT_FALSE(simd.count("lathe_launch"));  // vxorps zeroing and a scalar fma
  EXPECT_FALSE(simd.count("frame_dummy"));   // linker-added code is not the kernel's
  EXPECT_EQ(param(simd["wide"], "width"), "512");
}

TEST(detect_disassembly, omp_parallel_from_runtime_calls_outlined_bodies_fold_in) {
  const auto ds = detect_disassembly(objdump_text);
  const detection* omp = find(ds, "omp_parallel");
  ASSERT_NE(omp, nullptr);
  EXPECT_EQ(omp->what.locus, "lathe_launch");
  EXPECT_EQ(param(omp, "schedule"), "dynamic");  // from the outlined body's loop entry
  EXPECT_NE(omp->evidence.find("0x2580: call"), std::string::npos) << omp->evidence;
  int n = 0;
  for (const auto& d : ds) n += d.what.name == "omp_parallel";
  EXPECT_EQ(n, 1);  // the .plt stub's jmp is not a second team
}

TEST(detect_source, pragmas_restrict_launch_bounds_and_register_tiles) {
  const auto ds = detect_source(source_bundle(R"(
// #pragma unroll 8 in a comment, and __launch_bounds__(64) too
constexpr int TM = 8, TN = 8;
__global__ void __launch_bounds__(256, 2) k(const float* __restrict__ a, float* __restrict__ c, int n) {
  __shared__ float tile[TM][TN];
  float acc[TM][TN];
  float one[TN];
  for (int k0 = 0; k0 < n; ++k0) {
#pragma unroll 4
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], tile[i][j], acc[i][j]);
  }
#if 0
#pragma unroll 2
  for (int q = 0; q < 4; ++q) one[q] = 0;
#endif
#pragma unroll 1
  for (int q = 0; q < TN; ++q) one[q] += a[q];
  const char* s = "asm mma.sync";
  c[0] = acc[0][0] + one[0] + tile[0][0] + s[0];
}
)"));
  std::vector<std::string> unroll;
  for (const auto& d : ds)
    if (d.what.name == "loop_unroll") unroll.push_back(d.what.locus + "=" + param(&d, "factor"));
  EXPECT_EQ(unroll, (std::vector<std::string>{"k/k0/i=4", "k/k0/i/j=full"}));
  EXPECT_NE(find(ds, "restrict"), nullptr);
  EXPECT_EQ(find(ds, "restrict")->what.method, detection_method::source);
  EXPECT_EQ(param(find(ds, "launch_bounds"), "threads"), "256");
  EXPECT_EQ(param(find(ds, "launch_bounds"), "min_blocks"), "2");
  const detection* rt = find(ds, "register_tiling");
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(param(rt, "tile"), "TMxTN");
  EXPECT_NE(rt->evidence.find("kernel.cu:12:"), std::string::npos) << rt->evidence;
  EXPECT_EQ(find(ds, "mma_sync"), nullptr);  // a string outside asm is not PTX
}

TEST(detect_source, register_tiling_needs_an_accumulated_2d_local) {
  const auto none = detect_source(source_bundle(R"(
__global__ void k(const float* a, float* c, int n) {
  __shared__ float s[8][8];
  float acc = 0.0f;
  float v[8];
  for (int i = 0; i < n; ++i) { acc += a[i]; v[i % 8] += acc; s[i % 8][0] = s[0][i % 8] + 1; }
  c[0] = acc + v[0] + s[0][0];
}
)"));
  EXPECT_EQ(find(none, "register_tiling"), nullptr);
  // A reference to the accumulator tile, handed to an mma helper in a loop (the expert's shape).
  const auto mma = detect_source(source_bundle(R"(
__device__ void tile(float (&acc)[4][8][4], const unsigned (&a)[4]) {
  for (int mt = 0; mt < 4; ++mt)
    for (int nt = 0; nt < 8; ++nt) mma16816(acc[mt][nt], a);
}
)"));
  EXPECT_EQ(param(find(mma, "register_tiling"), "tile"), "4x8x4");
}

TEST(detect_source, cpu_intrinsics_and_openmp) {
  const auto ds = detect_source(source_bundle(R"(
#include <immintrin.h>
void f(const float* __restrict x, float* y, long n) {
#pragma omp parallel for schedule(dynamic, 4)
  for (long i = 0; i < n; i += 8) _mm256_storeu_ps(y + i, _mm256_loadu_ps(x + i));
}
)",
                                              language::cpp));
  EXPECT_EQ(param(find(ds, "simd"), "width"), "256");
  EXPECT_EQ(param(find(ds, "vector_access"), "width"), "256");
  EXPECT_EQ(param(find(ds, "omp_parallel"), "schedule"), "dynamic");
  EXPECT_NE(find(ds, "restrict"), nullptr);
}

TEST(detect_features, artifact_first_source_for_the_rest_and_disagreements_noted) {
  // The source asks for mma.sync in asm; the PTX (say, of a build where that asm sat in a dead
  // branch) has none: absent, with a note. __restrict__ cannot be seen in PTX: from source.
  const kernel_bundle b = source_bundle(R"(
__global__ void k(float* __restrict__ c) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, {%1}, {%2}, {%0};" : "+f"(c[0]));
}
)");
  artifact a;
  a.ptx = ptx_entry("\tld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];");
  const detections ds = detect_features(b, a);
  EXPECT_FALSE(ds.has("mma_sync"));
  ASSERT_FALSE(ds.notes.empty());
  EXPECT_NE(ds.notes[0].find("mma_sync: the source suggests it (kernel.cu:3:"), std::string::npos)
      << ds.notes[0];
  ASSERT_TRUE(ds.has("restrict"));
  EXPECT_EQ(ds.find("restrict")->what.method, detection_method::source);
  EXPECT_EQ(ds.find("vector_access")->what.method, detection_method::ptx);

  // Without an artifact, the source stands in (and says so).
  const detections fallback = detect_features(b, artifact{});
  ASSERT_TRUE(fallback.has("mma_sync"));
  EXPECT_EQ(fallback.find("mma_sync")->what.method, detection_method::source);
  EXPECT_NE(fallback.notes.at(0).find("not detected on the artifact"), std::string::npos);
}

TEST(detect_features, objdump_missing_is_reported_never_faked) {
  const char* old = getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent-lathe-dir", 1);
  artifact a;
  a.object = "/nonexistent/kernel.so";
  const detections ds =
      detect_features(source_bundle("void f(float* x) {\n#pragma omp parallel for\n for (int i = "
                                    "0; i < 4; ++i) x[i] = 0;\n}\n",
                                    language::cpp),
                      a);
  setenv("PATH", saved.c_str(), 1);
  ASSERT_FALSE(ds.notes.empty());
  EXPECT_EQ(ds.notes[0], "not detected on the artifact: objdump missing");
  ASSERT_TRUE(ds.has("omp_parallel"));  // the source fallback
  EXPECT_EQ(ds.find("omp_parallel")->what.method, detection_method::source);
}

// ---- The real builds, scored against the staged lineage -------------------------------------

namespace {

struct stage {
  std::string kernel;
  std::vector<std::string> adds, replaces, has;  // has: what a first stage holds (stage B)
};

std::vector<stage> read_lineage(const fs::path& file) {
  std::vector<stage> out;
  auto parsed = toml::parse_file(file.string());
  if (!parsed) return out;
  const toml::table& t = parsed.table();
  if (const toml::array* stages = t["stages"].as_array())
    for (const auto& s : *stages) {
      const toml::table* st = s.as_table();
      if (!st) continue;
      stage x;
      x.kernel = (*st)["kernel"].value_or(std::string());
      if (const toml::array* adds = (*st)["adds"].as_array())
        for (const auto& a : *adds) x.adds.push_back(a.value_or(std::string()));
      if (const toml::array* gone = (*st)["replaces"].as_array())
        for (const auto& a : *gone) x.replaces.push_back(a.value_or(std::string()));
      if (const toml::array* has = (*st)["has"].as_array())
        for (const auto& a : *has) x.has.push_back(a.value_or(std::string()));
      out.push_back(x);
    }
  return out;
}

class real_builds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tc = gate::detect_toolchain(fs::path(LATHE_SOURCE_DIR) / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    tc_ = *tc;
    // Content-addressed and hash-checked (gate/build.h): reused across runs of this test.
    cache_ = fs::path(LATHE_BINARY_DIR) / "tests" / "rules" / "detect-cache";
  }

  static result<gate::build_output> build_of(const kernel_bundle& b) {
    const std::string isa =
        b.manifest.isa.empty() ? gate::resolved_isa(b, target{}) : b.manifest.isa;
    return gate::build(b, isa, tc_, cache_, gate::build_kind::kernel);
  }

  // Scores the stages of tasks/<task_name>/lineage_hopper.toml (defined below).
  static void score_hopper_stages(const char* task_name, size_t n_stages);

  static detections detect(const fs::path& dir, kernel_bundle* out_bundle = nullptr) {
    auto b = load_bundle(dir);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    if (!b) return {};
    auto built = build_of(*b);
    EXPECT_TRUE(built && built->ok) << dir << ": " << (built ? built->log : built.error().message);
    if (!built || !built->ok) return {};
    artifact a;
    a.ptx = built->ptx;
    if (b->manifest.lang == language::cpp) a.object = built->object;
    if (out_bundle) *out_bundle = *b;
    return detect_features(*b, a);
  }

  static std::string method_of(const detections& ds, const std::string& name) {
    const detection* d = ds.find(name);
    return d ? to_string(d->what.method) : "-";
  }

  static inline gate::toolchain tc_;
  static inline fs::path cache_;
};

}  // namespace

TEST_F(real_builds, gemm_cuda_lineage_scored) {
  if (tc_.nvcc.empty())
    GTEST_SKIP() << "nvcc not found (the CUDA toolkit at /usr/local/cuda): "
                    "the CUDA stages cannot be built here";
  const fs::path task = fs::path(LATHE_SOURCE_DIR) / "tasks" / "gemm_cuda";
  const std::vector<stage> stages = read_lineage(task / "lineage.toml");
  ASSERT_EQ(stages.size(), 6u);
  // Precision is over the lineage's vocabulary: the lineage names one mechanism per step, so a
  // detector that finds __restrict__ or launch bounds (present, but not what a step added) is
  // not wrong; those are printed as "other".
  std::set<std::string> vocabulary;
  for (const auto& s : stages) vocabulary.insert(s.adds.begin(), s.adds.end());

  std::set<std::string> truth;
  std::map<std::string, detections> by_stage;
  int32_t tp_all = 0, fp_all = 0, fn_all = 0;
  std::printf("\n%-15s %-9s %-9s %s\n", "stage", "precision", "recall",
              "detected (method) | other");
  for (const auto& s : stages) {
    const auto t0 = std::chrono::steady_clock::now();
    truth.insert(s.adds.begin(), s.adds.end());
    const detections ds = detect(task / "kernels" / s.kernel);
    by_stage[s.kernel] = ds;
    int32_t tp = 0, fp = 0;
    std::string found, other;
    for (const auto& name : ds.names()) {
      const std::string tag = name + "(" + method_of(ds, name) + ")";
      if (!vocabulary.count(name)) {
        other += " " + tag;
        continue;
      }
      found += " " + tag;
      (truth.count(name) ? tp : fp) += 1;
    }
    const int32_t fn = static_cast<int32_t>(truth.size()) - tp;
    tp_all += tp, fp_all += fp, fn_all += fn;
    const auto ratio = [](int32_t a, int32_t b) {
      return b == 0 ? std::string("n/a") : std::to_string(double(a) / b).substr(0, 4);
    };
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-15s %-9s %-9s%s |%s  [%.1f s]\n", s.kernel.c_str(), ratio(tp, tp + fp).c_str(),
                ratio(tp, tp + fn).c_str(), found.c_str(), other.c_str(), secs);
    for (const auto& n : ds.notes) std::printf("    note: %s\n", n.c_str());
    for (const auto& name : truth) EXPECT_TRUE(ds.has(name)) << s.kernel << " misses " << name;
    for (const auto& name : ds.names()) {
      if (vocabulary.count(name)) {
        EXPECT_TRUE(truth.count(name)) << s.kernel << " claims " << name;
      }
    }
  }
  std::printf("all stages: %d true, %d false positives, %d missed\n", tp_all, fp_all, fn_all);

  // What each step's mechanism is seen by, and its parameters.
  const detections& naive = by_stage["naive"];
  for (const char* n : {"smem_tiling", "register_tiling", "vector_access", "mma_sync", "ldmatrix",
                        "cp_async_pipeline"})
    EXPECT_FALSE(naive.has(n)) << n;
  EXPECT_EQ(method_of(by_stage["stage1_smem"], "smem_tiling"), "ptx");
  EXPECT_EQ(method_of(by_stage["stage2_regtile"], "register_tiling"), "source");
  EXPECT_EQ(method_of(by_stage["stage3_vector"], "vector_access"), "ptx");
  EXPECT_EQ(param(by_stage["stage3_vector"].find("vector_access"), "width"), "128");
  EXPECT_EQ(method_of(by_stage["stage4_mma"], "mma_sync"), "ptx");
  EXPECT_EQ(param(by_stage["stage4_mma"].find("mma_sync"), "shape"), "m16n8k16");
  EXPECT_EQ(method_of(by_stage["stage4_mma"], "ldmatrix"), "ptx");
  EXPECT_EQ(method_of(by_stage["expert"], "cp_async_pipeline"), "ptx");
  EXPECT_EQ(param(by_stage["expert"].find("cp_async_pipeline"), "stages"), "4");
  EXPECT_EQ(param(by_stage["expert"].find("launch_bounds"), "min_blocks"), "2");
  EXPECT_EQ(by_stage["expert"].find("mma_sync")->what.locus, "gemm_expert");
}

// The mechanisms of the Hopper and top-k series that only their stages hold, on real nvcc
// builds: radix_select appears with the radix stage (not in the bitonic sort before it), and
// warp_specialization with the TMA stage's producer/consumer warpgroups (not in the wgmma stage
// fed by cp.async).
TEST_F(real_builds, radix_select_and_warp_specialization_on_their_stages) {
  if (tc_.nvcc.empty()) GTEST_SKIP() << "nvcc not found: the CUDA stages cannot be built here";
  const fs::path tasks = fs::path(LATHE_SOURCE_DIR) / "tasks";
  const detections bitonic = detect(tasks / "topk_cuda/kernels/stage1_bitonic");
  const detections radix = detect(tasks / "topk_cuda/kernels/stage2_radix");
  const detections wgmma = detect(tasks / "gemm_cuda/kernels/stage5_wgmma");
  const detections ws = detect(tasks / "gemm_cuda/kernels/stage6_tma_ws");
  EXPECT_FALSE(bitonic.has("radix_select"));
  EXPECT_EQ(method_of(radix, "radix_select"), "ptx");
  EXPECT_FALSE(wgmma.has("warp_specialization"));
  EXPECT_TRUE(wgmma.has("wgmma"));
  EXPECT_TRUE(wgmma.has("cp_async_pipeline"));
  EXPECT_EQ(method_of(ws, "warp_specialization"), "ptx");
  EXPECT_TRUE(ws.has("tma"));
  EXPECT_TRUE(ws.has("wgmma"));
  EXPECT_FALSE(ws.has("cp_async_pipeline"));
  for (const auto* d : {&bitonic, &radix, &wgmma, &ws})
    EXPECT_FALSE(d->has("mma_sync"));
}

// Stage B (tasks/{gemm,fmha}_cuda/lineage_hopper.toml): stages that replace mechanisms. After
// each stage the truth is what the first stage holds plus what the stages so far added, minus
// what they replaced; within the file's vocabulary every stage must show exactly its truth.
void real_builds::score_hopper_stages(const char* task_name, size_t n_stages) {
  const fs::path task = fs::path(LATHE_SOURCE_DIR) / "tasks" / task_name;
  const std::vector<stage> stages = read_lineage(task / "lineage_hopper.toml");
  ASSERT_EQ(stages.size(), n_stages);
  std::set<std::string> vocabulary, truth;
  for (const auto& s : stages) {
    vocabulary.insert(s.adds.begin(), s.adds.end());
    vocabulary.insert(s.replaces.begin(), s.replaces.end());
    vocabulary.insert(s.has.begin(), s.has.end());
  }
  for (const auto& s : stages) {
    truth.insert(s.has.begin(), s.has.end());
    truth.insert(s.adds.begin(), s.adds.end());
    for (const auto& r : s.replaces)
      EXPECT_TRUE(truth.erase(r)) << s.kernel << " replaces " << r << ", which no stage before held";
    const detections ds = detect(task / "kernels" / s.kernel);
    std::string seen;
    for (const auto& name : ds.names())
      if (vocabulary.count(name)) seen += " " + name;
    std::printf("%-15s%s\n", s.kernel.c_str(), seen.c_str());
    for (const auto& name : vocabulary)
      EXPECT_EQ(ds.has(name), truth.count(name) > 0) << task_name << "/" << s.kernel << ": " << name;
  }
}

TEST_F(real_builds, gemm_hopper_stages_scored) {
  if (tc_.nvcc.empty()) GTEST_SKIP() << "nvcc not found: the CUDA stages cannot be built here";
  score_hopper_stages("gemm_cuda", 3);
}

TEST_F(real_builds, fmha_hopper_stages_scored) {
  if (tc_.nvcc.empty()) GTEST_SKIP() << "nvcc not found: the CUDA stages cannot be built here";
  score_hopper_stages("fmha_cuda", 2);
}

TEST_F(real_builds, cpu_experts_and_naives) {
  const fs::path tasks = fs::path(LATHE_SOURCE_DIR) / "tasks";
  std::map<std::string, detections> found;
  for (const char* t : {"gemm", "softmax", "conv2d"})
    for (const char* k : {"naive", "expert"}) {
      const std::string key = std::string(t) + "/" + k;
      found[key] = detect(tasks / t / "kernels" / k);
      std::string line;
      for (const auto& d : found[key].found)
        line += " " + d.what.name + "@" + d.what.locus + "(" + to_string(d.what.method) +
                (d.what.params.count("width") ? "," + d.what.params.at("width") : "") + ")";
      std::printf("%-15s%s\n", key.c_str(), line.c_str());
      for (const auto& n : found[key].notes) std::printf("    note: %s\n", n.c_str());
    }
  for (const char* t : {"gemm", "softmax", "conv2d"}) {
    const detections& expert = found[std::string(t) + "/expert"];
    const detections& naive = found[std::string(t) + "/naive"];
    EXPECT_EQ(method_of(expert, "omp_parallel"), "disassembly") << t;
    EXPECT_EQ(method_of(expert, "simd"), "disassembly") << t;
    EXPECT_EQ(param(expert.find("simd"), "width"), "256") << t;
    EXPECT_FALSE(naive.has("omp_parallel")) << t;
    // The naives hold no intrinsics; whatever vector code they have the compiler made.
    if (const detection* s = naive.find("simd")) {
      EXPECT_NE(s->evidence.find("compiler vectorized on its own"), std::string::npos) << t;
    }
  }
  EXPECT_EQ(method_of(found["conv2d/expert"], "register_tiling"), "source");
  EXPECT_EQ(method_of(found["conv2d/expert"], "loop_unroll"), "source");
}
