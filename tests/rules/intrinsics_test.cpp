// simd_intrinsics.remove / .add (agent/rules/catalog_intrinsics.h): lathe's scalar stand-in for
// the x86 intrinsics checked bit for bit against the real instructions (compiled with g++ and run
// on this host); the rules on hostile sources (intrinsic names in comments, strings, macros and
// #if 0 branches, unknown intrinsics, inline asm, an edited stand-in, a smuggled include=); and
// on the shipped CPU experts: the result has no intrinsics left for the detectors, builds, holds
// no packed arithmetic at all (nor in the stand-in's own functions when the flag is taken away),
// passes the gate's checks, and the forward rule gives the expert back byte for byte.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "agent/edit.h"
#include "agent/rules/catalog.h"
#include "agent/rules/catalog_intrinsics.h"
#include "features/detect.h"
#include "gate/build.h"
#include "spec/bundle.h"
#include "gate/gate.h"
#include "gate/host_target.h"
#include "gate/process.h"
#include "spec/task_file.h"
#include "intrinsics_shim_program.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent::rules;
namespace intrin = lathe::agent::rules::detail::intrin;

namespace {

const fs::path kSrc = LATHE_SOURCE_DIR;
const std::string kShim(intrin::kShimFile);

kernel_bundle cpp(const std::string& text, std::map<std::string, std::string> more = {}) {
  kernel_bundle b;
  b.name = "snippet";
  b.manifest.lang = language::cpp;
  b.manifest.entry = "kernel.cpp";
  b.manifest.flags = {"-O3"};
  b.manifest.isa = "x86-64-v3";
  b.sources["kernel.cpp"] = text;
  for (auto& [f, t] : more) b.sources[f] = t;
  for (const auto& [f, t] : b.sources) b.manifest.files.push_back(f);
  b.hash = bundle_hash(b);
  return b;
}

kernel_bundle expert(const std::string& task) {
  auto b = load_bundle(kSrc / "tasks" / task / "kernels" / "expert");
  EXPECT_TRUE(b) << task << ": " << (b ? "" : b.error().message);
  return b ? *b : kernel_bundle{};
}

const rule& remove_rule() {
  return *find_rule("simd_intrinsics.remove");
}
const rule& add_rule() {
  return *find_rule("simd_intrinsics.add");
}

std::set<std::string> source_features(const kernel_bundle& b) {
  std::set<std::string> out;
  for (const auto& d : detect_source(b)) out.insert(d.what.name);
  return out;
}

// A backward step checked the way every caller relies on: its edit text gives its kernel, its
// inverse gives the input back byte for byte (sources, file list and hash).
rule_result remove_and_check_round_trip(const kernel_bundle& b) {
  const auto sites = remove_rule().sites(b);
  EXPECT_EQ(sites.size(), 1u);
  if (sites.size() != 1) return {};
  auto r = remove_rule().apply(b, {"simd_intrinsics.remove", sites[0].anchor, sites[0].params});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return {};
  auto replayed = agent::apply_reply(b, r->edits);
  EXPECT_TRUE(replayed) << (replayed ? "" : replayed.error().message);
  if (replayed) {
    EXPECT_EQ(replayed->hash, r->kernel.hash) << r->edits;
  }
  EXPECT_EQ(r->inverse.rule, "simd_intrinsics.add");
  const auto fwd = add_rule().sites(r->kernel);
  EXPECT_EQ(fwd.size(), 1u);
  auto back = add_rule().apply(r->kernel, r->inverse);
  EXPECT_TRUE(back) << (back ? "" : back.error().message);
  if (back) {
    EXPECT_EQ(back->kernel.sources, b.sources);
    EXPECT_EQ(back->kernel.manifest.files, b.manifest.files);
    EXPECT_EQ(back->kernel.hash, b.hash);
    auto again = agent::apply_reply(r->kernel, back->edits);
    EXPECT_TRUE(again && again->hash == b.hash);
    EXPECT_EQ(back->inverse.rule, "simd_intrinsics.remove");
  }
  return *r;
}

struct toolchain_fixture : public ::testing::Test {
  static void SetUpTestSuite() {
    auto tc = gate::detect_toolchain(kSrc / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    tc_ = *tc;
  }
  static inline gate::toolchain tc_;
};

}  // namespace

TEST(intrinsics, names_map_one_to_one_and_hide_from_the_detectors) {
  std::set<std::string> lathe;
  for (const auto& e : intrin::shim_entries()) {
    const std::string l = intrin::lathe_name(e.name);
    EXPECT_TRUE(intrin::intrinsic_family(e.name)) << e.name;
    EXPECT_FALSE(intrin::intrinsic_family(l)) << l;
    EXPECT_EQ(intrin::intrinsic_of(l), e.name);
    EXPECT_TRUE(lathe.insert(l).second) << "two entries map to " << l;
  }
  EXPECT_EQ(intrin::lathe_name("_mm256_fmadd_ps"), "lathe_mm256_fmadd_ps");
  EXPECT_EQ(intrin::lathe_name("__m256i"), "lathe_m256i");
  EXPECT_EQ(intrin::lathe_name("_CMP_LT_OQ"), "LATHE_CMP_LT_OQ");
  EXPECT_EQ(intrin::intrinsic_of("lathe_shim_bits"), "");
  const std::set<std::string> some = {"__m256", "_mm256_add_ps", "_CMP_LT_OQ"};
  const std::string h = intrin::shim_header(some);
  EXPECT_EQ(intrin::shim_header_entries(h), some);
  EXPECT_NE(h.find("lathe_mm256_add_ps("), std::string::npos);
  EXPECT_EQ(h.find("lathe_mm256_sub_ps("), std::string::npos);  // only what is used
  EXPECT_NE(h.find("#pragma GCC optimize(\"no-tree-vectorize\")"), std::string::npos);
}

// Every entry against the instruction it stands in for, bit for bit.
TEST_F(toolchain_fixture, stand_in_matches_the_instructions_bit_for_bit) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "this host has no AVX2+FMA to compare with";
  char tmpl[] = "/tmp/lathe-intrinsics-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  std::set<std::string> all;
  for (const auto& e : intrin::shim_entries()) all.insert(e.name);
  std::ofstream(dir / kShim) << intrin::shim_header(all);
  std::ofstream(dir / "check.cpp") << kShimCheckProgram;
  auto cc = gate::run_tool({tc_.cxx, "-std=c++20", "-O2", "-march=x86-64-v3", "-Wall", "-Werror",
                            "-Wno-unused-function", "check.cpp", "-o", "check", "-lm"},
                           300, dir);
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  auto run = gate::run_tool({(dir / "check").string()}, 120, dir);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("checked "), std::string::npos) << run.output;
  std::printf("%s", run.output.c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(intrinsics, hostile_source_comments_strings_macros_and_dead_branches) {
  const std::string text = R"(#include <lathe/abi.h>
#include <immintrin.h>
// _mm256_add_ps in a comment is prose
/* __m256 x = _mm256_loadu_ps(p); */
#define LOAD8(p) _mm256_loadu_ps(p)
#define ACC(acc, p) acc = _mm256_fmadd_ps(LOAD8(p), _mm256_set1_ps(2.0f), \
                                          acc)
#if 0
static __m256 dead(const float* p) { return _mm256_i32gather_ps(p, _mm256_setzero_si256(), 4); }
#endif
static const char* kName = "_mm256_loadu_ps and __m256";
float sum16(const float* x) {
  __m256 acc = _mm256_setzero_ps();
  ACC(acc, x);
  ACC(acc, x + 8);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  return _mm_cvtss_f32(_mm_hadd_ps(_mm_hadd_ps(s, s), s)) + (kName[0] == '_' ? 0.0f : 1.0f);
}
)";
  const kernel_bundle b = cpp(text);
  ASSERT_TRUE(source_features(b).count("simd"));
  const auto sites = remove_rule().sites(b);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].anchor, "include:immintrin.h");
  EXPECT_EQ(sites[0].locus, "<intrinsics>");
  const rule_result r = remove_and_check_round_trip(b);
  const std::string& s = r.kernel.sources.at("kernel.cpp");
  EXPECT_NE(s.find("#include \"lathe_scalar_m256.inc\"\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("<immintrin.h>"), std::string::npos);
  // Prose, strings and the dead branch are untouched; the macros and the code are renamed.
  EXPECT_NE(s.find("// _mm256_add_ps in a comment is prose"), std::string::npos);
  EXPECT_NE(s.find("/* __m256 x = _mm256_loadu_ps(p); */"), std::string::npos);
  EXPECT_NE(s.find("\"_mm256_loadu_ps and __m256\""), std::string::npos);
  EXPECT_NE(s.find("static __m256 dead(const float* p) { return _mm256_i32gather_ps("),
            std::string::npos);
  EXPECT_NE(s.find("#define LOAD8(p) lathe_mm256_loadu_ps(p)"), std::string::npos) << s;
  EXPECT_NE(s.find("acc = lathe_mm256_fmadd_ps(LOAD8(p), lathe_mm256_set1_ps(2.0f), \\\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("lathe_m128 s = lathe_mm_add_ps(lathe_mm256_castps256_ps128(acc)"),
            std::string::npos);
  // The stand-in holds exactly the names used (the dead gather is not among them).
  ASSERT_TRUE(r.kernel.sources.count(kShim));
  EXPECT_EQ(
      intrin::shim_header_entries(r.kernel.sources.at(kShim)),
      (std::set<std::string>{"__m128", "__m256", "_mm256_castps256_ps128", "_mm256_extractf128_ps",
                             "_mm256_fmadd_ps", "_mm256_loadu_ps", "_mm256_set1_ps",
                             "_mm256_setzero_ps", "_mm_add_ps", "_mm_cvtss_f32", "_mm_hadd_ps"}));
  EXPECT_EQ(r.removes, (std::vector<std::string>{"simd", "vector_access"}));
  const auto left = source_features(r.kernel);
  EXPECT_FALSE(left.count("simd"));
  EXPECT_FALSE(left.count("vector_access"));
  // isa.remove refused the intrinsics; on the result it has a site.
  EXPECT_TRUE(find_rule("isa.remove")->sites(b).empty());
  EXPECT_EQ(find_rule("isa.remove")->sites(r.kernel).size(), 1u);
}

TEST(intrinsics, no_site_and_a_reason_when_the_stand_in_cannot_take_the_code) {
  const std::string head = "#include <immintrin.h>\nfloat f(const float* p) {\n";
  auto refusal = [](const kernel_bundle& b) {
    EXPECT_TRUE(remove_rule().sites(b).empty());
    auto r = remove_rule().apply(b, {"simd_intrinsics.remove", "include:immintrin.h", {}});
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().message;
  };
  // An intrinsic the stand-in lacks: the message names it and where it is.
  const auto gather = cpp(head +
                          "  __m256 v = _mm256_i32gather_ps(p, _mm256_setzero_si256(), "
                          "4);\n  return _mm256_cvtss_f32(v);\n}\n");
  EXPECT_NE(refusal(gather).find("kernel.cpp:3: _mm256_i32gather_ps"), std::string::npos)
      << refusal(gather);
  // Doubles are not emulated.
  EXPECT_NE(refusal(cpp(head + "  return _mm256_cvtsd_f64(_mm256_set1_pd(*p));\n}\n"))
                .find("_mm256_set1_pd"),
            std::string::npos);
  // Inline assembly may hold vector instructions no renaming reaches.
  EXPECT_NE(refusal(cpp(head + "  asm(\"\");\n  return _mm256_cvtss_f32(_mm256_set1_ps(*p));\n}\n"))
                .find("inline assembly"),
            std::string::npos);
  // A name of the stand-in already in use would make the inverse ambiguous.
  EXPECT_NE(refusal(cpp(head + "  int lathe_mm256_add_ps = 0;\n  return _mm256_cvtss_f32("
                               "_mm256_set1_ps(*p)) + lathe_mm256_add_ps;\n}\n"))
                .find("already a name of lathe's stand-in"),
            std::string::npos);
  // Two intrinsics headers: one include is rewritten, so none is.
  EXPECT_NE(refusal(cpp("#include <xmmintrin.h>\n" + head +
                        "  return _mm256_cvtss_f32(_mm256_set1_ps(*p));\n}\n"))
                .find("included 2 times"),
            std::string::npos);
  // No intrinsics at all, or CUDA: nothing to say.
  EXPECT_TRUE(remove_rule().sites(cpp(head + "  return *p;\n}\n")).empty());
  kernel_bundle cu = cpp(head + "  return _mm256_cvtss_f32(_mm256_set1_ps(*p));\n}\n");
  cu.manifest.lang = language::cuda;
  EXPECT_TRUE(remove_rule().sites(cu).empty());
}

TEST(intrinsics, forward_only_over_lathes_own_unchanged_stand_in) {
  const kernel_bundle b =
      cpp("#include <x86intrin.h>  // AVX2\nfloat f(const float* p) {\n  return "
          "_mm256_cvtss_f32(_mm256_add_ps(_mm256_loadu_ps(p), _mm256_set1_ps(1.0f)));\n}\n");
  const rule_result r = remove_and_check_round_trip(b);
  // The include line comes back as it was, its comment included (the directive's token).
  EXPECT_EQ(r.inverse.params.at("include"), "#include <x86intrin.h>  // AVX2");
  EXPECT_EQ(r.inverse.params.at("flag"), "-fno-tree-vectorize");
  EXPECT_EQ(r.kernel.manifest.flags, (std::vector<std::string>{"-O3", "-fno-tree-vectorize"}));
  // A kernel that compiles without the vectorizer already keeps its flag both ways.
  kernel_bundle scalar = b;
  scalar.manifest.flags.push_back("-fno-tree-vectorize");
  scalar.hash = bundle_hash(scalar);
  EXPECT_FALSE(remove_and_check_round_trip(scalar).inverse.params.count("flag"));
  // A flag that asks for the vectorizer would win over -fno-tree-vectorize: no site.
  kernel_bundle asks = b;
  asks.manifest.flags.push_back("-ftree-slp-vectorize");
  asks.hash = bundle_hash(asks);
  EXPECT_TRUE(remove_rule().sites(asks).empty());
  // Scalar code the backward step did not write is never vectorized.
  EXPECT_TRUE(add_rule().sites(cpp("float f(const float* p) { return p[0] + p[1]; }\n")).empty());
  // An edited stand-in is someone else's code now: no site, and apply says why.
  kernel_bundle edited = r.kernel;
  edited.sources[kShim] += "// tuned by hand\n";
  edited.hash = bundle_hash(edited);
  EXPECT_TRUE(add_rule().sites(edited).empty());
  auto refused = add_rule().apply(edited, r.inverse);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not the text lathe wrote"), std::string::npos);
  // A carrier's flag= on a kernel without the flag (replayed elsewhere): nothing to take away.
  kernel_bundle flagless = r.kernel;
  flagless.manifest.flags = {"-O3"};
  flagless.hash = bundle_hash(flagless);
  auto back = add_rule().apply(flagless, r.inverse);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->kernel.sources, b.sources);
  EXPECT_EQ(back->kernel.manifest.flags, b.manifest.flags);
  // flag= takes away only lathe's flag.
  rule_invocation other_flag = r.inverse;
  other_flag.params["flag"] = "-O3";
  EXPECT_FALSE(add_rule().apply(r.kernel, other_flag));
  // include= carries one #include of an intrinsics header, nothing else.
  for (const char* smuggled : {"#include <immintrin.h>\nint evil;", "#include <stdio.h>",
                               "int x; // #include <immintrin.h>"}) {
    rule_invocation inv = r.inverse;
    inv.params["include"] = smuggled;
    auto bad = add_rule().apply(r.kernel, inv);
    EXPECT_FALSE(bad) << smuggled;
    if (!bad) continue;
    EXPECT_EQ(bad.error().code, errc::invalid_argument) << smuggled;
  }
}

TEST_F(toolchain_fixture, intrinsics_in_a_header_of_the_bundle) {
  const kernel_bundle b =
      cpp("#include \"inc/vec.h\"\nfloat f(const float* p) { return first(twice(p)); }\n",
          {{"inc/vec.h",
            "#pragma once\n#include <immintrin.h>\ninline __m256 twice(const float* p) {\n  "
            "const __m256 v = _mm256_loadu_ps(p);\n  return _mm256_add_ps(v, v);\n}\ninline float "
            "first(__m256 v) { return _mm256_cvtss_f32(v); }\n"}});
  const auto sites = remove_rule().sites(b);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].params.at("file"), "inc/vec.h");
  const rule_result r = remove_and_check_round_trip(b);
  EXPECT_TRUE(r.kernel.sources.count("inc/" + kShim));
  EXPECT_NE(r.kernel.sources.at("inc/vec.h").find("#include \"" + kShim + "\""), std::string::npos);
  const fs::path cache = fs::path(LATHE_BINARY_DIR) / "tests" / "rules" / "intrinsics-cache";
  auto built = gate::build(r.kernel, "x86-64-v3", tc_, cache, gate::build_kind::kernel);
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_TRUE(built->ok) << built->log;
}

// ---- the shipped CPU experts -----------------------------------------------------------------

class experts : public toolchain_fixture {};

TEST_F(experts, removed_built_scalar_in_the_stand_in_and_given_back_byte_for_byte) {
  const fs::path cache = fs::path(LATHE_BINARY_DIR) / "tests" / "rules" / "intrinsics-cache";
  for (const char* task : {"gemm", "softmax", "conv2d"}) {
    SCOPED_TRACE(task);
    const kernel_bundle b = expert(task);
    const auto before = source_features(b);
    ASSERT_TRUE(before.count("simd") && before.count("vector_access"));
    const rule_result r = remove_and_check_round_trip(b);
    const auto after = source_features(r.kernel);
    EXPECT_FALSE(after.count("simd"));
    EXPECT_FALSE(after.count("vector_access"));
    EXPECT_EQ(after.count("omp_parallel"), before.count("omp_parallel"));
    EXPECT_EQ(after.count("restrict"), before.count("restrict"));
    // No other rule offers a site inside lathe's stand-in.
    for (auto dir : {rule_direction::backward, rule_direction::forward})
      for (const auto& a : applicable(r.kernel, dir, {true, true}))
        EXPECT_NE(a.site.file, kShim) << a.invocation.rule << " " << a.site.anchor;
    // Built: the expert's artifact shows 256-bit packed arithmetic (so the detector sees it on
    // this toolchain); the result's none at all (the flag keeps g++ from vectorizing the
    // inlined stand-ins again). Without the flag the stand-ins stay out of line, still scalar.
    EXPECT_EQ(r.kernel.manifest.flags.back(), "-fno-tree-vectorize");
    kernel_bundle no_flag = r.kernel;
    std::erase(no_flag.manifest.flags, std::string("-fno-tree-vectorize"));
    no_flag.hash = bundle_hash(no_flag);
    for (const kernel_bundle* k : {&b, &r.kernel, static_cast<const kernel_bundle*>(&no_flag)}) {
      auto built = gate::build(*k, k->manifest.isa, tc_, cache, gate::build_kind::kernel);
      ASSERT_TRUE(built) << built.error().message;
      ASSERT_TRUE(built->ok) << built->log;
      auto dis = gate::run_tool(
          {"objdump", "-d", "-C", "--no-show-raw-insn", built->object.string()}, 120);
      if (dis.exit_code != 0) GTEST_SKIP() << "objdump: " << dis.output;
      int wide = 0, packed = 0, in_stand_in = 0, stand_in_functions = 0;
      for (const auto& d : detect_disassembly(dis.output)) {
        if (d.what.name != "simd") continue;
        ++packed;
        if (d.what.locus.starts_with("lathe_mm")) ++in_stand_in;  // not lathe_launch
        if (d.what.params.count("width") && d.what.params.at("width") == "256") ++wide;
      }
      for (size_t at = dis.output.find("<lathe_mm"); at != std::string::npos;
           at = dis.output.find("<lathe_mm", at + 1))
        ++stand_in_functions;
      if (k == &b) {
        EXPECT_GT(wide, 0) << "the expert's own vector code is not seen";
      } else if (k == &r.kernel) {
        EXPECT_EQ(packed, 0) << "packed arithmetic left in the de-vectorized kernel";
        EXPECT_EQ(stand_in_functions, 0) << "stand-ins not inlined: a call per operation";
      } else {
        EXPECT_EQ(in_stand_in, 0);
        EXPECT_GT(stand_in_functions, 0) << "the stand-in's pragma no longer keeps it apart";
      }
    }
  }
}

// The de-vectorized softmax and conv2d really pass the gate's checks (correct on every shape
// set); gemm's is exercised by `lathe rules apply` (docs/rules.md), its checks take longest.
TEST(experts_gate, removed_softmax_and_conv2d_pass_the_checks) {
  char tmpl[] = "/tmp/lathe-intrinsics-gate-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  setenv("LATHE_LOCK_DIR", (dir / "locks").c_str(), 1);
  gate::gate_config cfg;
  auto tc = gate::detect_toolchain(kSrc / "include");
  ASSERT_TRUE(tc) << tc.error().message;
  cfg.tools = *tc;
  cfg.cache_dir = dir / "cache";
  cfg.tgt = gate::detect_cpu_target();
  cfg.sandbox.worker_exe = fs::path(LATHE_BINARY_DIR) / "lathe-worker";
  cfg.sandbox.address_space_bytes = uint64_t{4} << 30;
  cfg.sandbox.rss_limit_bytes = uint64_t{2} << 30;
  cfg.call_timeout_s = 60;
  cfg.time = false;
  for (const char* name : {"softmax", "conv2d"}) {
    SCOPED_TRACE(name);
    auto t = load_task(kSrc / "tasks" / name);
    ASSERT_TRUE(t) << t.error().message;
    const kernel_bundle b = expert(name);
    const auto sites = remove_rule().sites(b);
    ASSERT_EQ(sites.size(), 1u);
    auto r = remove_rule().apply(b, {"simd_intrinsics.remove", sites[0].anchor, {}});
    ASSERT_TRUE(r) << r.error().message;
    gate::gate_request req;
    req.t = &*t;
    req.candidate = r->kernel;
    req.baseline = b;
    req.prov = {"rules", "simd_intrinsics.remove", true};
    const evaluation e = gate::evaluate(cfg, req);
    EXPECT_EQ(e.result, outcome::ok) << e.message << "\n" << e.diagnostics;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}
