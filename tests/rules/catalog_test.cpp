// The rule catalog (agent/rules/catalog.h): each family on small hostile sources (pragma text in
// comments and strings, #if 0 branches, lambdas, templates, launches), then on every shipped
// expert: backward sites remove the feature (checked with detect_source), round trips give it
// back, carriers replay on other kernels, and every backward result of a CPU expert (and a few
// CUDA ones when nvcc is there) really compiles through the gate's build. Prints the coverage
// table: per expert, which detected features the engine can remove and re-add.
#include "agent/rules/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/edit.h"
#include "features/detect.h"
#include "core/feature_registry.h"
#include "gate/build.h"
#include "spec/bundle.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent::rules;

namespace {

kernel_bundle snippet(const std::string& text, language lang = language::cuda,
                      std::vector<std::string> flags = {"-O3"}) {
  kernel_bundle b;
  b.name = "snippet";
  b.manifest.lang = lang;
  b.manifest.entry = lang == language::cuda ? "kernel.cu" : "kernel.cpp";
  b.manifest.files = {b.manifest.entry};
  b.manifest.flags = std::move(flags);
  b.sources[b.manifest.entry] = text;
  b.hash = bundle_hash(b);
  return b;
}

const std::string& src(const kernel_bundle& b) {
  return b.sources.at(b.manifest.entry);
}

std::vector<rule_site> sites_of(const std::string& rule, const kernel_bundle& b) {
  const struct rule* r = find_rule(rule);
  EXPECT_NE(r, nullptr) << rule;
  return r ? r->sites(b) : std::vector<rule_site>{};
}

result<rule_result> apply_rule(const std::string& rule, const kernel_bundle& b,
                               const std::string& anchor,
                               std::map<std::string, std::string> params = {}) {
  return find_rule(rule)->apply(b, {rule, anchor, std::move(params)});
}

bool source_has(const kernel_bundle& b, const std::string& feature) {
  for (const auto& d : detect_source(b))
    if (d.what.name == feature) return true;
  return false;
}

const std::vector<std::string> kCpuExperts = {"gemm", "softmax", "conv2d"};
const std::vector<std::string> kCudaExperts = {"gemm_cuda", "reduction_cuda", "relu_cuda",
                                               "rmsnorm_cuda", "softmax_cuda"};

kernel_bundle expert(const std::string& task) {
  auto b = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks" / task / "kernels" / "expert");
  EXPECT_TRUE(b) << task << ": " << (b ? "" : b.error().message);
  return b ? *b : kernel_bundle{};
}

}  // namespace

TEST(catalog, names_directions_and_features) {
  std::set<std::string> names;
  for (const rule* r : catalog()) {
    const std::string n(r->name());
    EXPECT_TRUE(names.insert(n).second) << "duplicate " << n;
    const bool back = n.ends_with(".remove");
    EXPECT_TRUE(back || n.ends_with(".add")) << n;
    EXPECT_EQ(r->direction(), back ? rule_direction::backward : rule_direction::forward) << n;
    if (!r->feature().empty()) {
      EXPECT_NE(find_feature(r->feature()), nullptr) << n;
    }
    EXPECT_FALSE(r->description().empty());
    EXPECT_FALSE(r->preconditions().empty());
    EXPECT_EQ(find_rule(n), r);
    // Every backward rule has its forward partner.
    const std::string stem = n.substr(0, n.rfind('.'));
    EXPECT_NE(find_rule(stem + (back ? ".add" : ".remove")), nullptr) << n;
  }
  EXPECT_EQ(find_rule("no_such.rule"), nullptr);
  EXPECT_GE(names.size(), 20u);
}

TEST(catalog, carrier_json_round_trip) {
  const rule_invocation inv{"loop_unroll.add", "loop:k/i", {{"factor", "4"}}};
  auto back = from_carrier(to_carrier(inv));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, inv);
  EXPECT_FALSE(from_carrier("{\"anchor\": 1}"));
  EXPECT_FALSE(from_carrier("not json"));
}

TEST(hostile, unroll_pragmas_in_comments_strings_and_dead_branches) {
  const auto b = snippet(R"(// #pragma unroll 4
const char* s = "#pragma unroll";
__global__ void k(float* y) {
  /* #pragma unroll */
#pragma unroll 4
  for (int i = 0; i < 8; ++i) y[i] = 0;
#if 0
#pragma unroll
  for (int j = 0; j < 8; ++j) y[j] = 1;
#endif
  auto f = [&](int n) {
#pragma unroll
    for (int q = 0; q < 4; ++q) y[q] += n;
  };
  f(1);
}
)");
  const auto sites = sites_of("loop_unroll.remove", b);
  ASSERT_EQ(sites.size(), 3u);  // the real one, the #if 0 one, the lambda's loop (in k)
  EXPECT_EQ(sites[0].anchor, "pragma:unroll@k/i");
  EXPECT_EQ(sites[0].where, branch::active);
  EXPECT_EQ(sites[1].where, branch::inactive);
  auto dead = apply_rule("loop_unroll.remove", b, sites[1].anchor);
  ASSERT_FALSE(dead);
  EXPECT_EQ(dead.error().code, errc::unsupported) << dead.error().message;
  // Not listed by default, listed on request.
  size_t listed = 0, with_dead = 0;
  for (const auto& a : applicable(b, rule_direction::backward))
    listed += a.what->name() == "loop_unroll.remove";
  for (const auto& a : applicable(b, rule_direction::backward, {false, true}))
    with_dead += a.what->name() == "loop_unroll.remove";
  EXPECT_EQ(listed + 1, with_dead);

  auto r = apply_rule("loop_unroll.remove", b, "pragma:unroll@k/i");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(src(r->kernel).find("#pragma unroll 4\n  for"), std::string::npos);
  EXPECT_NE(src(r->kernel).find("// #pragma unroll 4"), std::string::npos);  // comment kept
  EXPECT_NE(src(r->kernel).find("\"#pragma unroll\""), std::string::npos);   // string kept
  EXPECT_NE(r->edits.find("<<<<<<< SEARCH"), std::string::npos);
  EXPECT_EQ(r->removes, std::vector<std::string>{"loop_unroll"});
  EXPECT_EQ(r->locus, "k/i");
  // Forward at the inverse anchor gives the original back, byte for byte.
  ASSERT_EQ(r->inverse.rule, "loop_unroll.add");
  auto again = find_rule("loop_unroll.add")->apply(r->kernel, r->inverse);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(src(again->kernel), src(b));
}

TEST(hostile, unroll_add_needs_a_constant_trip_count) {
  const auto b = snippet(R"(constexpr int T = 4;
template <int N>
__device__ void d(float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] = 0;
  for (int j = 0; j < T * 2; ++j) y[j] = 1;
  for (int q = 0; q < N; ++q) y[q] = 2;
}
void host(float* y) { for (int i = 0; i < 4; ++i) y[i] = 0; }
)");
  std::vector<std::string> anchors;
  for (const auto& s : sites_of("loop_unroll.add", b)) anchors.push_back(s.anchor);
  EXPECT_EQ(anchors, (std::vector<std::string>{"loop:d/j", "loop:d/q"}));
  EXPECT_FALSE(apply_rule("loop_unroll.add", b, "loop:d/i"));
  auto r = apply_rule("loop_unroll.add", b, "loop:d/j", {{"factor", "2"}});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(src(r->kernel).find("  #pragma unroll 2\n  for (int j"), std::string::npos);
  EXPECT_FALSE(apply_rule("loop_unroll.add", b, "loop:d/j", {{"factor", "x"}}));
  const auto cpu =
      snippet("void f(float* y) {\n  for (int i = 0; i < 16; ++i) y[i] = 0;\n}\n", language::cpp);
  auto g = apply_rule("loop_unroll.add", cpu, "loop:f/i");
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_NE(src(g->kernel).find("#pragma GCC unroll 4"), std::string::npos);
}

TEST(hostile, restrict_on_parameters_of_templates_not_lambdas_not_the_abi_entry) {
  const auto b = snippet(R"(template <class T>
__global__ void k(const T* __restrict__ x, T* y, T& r, void (*fp)(int)) {
  auto l = [](float* __restrict__ p) { p[0] = 0; };
  y[0] = x[0];
}
extern "C" int lathe_launch(const lathe_args* args) { return 0; }
)");
  std::vector<std::string> rem, add;
  for (const auto& s : sites_of("restrict.remove", b)) rem.push_back(s.anchor);
  for (const auto& s : sites_of("restrict.add", b)) add.push_back(s.anchor);
  EXPECT_EQ(rem, std::vector<std::string>{"param:k/x"});
  EXPECT_EQ(add, std::vector<std::string>{"param:k/y"});
  auto r = apply_rule("restrict.remove", b, "param:k/x");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(src(r->kernel).find("k(const T* x, T* y"), std::string::npos);
  EXPECT_FALSE(source_has(r->kernel, "restrict") &&
               src(r->kernel).find("k(const T* __restrict__") != std::string::npos);
  auto back = find_rule(r->inverse.rule)->apply(r->kernel, r->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(src(back->kernel), src(b));
  auto a = apply_rule("restrict.add", b, "param:k/y");
  ASSERT_TRUE(a);
  EXPECT_NE(src(a->kernel).find("T* __restrict__ y"), std::string::npos);
  EXPECT_FALSE(a->assumed.empty());
  EXPECT_FALSE(apply_rule("restrict.add", b, "param:k/r"));
}

TEST(hostile, launch_bounds_from_the_launch_block_size) {
  const auto b = snippet(R"(constexpr int THREADS = 128;
__global__ void a(float* y) { y[0] = 0; }
__global__ void __launch_bounds__(THREADS, 2) c(float* y) { y[0] = 0; }
__global__ void d(float* y) { y[0] = 0; }
void host(float* y, cudaStream_t s) {
  a<<<4, THREADS, 0, s>>>(y);
  dim3 block(16, 16);
  d<<<1, block>>>(y);
}
)");
  const auto add = sites_of("launch_bounds.add", b);
  ASSERT_EQ(add.size(), 2u);
  EXPECT_EQ(add[0].params.at("threads"), "THREADS");
  EXPECT_EQ(add[1].params.at("threads"), "");
  auto r = apply_rule("launch_bounds.add", b, "function:a");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(src(r->kernel).find("void __launch_bounds__(THREADS) a("), std::string::npos);
  auto need = apply_rule("launch_bounds.add", b, "function:d");
  ASSERT_FALSE(need);
  EXPECT_NE(need.error().message.find("threads=N"), std::string::npos);
  EXPECT_TRUE(apply_rule("launch_bounds.add", b, "function:d", {{"threads", "256"}}));
  auto rm = apply_rule("launch_bounds.remove", b, "function:c");
  ASSERT_TRUE(rm) << rm.error().message;
  EXPECT_NE(src(rm->kernel).find("__global__ void c(float* y)"), std::string::npos);
  EXPECT_EQ(rm->inverse.params.at("args"), "THREADS, 2");
}

TEST(hostile, fast_math_needs_permission_and_round_trips_rsqrtf) {
  const auto b = snippet(R"(__device__ float f(float x, float y) {
  return __expf(x) + rsqrtf(y) + __fdividef(x, y) + x / 1.0f / sqrtf(y);
}
float host(float x) { return expf(x); }
)");
  EXPECT_EQ(sites_of("fast_math.remove", b).size(), 3u);
  auto r = apply_rule("fast_math.remove", b, "call:rsqrtf@f");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(src(r->kernel).find("(1.0f / sqrtf(y))"), std::string::npos);
  auto denied =
      find_rule("fast_math.add")->apply(r->kernel, {"fast_math.add", r->inverse.anchor, {}});
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, errc::unsupported);
  auto back = find_rule("fast_math.add")->apply(r->kernel, r->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(src(back->kernel), src(b));
  // `x / 1.0f / sqrtf(y)` is no reciprocal square root; host code gets no intrinsic.
  for (const auto& s : sites_of("fast_math.add", b))
    EXPECT_EQ(s.anchor.find("@host"), std::string::npos);
  auto div = apply_rule("fast_math.remove", b, "call:__fdividef@f");
  ASSERT_TRUE(div);
  EXPECT_NE(src(div->kernel).find("((x) / (y))"), std::string::npos);
  EXPECT_TRUE(applicable(b, rule_direction::forward).size() <
              applicable(b, rule_direction::forward, {true, false}).size());
}

TEST(hostile, cp_async_copies_become_synchronous_and_come_back) {
  const auto b = snippet(R"(#include <cstdint>
// asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(s));
__device__ void copy16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__device__ void copy4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src));
}
__device__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ void wait() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
#if 0
__device__ void dead(uint32_t d, const void* s) { asm("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(s)); }
#endif
__device__ void hinted(uint32_t d, const void* s, uint64_t p) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(d), "l"(s), "l"(p));
}
const char* not_asm = "cp.async.cg.shared.global [%0], [%1], 16;";
)");
  ASSERT_TRUE(source_has(b, "cp_async_pipeline"));
  // One site per function holding copies (the dead branch, the comment and the plain string are
  // none); commits and waits are no copies.
  std::vector<std::string> anchors;
  for (const auto& s : sites_of("cp_async_pipeline.remove", b))
    if (s.where == branch::active) anchors.push_back(s.anchor);
  EXPECT_EQ(anchors, (std::vector<std::string>{"function:copy16", "function:copy4",
                                               "function:hinted"}));
  auto r = apply_rule("cp_async_pipeline.remove", b, "function:copy16");
  ASSERT_TRUE(r) << r.error().message;
  const std::string& out = src(r->kernel);
  EXPECT_NE(out.find("@%%lathe_copy ld.global.cg.v4.b32 {%%lathe_w0, %%lathe_w1, %%lathe_w2, "
                     "%%lathe_w3}, [%1];"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("st.shared.v4.b32 [%0], {%%lathe_w0"), std::string::npos);
  EXPECT_NE(out.find("@%%lathe_bad trap;"), std::string::npos);  // src_size neither 0 nor 16
  EXPECT_EQ(r->removes, (std::vector<std::string>{"cp_async_pipeline"}));
  // The 4-byte .ca copy: one register, no predicate.
  auto r4 = apply_rule("cp_async_pipeline.remove", r->kernel, "function:copy4");
  ASSERT_TRUE(r4) << r4.error().message;
  EXPECT_NE(src(r4->kernel).find("ld.global.ca.b32 %%lathe_w0, [%1];"), std::string::npos);
  EXPECT_NE(src(r4->kernel).find("st.shared.b32 [%0], %%lathe_w0;"), std::string::npos);
  // A cache-policy operand is not a copy this rule rewrites: refused, naming the line.
  auto hinted = apply_rule("cp_async_pipeline.remove", r4->kernel, "function:hinted");
  ASSERT_FALSE(hinted);
  EXPECT_NE(hinted.error().message.find("not one cp.async copy"), std::string::npos);
  // The original kept in the PTX comment is not code: with copy16 and copy4 synchronous, only
  // the hinted copy is left for the detector.
  kernel_bundle no_hint = r4->kernel;
  auto& text = no_hint.sources.at(no_hint.manifest.entry);
  text.erase(text.find("__device__ void hinted"), text.find("const char* not_asm") -
                                                      text.find("__device__ void hinted"));
  EXPECT_FALSE(source_has(no_hint, "cp_async_pipeline")) << text;
  // Forward puts back exactly what was taken out, and only that.
  auto back4 = find_rule(r4->inverse.rule)->apply(r4->kernel, r4->inverse);
  ASSERT_TRUE(back4) << back4.error().message;
  auto back = find_rule(r->inverse.rule)->apply(back4->kernel, r->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(src(back->kernel), src(b));
  EXPECT_TRUE(sites_of("cp_async_pipeline.add", b).empty());
  auto fresh = apply_rule("cp_async_pipeline.add", b, "function:copy16");
  ASSERT_FALSE(fresh);
  EXPECT_EQ(fresh.error().code, errc::invalid_argument);
  // A synchronous copy edited by hand is no longer lathe's: refused.
  kernel_bundle edited = r->kernel;
  auto& e = edited.sources.at(edited.manifest.entry);
  const size_t mark = e.find("lathe:cp_async_pipeline.remove");
  ASSERT_NE(mark, std::string::npos);
  e[e.find("[%1], 16", mark) + 7] = '2';  // a 12-byte copy: no cp.async size
  auto tampered = apply_rule("cp_async_pipeline.add", edited, "function:copy16");
  ASSERT_FALSE(tampered);
}

TEST(hostile, openmp_reductions_and_refusals) {
  const auto b = snippet(R"(float f(const float* x, float* y, int n) {
  float s = 0, m = 0;
  for (int i = 0; i < n; ++i) s += x[i];
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int i = 0; i < n; ++i) { if (x[i] < 0) break; y[i] = x[i]; }
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < 4; ++c) y[r * 4 + c] = x[c];
  }
  return s + m;
}
)",
                         language::cpp, {"-O3"});
  std::vector<std::string> par, simd;
  for (const auto& s : sites_of("omp_parallel.add", b)) par.push_back(s.anchor);
  for (const auto& s : sites_of("simd.add", b)) simd.push_back(s.anchor);
  EXPECT_EQ(par, (std::vector<std::string>{"loop:f/i#1", "loop:f/r"}));
  EXPECT_EQ(simd, (std::vector<std::string>{"loop:f/i#1", "loop:f/r/c"}));
  auto r = apply_rule("simd.add", b, "loop:f/i#1");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(src(r->kernel).find("#pragma omp simd reduction(+: s)\n"), std::string::npos);
  EXPECT_EQ(r->kernel.manifest.flags, (std::vector<std::string>{"-O3", "-fopenmp-simd"}));
  auto p = apply_rule("omp_parallel.add", b, "loop:f/r");
  ASSERT_TRUE(p);
  EXPECT_NE(src(p->kernel).find("  #pragma omp parallel for\n  for (int r"), std::string::npos);
  auto back = find_rule(p->inverse.rule)->apply(p->kernel, p->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(src(back->kernel), src(b));
  EXPECT_EQ(back->kernel.manifest.flags, b.manifest.flags);  // -fopenmp went with the pragma
}

TEST(hostile, vector_access_canonical_pattern_round_trips) {
  const auto b =
      snippet(R"(__global__ void k(const float* __restrict__ x, float* __restrict__ y, int n4) {
  const float4* x4 = reinterpret_cast<const float4*>(x + 4 * blockIdx.x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int i = threadIdx.x;
  if (i < n4) {
    const float4 v = __ldcs(x4 + i);
    __stcs(y4 + i, v);
    y4[i + 1] = x4[i];
  }
  float4* other = reinterpret_cast<float4*>(y);
  foo(other);
}
)");
  std::vector<std::string> ptrs;
  for (const auto& s : sites_of("vector_access.remove", b)) ptrs.push_back(s.params.at("pointer"));
  EXPECT_EQ(ptrs, (std::vector<std::string>{"x4", "y4"}));  // `other` escapes: no site
  auto r = apply_rule("vector_access.remove", b, "function:k", {{"pointer", "y4"}});
  ASSERT_TRUE(r) << r.error().message;
  const std::string& s = src(r->kernel);
  EXPECT_NE(s.find("float* y4 = y;"), std::string::npos) << s;
  EXPECT_NE(s.find("__stcs(y4 + 4 * i, lathe_v.x);"), std::string::npos) << s;
  EXPECT_NE(s.find("y4[4 * (i + 1) + 3] = lathe_v.w;"), std::string::npos) << s;
  ASSERT_EQ(r->inverse.rule, "vector_access.add");
  EXPECT_EQ(sites_of("vector_access.add", r->kernel).size(), 1u);
  auto back = find_rule("vector_access.add")->apply(r->kernel, r->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(src(back->kernel), src(b));
  EXPECT_FALSE(back->assumed.empty());
}

TEST(hostile, flags) {
  const auto b = snippet("__global__ void k() {}\n", language::cuda, {"-O3", "--use_fast_math"});
  auto r = apply_rule("fast_math_flag.remove", b, "flags:--use_fast_math");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernel.manifest.flags, std::vector<std::string>{"-O3"});
  EXPECT_NE(r->edits.find("- --use_fast_math"), std::string::npos);
  EXPECT_EQ(sites_of("fast_math_flag.add", r->kernel).at(0).anchor, "flags:--use_fast_math");
  auto o = apply_rule("opt_level.remove", b, "flags:-O3");
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->removes.empty());  // no feature: flags are no mechanism of the registry
  auto up = find_rule(o->inverse.rule)->apply(o->kernel, o->inverse);
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(std::count(up->kernel.manifest.flags.begin(), up->kernel.manifest.flags.end(), "-O3"),
            1);
}

namespace {

kernel_bundle at_isa(kernel_bundle b, const std::string& isa) {
  b.manifest.isa = isa;
  b.hash = bundle_hash(b);
  return b;
}

const char* kScalar = "void f(float* y, int n) {\n  for (int i = 0; i < n; ++i) y[i] *= 2;\n}\n";

}  // namespace

TEST(hostile, isa_lowers_and_raises_x86_levels) {
  const auto b = at_isa(snippet(kScalar, language::cpp), "x86-64-v3");
  const auto sites = sites_of("isa.remove", b);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].anchor, "isa:x86-64-v3");
  EXPECT_EQ(sites[0].locus, "<isa>");
  EXPECT_EQ(sites[0].params.at("level"), "x86-64-v2");
  auto r = apply_rule("isa.remove", b, sites[0].anchor, sites[0].params);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernel.manifest.isa, "x86-64-v2");
  EXPECT_EQ(r->kernel.sources, b.sources);
  EXPECT_EQ(r->kernel.manifest.flags, b.manifest.flags);
  EXPECT_TRUE(r->removes.empty() && r->adds.empty());  // a build setting, no mechanism
  EXPECT_EQ(r->edits, "@@@ ISA x86-64-v2\n");
  EXPECT_FALSE(r->assumed.empty());
  // The edit text gives the same kernel as the rule.
  auto by_text = agent::apply_reply(b, r->edits);
  ASSERT_TRUE(by_text) << by_text.error().message;
  EXPECT_EQ(by_text->hash, r->kernel.hash);
  // The inverse raises it back: the same bundle, byte for byte.
  ASSERT_EQ(r->inverse.rule, "isa.add");
  EXPECT_EQ(r->inverse.anchor, "isa:x86-64-v2");
  auto back = find_rule("isa.add")->apply(r->kernel, r->inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->kernel.hash, b.hash);
  EXPECT_EQ(back->inverse.rule, "isa.remove");
  // Forward from v2 raises one level; from v3 to v4, noting the gate's answer above the host.
  EXPECT_EQ(sites_of("isa.add", r->kernel).at(0).params.at("level"), "x86-64-v3");
  auto up = apply_rule("isa.add", b, "isa:x86-64-v3");
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(up->kernel.manifest.isa, "x86-64-v4");
  EXPECT_NE(up->note.find("unsupported_target"), std::string::npos) << up->note;
  EXPECT_TRUE(sites_of("isa.add", up->kernel).empty());  // nothing above v4
  // level= picks any lower (higher) level, and nothing else.
  auto base = apply_rule("isa.remove", b, "isa:x86-64-v3", {{"level", "x86-64"}});
  ASSERT_TRUE(base) << base.error().message;
  EXPECT_EQ(base->kernel.manifest.isa, "x86-64");
  EXPECT_TRUE(sites_of("isa.remove", base->kernel).empty());  // the baseline has nothing below
  EXPECT_EQ(sites_of("isa.add", base->kernel).at(0).params.at("level"), "x86-64-v2");
  auto two_up = apply_rule("isa.add", base->kernel, "isa:x86-64", {{"level", "x86-64-v3"}});
  ASSERT_TRUE(two_up) << two_up.error().message;
  EXPECT_EQ(two_up->kernel.hash, b.hash);
  for (const char* level : {"x86-64-v3", "x86-64-v4", "sm_90", "native", ""}) {
    auto bad = apply_rule("isa.remove", b, "isa:x86-64-v3", {{"level", level}});
    ASSERT_FALSE(bad) << level;
    EXPECT_EQ(bad.error().code, errc::invalid_argument) << bad.error().message;
  }
  EXPECT_FALSE(apply_rule("isa.add", b, "isa:x86-64-v3", {{"level", "x86-64-v2"}}));
  // The anchor names the manifest's level; another is not found (replay then uses the site).
  auto wrong = apply_rule("isa.remove", b, "isa:x86-64-v4");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, errc::not_found);
  EXPECT_FALSE(apply_rule("isa.remove", b, "flags:-O3"));
  const auto at_v4 = at_isa(b, "x86-64-v4");
  auto replayed = replay({"isa.remove", "isa:x86-64-v3", {}}, at_v4);
  ASSERT_TRUE(replayed) << replayed.error().message;
  EXPECT_EQ(replayed->kernel.manifest.isa, "x86-64-v3");
  EXPECT_NE(replayed->note.find("used the rule's site isa:x86-64-v4"), std::string::npos)
      << replayed->note;
  // No level in the manifest (the host's, unknown to a syntactic rule), or a CUDA target: no site.
  for (const auto& k : {at_isa(b, ""), at_isa(snippet("__global__ void k() {}\n"), "sm_90a")}) {
    EXPECT_TRUE(sites_of("isa.remove", k).empty()) << k.manifest.isa;
    EXPECT_TRUE(sites_of("isa.add", k).empty()) << k.manifest.isa;
  }
  auto cuda =
      apply_rule("isa.remove", at_isa(snippet("__global__ void k() {}\n"), "sm_90a"), "isa:sm_90a");
  ASSERT_FALSE(cuda);
  EXPECT_NE(cuda.error().message.find("CUDA"), std::string::npos) << cuda.error().message;
}

TEST(hostile, isa_remove_refused_when_a_source_needs_the_isa) {
  const std::vector<std::pair<std::string, std::string>> needs = {
      {"#include <immintrin.h>\nvoid f(float* y) { y[0] = 0; }\n", "kernel.cpp:1: #include"},
      {"void f(float* y) {\n  _mm256_storeu_ps(y, _mm256_setzero_ps());\n}\n",
       "kernel.cpp:2: _mm256_storeu_ps"},
      {"void f(float* y) {\n  __m512 v;\n  (void)v;\n}\n", "kernel.cpp:2: __m512"},
      {"unsigned f(unsigned x) { return _tzcnt_u32(x); }\n", "_tzcnt_u32"},
      {"__attribute__((noinline, target(\"avx2\"))) void f() {}\n", "__attribute__((target"},
      {"[[gnu::target(\"avx2\")]] void f() {}\n", "[[gnu::target"},
      {"#pragma GCC target(\"avx2\")\nvoid f() {}\n", "#pragma GCC target"},
      {"#define ZERO(p) _mm256_storeu_ps(p, _mm256_setzero_ps())\nvoid f() {}\n",
       "_mm256_storeu_ps in #define ZERO"},
      {"void f() { asm volatile(\"vzeroupper\"); }\n", "asm (inline assembly)"},
      {"#ifdef USE_AVX\n#include <x86intrin.h>\n#endif\nvoid f() {}\n", "kernel.cpp:2"},
  };
  for (const auto& [text, why] : needs) {
    const auto b = at_isa(snippet(text, language::cpp), "x86-64-v3");
    EXPECT_TRUE(sites_of("isa.remove", b).empty()) << text;
    auto r = apply_rule("isa.remove", b, "isa:x86-64-v3");
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().code, errc::invalid_argument);
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
    // Raising is allowed, but the inverse would be refused: there is none.
    auto up = apply_rule("isa.add", b, "isa:x86-64-v3");
    ASSERT_TRUE(up) << up.error().message;
    EXPECT_TRUE(up->inverse.rule.empty());
  }
  // In another file of the bundle too.
  auto hdr = at_isa(snippet("#include \"simd.h\"\nvoid f() {}\n", language::cpp), "x86-64-v3");
  hdr.sources["simd.h"] = "#pragma once\ninline void z(float* y) { _mm_storeu_ps(y, {}); }\n";
  hdr.manifest.files.push_back("simd.h");
  hdr.hash = bundle_hash(hdr);
  auto in_header = apply_rule("isa.remove", hdr, "isa:x86-64-v3");
  ASSERT_FALSE(in_header);
  EXPECT_NE(in_header.error().message.find("simd.h:2: _mm_storeu_ps"), std::string::npos)
      << in_header.error().message;
  // Names in comments, strings and dead branches are no use of the ISA.
  const auto quiet = at_isa(snippet(R"(// the expert uses _mm256_fmadd_ps and <immintrin.h>
/* __attribute__((target("avx2"))) */
const char* s = "_mm256_add_ps __m256 asm";
#if 0
#include <immintrin.h>
void g(float* y) { _mm256_zeroall(); }
#endif
void f(float* y, int n) {
  for (int i = 0; i < n; ++i) y[i] *= 2;  // _mm256_mul_ps would do 8
}
)",
                                    language::cpp),
                            "x86-64-v3");
  ASSERT_EQ(sites_of("isa.remove", quiet).size(), 1u);
  auto r = apply_rule("isa.remove", quiet, "isa:x86-64-v3");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernel.manifest.isa, "x86-64-v2");
}

// ---- the shipped experts --------------------------------------------------------------------

namespace {

struct coverage {
  std::set<std::string> detected, removed, readded;
};

// Removes every site of the backward rules that remove `feature`, one at a time (sites are
// re-listed after each step, since anchors shift); returns the last result's inverse and the
// final kernel. A rule counts by what its result removes, not only by its feature():
// simd_intrinsics.remove takes simd and vector_access in one step.
kernel_bundle remove_all(kernel_bundle b, const std::string& feature, rule_invocation* last_inverse,
                         int* steps) {
  for (int guard = 0; guard < 200; ++guard) {
    bool progressed = false;
    for (const auto& a : applicable(b, rule_direction::backward)) {
      auto r = a.what->apply(b, a.invocation);
      if (!r || std::find(r->removes.begin(), r->removes.end(), feature) == r->removes.end())
        continue;
      if (!r->inverse.rule.empty()) *last_inverse = r->inverse;
      b = r->kernel;
      ++*steps;
      progressed = true;
      break;
    }
    if (!progressed) break;
  }
  return b;
}

}  // namespace

namespace {

struct round_trips {
  int applied = 0, trips = 0, identical = 0;
};

// Every backward site of `b` applied and undone by its inverse; then, per detected feature, every
// site removed and the last one re-added (the coverage the issue's table reports).
coverage coverage_of(const std::string& name, const kernel_bundle& b, round_trips& rt) {
  coverage cov;
  for (const auto& d : detect_source(b)) cov.detected.insert(d.what.name);
  for (const auto& a : applicable(b, rule_direction::backward)) {
    auto r = a.what->apply(b, a.invocation);
    EXPECT_TRUE(r) << name << " " << a.invocation.rule << " " << a.site.anchor << ": "
                   << (r ? "" : r.error().message);
    if (!r) continue;
    ++rt.applied;
    EXPECT_NE(r->kernel.hash, b.hash);
    EXPECT_FALSE(r->edits.empty());
    EXPECT_LE(tokenize(src(r->kernel)).errors.size(), tokenize(src(b)).errors.size());
    if (r->inverse.rule.empty()) continue;
    auto back = find_rule(r->inverse.rule)->apply(r->kernel, r->inverse);
    EXPECT_TRUE(back) << name << " inverse of " << a.invocation.rule << " " << a.site.anchor
                      << ": " << (back ? "" : back.error().message);
    if (!back) continue;
    ++rt.trips;
    if (back->kernel.sources == b.sources && back->kernel.manifest.flags == b.manifest.flags)
      ++rt.identical;
    else
      std::printf("round trip not byte-identical: %s %s %s\n", name.c_str(),
                  a.invocation.rule.c_str(), a.site.anchor.c_str());
    if (!a.what->feature().empty() && cov.detected.count(std::string(a.what->feature()))) {
      EXPECT_TRUE(source_has(back->kernel, std::string(a.what->feature())))
          << name << " " << a.invocation.rule;
    }
  }
  for (const std::string& f : cov.detected) {
    rule_invocation inverse;
    int steps = 0;
    const kernel_bundle bare = remove_all(b, f, &inverse, &steps);
    if (steps == 0 || source_has(bare, f)) continue;
    cov.removed.insert(f);
    if (inverse.rule.empty()) continue;
    auto again = find_rule(inverse.rule)->apply(bare, inverse);
    if (again && source_has(again->kernel, f)) cov.readded.insert(f);
  }
  return cov;
}

void print_coverage(const char* title, const std::map<std::string, coverage>& table) {
  std::printf(
      "\n%s (source detections; remove = every site removed and detect_source no longer finds "
      "it; re-add = forward at the last inverse anchor restores it)\n",
      title);
  std::printf("%-18s %-44s %-44s %s\n", "expert", "removed", "removed and re-added",
              "not removable");
  for (const auto& [task, c] : table) {
    std::string rem, both, no;
    for (const auto& f : c.detected) {
      if (!c.removed.count(f))
        no += f + " ";
      else if (c.readded.count(f))
        both += f + " ";
      else
        rem += f + " ";
    }
    std::printf("%-18s %-44s %-44s %s\n", task.c_str(), rem.c_str(), both.c_str(), no.c_str());
  }
}

}  // namespace

TEST(shipped, backward_sites_remove_and_round_trips_restore) {
  std::map<std::string, coverage> table;
  round_trips rt;
  for (const auto& list : {kCpuExperts, kCudaExperts})
    for (const std::string& task : list) table[task] = coverage_of(task, expert(task), rt);
  std::printf("\nbackward results: %d, round trips: %d (byte-identical: %d)\n", rt.applied,
              rt.trips, rt.identical);
  print_coverage("coverage of the shipped experts", table);
  EXPECT_GT(rt.identical, rt.trips / 2);
  // The features the engine is built for are removable on the experts that hold them.
  EXPECT_TRUE(table["conv2d"].readded.count("loop_unroll"));
  EXPECT_TRUE(table["softmax"].readded.count("omp_parallel"));
  EXPECT_TRUE(table["relu_cuda"].readded.count("launch_bounds"));
  EXPECT_TRUE(table["relu_cuda"].readded.count("restrict"));
  EXPECT_TRUE(table["rmsnorm_cuda"].removed.count("vector_access"));
  EXPECT_TRUE(table["gemm_cuda"].readded.count("cp_async_pipeline"));
  // AVX2 intrinsics (simd_intrinsics.remove / .add): both features in one step, and back.
  for (const char* cpu : {"gemm", "softmax", "conv2d"}) {
    EXPECT_TRUE(table[cpu].readded.count("simd")) << cpu;
    EXPECT_TRUE(table[cpu].readded.count("vector_access")) << cpu;
  }
}

// The catalog scored on the experts it was written from scores itself: the same measure on two
// experts written by a contributor who did not read the catalog (tests/rules/independent/README.md).
// Nothing here asserts which features are covered (that would tune the catalog to them); only
// that every backward result applies, tokenizes and is undone by its inverse.
TEST(independent, coverage_of_experts_written_without_the_catalog) {
  std::map<std::string, coverage> table;
  round_trips rt;
  for (const char* k : {"layernorm_expert", "transpose_expert"}) {
    auto b = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tests/rules/independent" / k);
    ASSERT_TRUE(b) << b.error().message;
    table[k] = coverage_of(k, *b, rt);
    EXPECT_FALSE(table[k].detected.empty()) << k;
  }
  std::printf("\nbackward results: %d, round trips: %d (byte-identical: %d)\n", rt.applied,
              rt.trips, rt.identical);
  print_coverage("coverage of the independent experts", table);
}

TEST(shipped, replay_on_another_kernel) {
  const kernel_bundle relu = expert("relu_cuda"), rms = expert("rmsnorm_cuda");
  // Same anchor resolves: same rule, same name there.
  auto same = replay({"launch_bounds.remove", "function:relu_vec", {}}, relu);
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_NE(same->note.find("same anchor"), std::string::npos);
  // relu's anchor names nothing in rmsnorm: the most similar site of the rule is used and named.
  auto other = replay({"restrict.remove", "param:relu_vec/x", {}}, rms);
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(other->used.anchor, "param:rmsnorm_rows_regs/x");
  std::printf("replay note: %s\n", other->note.c_str());
  EXPECT_NE(other->note.find("used the rule's site param:rmsnorm_rows_regs/x"), std::string::npos)
      << other->note;
  auto unroll = replay({"loop_unroll.remove", "pragma:unroll@relu_vec/u#1", {}}, rms);
  ASSERT_TRUE(unroll) << unroll.error().message;
  EXPECT_NE(unroll->note.find("used the rule's site"), std::string::npos);
  // A CPU carrier on a CUDA kernel: no site, and the error says so.
  auto none = replay({"omp_parallel.remove", "pragma:omp_parallel@lathe_launch/r", {}}, rms);
  EXPECT_FALSE(none);
}

// ---- gated: the backward results really build -----------------------------------------------

class gated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tc = gate::detect_toolchain(fs::path(LATHE_SOURCE_DIR) / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    tc_ = *tc;
    cache_ = fs::path(LATHE_BINARY_DIR) / "tests" / "rules" / "catalog-cache";
  }
  static void expect_builds(const kernel_bundle& b, const std::string& what) {
    const std::string isa =
        b.manifest.isa.empty() ? gate::resolved_isa(b, target{}) : b.manifest.isa;
    auto built = gate::build(b, isa, tc_, cache_, gate::build_kind::kernel);
    ASSERT_TRUE(built) << what << ": " << built.error().message;
    EXPECT_TRUE(built->ok) << what << ":\n" << built->log;
  }
  static inline gate::toolchain tc_;
  static inline fs::path cache_;
};

TEST_F(gated, every_backward_result_of_the_cpu_experts_compiles) {
  int n = 0;
  for (const std::string& task : kCpuExperts) {
    const kernel_bundle b = expert(task);
    for (const auto& a : applicable(b, rule_direction::backward)) {
      auto r = a.what->apply(b, a.invocation);
      ASSERT_TRUE(r) << r.error().message;
      expect_builds(r->kernel, task + " " + a.invocation.rule + " " + a.site.anchor);
      ++n;
    }
  }
  std::printf("built %d backward results of the CPU experts\n", n);
}

// The ISA rules edit only the manifest; what they must not break is the build: the softmax naive
// kernel (scalar, x86-64-v3) lowered one level and to the baseline compiles, with -march=LEVEL.
TEST_F(gated, isa_lowered_softmax_naive_compiles) {
  auto naive = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks/softmax/kernels/naive");
  ASSERT_TRUE(naive) << naive.error().message;
  ASSERT_EQ(naive->manifest.isa, "x86-64-v3");
  const auto sites = sites_of("isa.remove", *naive);
  ASSERT_EQ(sites.size(), 1u);
  for (const char* level : {"x86-64-v2", "x86-64"}) {
    auto r = apply_rule("isa.remove", *naive, sites[0].anchor, {{"level", level}});
    ASSERT_TRUE(r) << r.error().message;
    const std::string isa = gate::resolved_isa(r->kernel, target{});
    EXPECT_EQ(isa, level);
    auto built = gate::build(r->kernel, isa, tc_, cache_, gate::build_kind::kernel);
    ASSERT_TRUE(built) << built.error().message;
    EXPECT_TRUE(built->ok) << level << ":\n" << built->log;
    EXPECT_NE(built->log.find(std::string("-march=") + level + " "), std::string::npos)
        << built->log;
  }
}

TEST_F(gated, cuda_backward_results_compile) {
  if (tc_.nvcc.empty()) GTEST_SKIP() << "nvcc not found: CUDA results not built";
  // One result per rule on relu (every family it holds), and the vector rewrites (the riskiest
  // text) on the row kernels.
  std::set<std::string> seen;
  for (const auto& a : applicable(expert("relu_cuda"), rule_direction::backward)) {
    if (!seen.insert(std::string(a.what->name())).second) continue;
    auto r = a.what->apply(expert("relu_cuda"), a.invocation);
    ASSERT_TRUE(r) << r.error().message;
    expect_builds(r->kernel, "relu_cuda " + a.invocation.rule + " " + a.site.anchor);
  }
  for (const char* task : {"rmsnorm_cuda", "softmax_cuda", "reduction_cuda"}) {
    const kernel_bundle b = expert(task);
    for (const auto& a : applicable(b, rule_direction::backward)) {
      if (a.what->name() != "vector_access.remove") continue;
      auto r = a.what->apply(b, a.invocation);
      ASSERT_TRUE(r) << r.error().message;
      expect_builds(r->kernel, std::string(task) + " vector_access.remove " +
                                   a.invocation.params.at("pointer"));
    }
  }
}

// The synchronous copies are PTX that ptxas must accept: every cp_async_pipeline.remove result of
// the Hopper-class experts builds for sm_90, and its PTX holds no cp.async copy where the
// original's did, while the tiles still go from global to shared memory (smem_tiling stays: the
// feature audit of a decompose step demands that only the claimed feature goes).
TEST_F(gated, cp_async_removal_builds_and_leaves_no_async_copy_in_the_ptx) {
  if (tc_.nvcc.empty()) GTEST_SKIP() << "nvcc not found: CUDA results not built";
  const auto ptx_has = [](const gate::build_output& o, const char* feature = "cp_async_pipeline") {
    for (const auto& d : detect_ptx(o.ptx))
      if (d.what.name == feature) return true;
    return false;
  };
  int n = 0;
  for (const char* k : {"gemm_cuda/kernels/expert", "conv2d_cuda/kernels/expert",
                        "fmha_cuda/kernels/stage3_cp_async"}) {
    auto b = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks" / k);
    ASSERT_TRUE(b) << k << ": " << b.error().message;
    kernel_bundle sync = *b;
    for (const auto& s : sites_of("cp_async_pipeline.remove", *b)) {
      auto r = apply_rule("cp_async_pipeline.remove", sync, s.anchor);
      ASSERT_TRUE(r) << k << " " << s.anchor << ": " << r.error().message;
      sync = r->kernel;
      ++n;
    }
    const std::string isa = gate::resolved_isa(sync, target{});
    auto before = gate::build(*b, isa, tc_, cache_, gate::build_kind::kernel);
    auto after = gate::build(sync, isa, tc_, cache_, gate::build_kind::kernel);
    ASSERT_TRUE(before && after) << k;
    ASSERT_TRUE(after->ok) << k << ":\n" << after->log;
    EXPECT_TRUE(ptx_has(*before)) << k;
    EXPECT_FALSE(ptx_has(*after)) << k;
    EXPECT_TRUE(ptx_has(*before, "smem_tiling")) << k;
    EXPECT_TRUE(ptx_has(*after, "smem_tiling")) << k;
  }
  EXPECT_GE(n, 3);
}
