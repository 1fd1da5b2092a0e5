// vector_access.remove / .add on the 32-bit half-precision pairs (agent/rules/catalog_vector.h):
// __half2 over __half, half2 over half, __nv_bfloat162 over __nv_bfloat16, on source with the
// pattern's text in comments, strings and a macro; the component spelled as the kernel spells it;
// and the backward result really compiled by nvcc (no GPU needed) when nvcc is there.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "agent/rules/catalog.h"
#include "agent/rules/catalog_vector.h"
#include "features/detect.h"
#include "gate/build.h"
#include "spec/bundle.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent::rules;

namespace {

kernel_bundle cu(const std::string& text) {
  kernel_bundle b;
  b.name = "snippet";
  b.manifest.lang = language::cuda;
  b.manifest.entry = "kernel.cu";
  b.manifest.files = {"kernel.cu"};
  b.manifest.flags = {"-O3"};
  b.manifest.isa = "sm_90a";
  b.sources["kernel.cu"] = text;
  b.hash = bundle_hash(b);
  return b;
}

const std::string& src(const kernel_bundle& b) {
  return b.sources.at("kernel.cu");
}

std::vector<std::string> pointers(const std::string& rule, const kernel_bundle& b) {
  std::vector<std::string> out;
  for (const auto& s : find_rule(rule)->sites(b)) out.push_back(s.params.at("pointer"));
  return out;
}

// Removes the vector pointer `p`, checks the text with `expect`, re-adds it through the inverse
// and checks the source comes back byte for byte; returns the scalar kernel.
kernel_bundle remove_and_back(const kernel_bundle& b, const std::string& fn, const std::string& p,
                              const std::vector<std::string>& expect) {
  auto r =
      find_rule("vector_access.remove")->apply(b, {"vector_access.remove", fn, {{"pointer", p}}});
  EXPECT_TRUE(r) << p << ": " << (r ? "" : r.error().message);
  if (!r) return b;
  for (const std::string& e : expect)
    EXPECT_NE(src(r->kernel).find(e), std::string::npos) << e << "\n" << src(r->kernel);
  EXPECT_EQ(r->inverse.rule, "vector_access.add");
  auto back = find_rule("vector_access.add")->apply(r->kernel, r->inverse);
  EXPECT_TRUE(back) << p << ": " << (back ? "" : back.error().message);
  if (back) {
    EXPECT_EQ(src(back->kernel), src(b));
  }
  return r->kernel;
}

const char* const kHalfKernel = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <lathe/abi.h>
// const __half2* x2 = reinterpret_cast<const __half2*>(x);  (prose, not code)
#define HALF2_OF(p) reinterpret_cast<const __half2*>(p)

__global__ void add_self(const __half* __restrict__ x, __half* __restrict__ y, int n2) {
  const __half2* x2 = reinterpret_cast<const __half2*>(x);
  __half2* y2 = reinterpret_cast<__half2*>(y);
  const char* say = "y2[i] = x2[i];";
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2 && say[0] == 'y') {
    const __half2 v = __ldg(x2 + i);
    y2[i] = __hadd2(v, v);
  }
}

__global__ void copy_plain(const half* x, half* y, int n2) {
  const half2* x2 = reinterpret_cast<const half2*>(x);
  half2* y2 = reinterpret_cast<half2*>(y);
  const __half2* viamacro = HALF2_OF(x);  // no cast written here: not the pattern
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) __stcs(y2 + i, x2[i + 0]);
  (void)viamacro;
}

__global__ void scale_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int n2) {
  const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(x);
  __nv_bfloat162* y2 = reinterpret_cast<__nv_bfloat162*>(y);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) y2[i] = __hmul2(x2[i], x2[i]);
}

extern "C" int lathe_launch(const lathe_args* args) {
  const int n = static_cast<int>(args->outputs[0].shape[0]);
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  add_self<<<(n / 2 + 255) / 256, 256, 0, s>>>(static_cast<const __half*>(args->inputs[0].data),
                                                static_cast<__half*>(args->outputs[0].data), n / 2);
  return 0;
}
)";

}  // namespace

TEST(vector_half, sites_are_the_cast_pointers_of_each_pair_type) {
  const kernel_bundle b = cu(kHalfKernel);
  // The comment, the string and the macro-made pointer are not sites.
  EXPECT_EQ(pointers("vector_access.remove", b),
            (std::vector<std::string>{"x2", "y2", "x2", "y2", "x2", "y2"}));
  EXPECT_TRUE(pointers("vector_access.add", b).empty());
  // The component as the kernel spells it: a half2 cast of an __half2 pointer parameter, or a
  // float2 cast of a float4 one, is not the pattern (`float` is no word of `float4`).
  const kernel_bundle odd = cu(R"(#include <cuda_fp16.h>
__global__ void k(const __half2* p, const float4* q, float* out) {
  const half2* a = reinterpret_cast<const half2*>(p);
  const float2* c = reinterpret_cast<const float2*>(q);
  out[0] = __low2float(a[0]) + c[0].x;
}
)");
  EXPECT_TRUE(pointers("vector_access.remove", odd).empty());
  EXPECT_TRUE(detail::vec::names_component("const unsigned int* __restrict__", "unsigned int"));
  EXPECT_FALSE(detail::vec::names_component("const float4*", "float"));
  EXPECT_FALSE(detail::vec::names_component("const __half*", "half"));
}

TEST(vector_half, each_pair_type_round_trips_with_its_maker_and_lanes) {
  kernel_bundle k = cu(kHalfKernel);
  k = remove_and_back(
      k, "function:add_self", "x2",
      {"const __half* x2 = x;", "make_half2(__ldg(x2 + 2 * i), __ldg(x2 + 2 * i + 1))"});
  k = remove_and_back(k, "function:add_self", "y2",
                      {"__half* y2 = y;",
                       "{ const __half2 lathe_v = __hadd2(v, v); y2[2 * i] = lathe_v.x; "
                       "y2[2 * i + 1] = lathe_v.y; }"});
  k = remove_and_back(k, "function:copy_plain", "x2",
                      {"const half* x2 = x;", "make_half2(x2[2 * (i + 0)], x2[2 * (i + 0) + 1])"});
  k = remove_and_back(k, "function:copy_plain", "y2",
                      {"{ const half2 lathe_v = make_half2(", "__stcs(y2 + 2 * i, lathe_v.x);",
                       "__stcs(y2 + 2 * i + 1, lathe_v.y); }"});
  k = remove_and_back(k, "function:scale_bf16", "x2",
                      {"const __nv_bfloat16* x2 = x;",
                       "__hmul2(make_bfloat162(x2[2 * i], x2[2 * i + 1]), make_bfloat162("});
  k = remove_and_back(k, "function:scale_bf16", "y2",
                      {"{ const __nv_bfloat162 lathe_v = __hmul2("});
  // Everything scalar now: the prose, the string and the macro kept; no vector pointer left for
  // the detector but the macro-made one.
  const std::string& s = src(k);
  EXPECT_NE(s.find("// const __half2* x2 = reinterpret_cast<const __half2*>(x);"),
            std::string::npos);
  EXPECT_NE(s.find("\"y2[i] = x2[i];\""), std::string::npos);
  EXPECT_NE(s.find("#define HALF2_OF(p) reinterpret_cast<const __half2*>(p)"), std::string::npos);
  EXPECT_EQ(s.find("reinterpret_cast<const half2*>"), std::string::npos);
  EXPECT_EQ(s.find("reinterpret_cast<__nv_bfloat162*>"), std::string::npos);
  // The folds are offered on the scalar kernel, one per pointer, with the right type.
  std::vector<std::string> types;
  for (const auto& site : find_rule("vector_access.add")->sites(k))
    types.push_back(site.params.at("type"));
  EXPECT_EQ(types, (std::vector<std::string>{"__half2", "__half2", "half2", "half2",
                                             "__nv_bfloat162", "__nv_bfloat162"}));
}

// nvcc compiles what the rules wrote (every pointer de-vectorized) and the original: the makers
// and lanes exist for these types in cuda_fp16.h / cuda_bf16.h, and the pair accesses are gone
// from the PTX.
TEST(vector_half, backward_result_compiles_with_nvcc) {
  auto tc = gate::detect_toolchain(fs::path(LATHE_SOURCE_DIR) / "include");
  ASSERT_TRUE(tc) << tc.error().message;
  if (tc->nvcc.empty()) GTEST_SKIP() << "nvcc not found";
  kernel_bundle k = cu(kHalfKernel);
  for (int guard = 0; guard < 10; ++guard) {
    const auto sites = find_rule("vector_access.remove")->sites(k);
    if (sites.empty()) break;
    auto r = find_rule("vector_access.remove")
                 ->apply(k, {"vector_access.remove", sites[0].anchor, sites[0].params});
    ASSERT_TRUE(r) << r.error().message;
    k = r->kernel;
  }
  EXPECT_TRUE(find_rule("vector_access.remove")->sites(k).empty());
  const fs::path cache = fs::path(LATHE_BINARY_DIR) / "tests" / "rules" / "vector-half-cache";
  // 32-bit (pair) or vector global accesses in the PTX: the original's half2 and bfloat162 loads
  // and stores; the scalar kernel's are 16-bit each (nvcc does not fuse them back).
  const std::regex wide(
      R"(\b(ld|st)\.global(\.[a-z]+)*\.(v[248]\.)?[bu]32\b|\b(ld|st)\.global(\.[a-z]+)*\.v[248]\.)");
  const std::regex narrow(R"(\b(ld|st)\.global(\.[a-z]+)*\.[bu]16\b)");
  const kernel_bundle original = cu(kHalfKernel);
  for (const kernel_bundle* b : {&original, static_cast<const kernel_bundle*>(&k)}) {
    auto built = gate::build(*b, "sm_90a", *tc, cache, gate::build_kind::kernel);
    ASSERT_TRUE(built) << built.error().message;
    ASSERT_TRUE(built->ok) << built->log;
    const bool has_wide = std::regex_search(built->ptx, wide);
    EXPECT_EQ(has_wide, b == &original) << (b == &original ? "original" : "scalar");
    if (b != &original) {
      EXPECT_TRUE(std::regex_search(built->ptx, narrow));
    }
  }
}
