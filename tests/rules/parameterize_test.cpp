// agent/rules/parameterize.h: a kernel's literal knobs found (never in a comment, a string or dead
// code), made tunables, and the parameterized source really compiled and run at its default and at
// other values (g++; nvcc when it is there).
#include "agent/rules/parameterize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "spec/bundle.h"
#include "spec/tune.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::agent::rules;

namespace {

kernel_bundle snippet(const std::string& text, language lang = language::cpp) {
  kernel_bundle b;
  b.name = "snippet";
  b.manifest.lang = lang;
  b.manifest.entry = lang == language::cuda ? "kernel.cu" : "kernel.cpp";
  b.manifest.files = {b.manifest.entry};
  b.manifest.flags = {"-O2"};
  b.sources[b.manifest.entry] = text;
  b.hash = bundle_hash(b);
  return b;
}

// A row-blocked sum whose knobs change how, never what, it computes (for the sizes used: the
// tail loop covers what blocks leave).
const char* const kSum = R"(#include <cstdio>
#include <cstdint>
// #define FAKE_BLOCK 8   (a comment: not a knob)
#define SQUARE(x) ((x) * (x))
#define BLOCK 64
#if 0
#define DEAD_TILE 16
#endif
#ifndef CHUNK
#define CHUNK 32
#endif
#define VERSION 3
static const char* banner = "#define STRING_BLOCK 4";
namespace {
constexpr int TILE = 8;
constexpr int kInputs = 2;
}
long sum(const int* x, int n) {
  long s = 0;
  int i = 0;
  for (; i + BLOCK <= n; i += BLOCK) {
    long part = 0;
#pragma GCC unroll 4
    for (int j = 0; j < BLOCK; ++j) part += x[i + j];
    s += part;
  }
  for (; i < n; ++i) s += x[i];
  long t = 0;
  for (int k = 0; k < n; k += TILE)
    for (int j = k; j < k + TILE && j < n; ++j) t += SQUARE(1) * (j % CHUNK == 0 ? 0 : 0);
  return s + t + 0 * kInputs + 0 * VERSION;
}
int main() {
  int x[1000];
  for (int i = 0; i < 1000; ++i) x[i] = i * 7 % 13;
  std::printf("%ld %s\n", sum(x, 1000), banner);
  return 0;
}
)";

knob knob_named(std::string n) {
  knob k;
  k.name = std::move(n);
  return k;
}

const knob* named(const std::vector<knob>& ks, const std::string& n) {
  auto it = std::find_if(ks.begin(), ks.end(), [&](const knob& k) { return k.name == n; });
  return it == ks.end() ? nullptr : &*it;
}

std::vector<knob> by_default(const std::vector<knob>& ks) {
  std::vector<knob> out;
  for (const knob& k : ks)
    if (k.knob_like) out.push_back(k);
  return out;
}

// Builds the configured bundle with g++ and runs it; its stdout.
std::string build_and_run(const kernel_bundle& b, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("lathe-parameterize-" + std::to_string(::getpid()) + "-" + tag);
  fs::create_directories(dir);
  for (const auto& [f, text] : b.sources) std::ofstream(dir / f) << text;
  std::string cmd = "g++ -std=c++20 -O2 -Werror=unknown-pragmas";
  for (const auto& [k, v] : b.manifest.defines) cmd += " -D" + k + "=" + v;
  cmd += " -o " + (dir / "a.out").string() + " " + (dir / b.manifest.entry).string() + " 2>" + (dir / "err").string();
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream e(dir / "err");
    std::stringstream ss;
    ss << e.rdbuf();
    ADD_FAILURE() << "build failed: " << cmd << "\n" << ss.str() << "\n--- source\n" << b.sources.at(b.manifest.entry);
    return "";
  }
  std::string out;
  if (FILE* p = ::popen((dir / "a.out").c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  fs::remove_all(dir);
  return out;
}

TEST(parameterize, finds_the_knobs_of_active_code_only) {
  const auto ks = find_knobs(snippet(kSum));
  std::vector<std::string> names;
  for (const knob& k : ks) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"BLOCK", "CHUNK", "VERSION", "TUNE_TILE", "TUNE_kInputs", "UNROLL_1"}));
  for (const char* never : {"FAKE_BLOCK", "DEAD_TILE", "STRING_BLOCK", "SQUARE"}) EXPECT_EQ(named(ks, never), nullptr) << never;

  const knob* block = named(ks, "BLOCK");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->kind, knob_kind::define);
  EXPECT_EQ(block->value, 64);
  EXPECT_EQ(block->values, (std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512}));
  EXPECT_TRUE(block->knob_like);
  EXPECT_EQ(named(ks, "CHUNK")->kind, knob_kind::guarded_define);
  EXPECT_FALSE(named(ks, "VERSION")->knob_like);  // a literal, not a knob by its name
  EXPECT_FALSE(named(ks, "TUNE_kInputs")->knob_like);
  EXPECT_EQ(named(ks, "TUNE_TILE")->kind, knob_kind::constexpr_value);
  EXPECT_TRUE(named(ks, "TUNE_TILE")->knob_like);
  const knob* unroll = named(ks, "UNROLL_1");
  ASSERT_NE(unroll, nullptr);
  EXPECT_EQ(unroll->kind, knob_kind::unroll_count);
  EXPECT_EQ(unroll->value, 4);
  EXPECT_EQ(unroll->values, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(unroll->line, 23u);
}

TEST(parameterize, the_tunable_kernel_builds_and_runs_at_its_default_and_at_other_values) {
  const kernel_bundle b = snippet(kSum);
  const std::string expected = build_and_run(b, "original");
  ASSERT_FALSE(expected.empty());

  auto p = parameterize(b, by_default(find_knobs(b)));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(p->hash, b.hash);
  std::vector<std::string> params;
  for (const tunable& t : p->manifest.tune.params) params.push_back(t.name);
  EXPECT_EQ(params, (std::vector<std::string>{"BLOCK", "CHUNK", "TUNE_TILE", "UNROLL_1"}));
  EXPECT_EQ(p->manifest.tune.defaults, (tune_config{{"BLOCK", 64}, {"CHUNK", 32}, {"TUNE_TILE", 8}, {"UNROLL_1", 4}}));
  const std::string& text = p->sources.at("kernel.cpp");
  EXPECT_NE(text.find("#ifndef BLOCK\n#define BLOCK 64\n#endif"), std::string::npos) << text;
  EXPECT_NE(text.find("constexpr int TILE = TUNE_TILE;"), std::string::npos) << text;
  EXPECT_NE(text.find("#pragma GCC unroll lathe_knob_UNROLL_1"), std::string::npos) << text;
  EXPECT_NE(text.find("// #define FAKE_BLOCK 8"), std::string::npos);  // comments untouched
  EXPECT_NE(text.find("\"#define STRING_BLOCK 4\""), std::string::npos);
  EXPECT_NE(text.find("constexpr int kInputs = 2;"), std::string::npos);  // not chosen: as it was
  // The macros sit after the includes, before their first use.
  EXPECT_LT(text.find("#include <cstdint>"), text.find("#define TUNE_TILE 8"));
  EXPECT_LT(text.find("#define TUNE_TILE 8"), text.find("constexpr int TILE = TUNE_TILE;"));

  // At its default it is the kernel it came from; at other values it still computes the same sum.
  for (const tune_config& c : {p->manifest.tune.defaults,
                               tune_config{{"BLOCK", 8}, {"CHUNK", 32}, {"TUNE_TILE", 64}, {"UNROLL_1", 1}},
                               tune_config{{"BLOCK", 512}, {"CHUNK", 8}, {"TUNE_TILE", 2}, {"UNROLL_1", 16}}}) {
    auto k = configure(*p, c);
    ASSERT_TRUE(k) << k.error().message;
    for (const auto& [name, v] : c) EXPECT_EQ(k->manifest.defines.at(name), std::to_string(v)) << name;
    EXPECT_EQ(build_and_run(*k, std::to_string(c.at("BLOCK"))), expected) << config_label(c);
  }
  // Written out and loaded again, it is the same bundle (its [tune] round-trips).
  const fs::path dir = fs::temp_directory_path() / ("lathe-parameterize-rt-" + std::to_string(::getpid()));
  ASSERT_TRUE(write_bundle(*p, dir));
  auto back = load_bundle(dir);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->hash, p->hash);
  fs::remove_all(dir);
}

TEST(parameterize, refuses_what_it_cannot_do_and_says_why) {
  const kernel_bundle b = snippet(kSum);
  auto none = parameterize(b, {});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no knob"), std::string::npos);
  auto unknown = parameterize(b, {knob_named("NOT_A_KNOB")});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("its knobs: BLOCK"), std::string::npos) << unknown.error().message;
  knob narrow = knob_named("BLOCK");
  narrow.values = {128, 256};
  auto missing = parameterize(b, {narrow});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("leave out its literal 64"), std::string::npos) << missing.error().message;
  narrow.values = {32, 64, 96};  // a caller's own space is kept as given
  auto own = parameterize(b, {narrow});
  ASSERT_TRUE(own) << own.error().message;
  EXPECT_EQ(own->manifest.tune.params.at(0).values, (std::vector<int64_t>{32, 64, 96}));
  auto spelled = parameterize(b, {knob_named("TILE")});  // as the source spells it
  ASSERT_TRUE(spelled) << spelled.error().message;
  EXPECT_EQ(spelled->manifest.tune.params.at(0).name, "TUNE_TILE");
  // A kernel that declares [tune] is tuned as its author wrote it.
  EXPECT_TRUE(find_knobs(*own).empty());
  auto again = parameterize(*own, {knob_named("CHUNK")});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("already declares [tune]"), std::string::npos);
}

TEST(parameterize, never_reuses_a_name_the_kernel_already_has) {
  const kernel_bundle b = snippet("int UNROLL_1 = 0; int TUNE_TILE = 1;\nconstexpr int TILE = 4;\n"
                                  "int f(const int* x) { int s = UNROLL_1 + TUNE_TILE;\n"
                                  "#pragma GCC unroll 2\n  for (int i = 0; i < TILE; ++i) s += x[i];\n  return s; }\n");
  const auto ks = find_knobs(b);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "TUNE_TILE_2");
  EXPECT_EQ(ks[1].name, "UNROLL_1_2");
}

TEST(parameterize, a_switch_set_to_zero_and_large_literals) {
  const auto ks = find_knobs(snippet("#define ORDER 0\n#define BIG_BLOCK 3072\n#define HUGE_TILE 123456789\n"
                                     "#pragma GCC unroll 0\nint f() { return ORDER + BIG_BLOCK + HUGE_TILE; }\n"));
  ASSERT_EQ(ks.size(), 2u);  // a 9-digit literal is a size, not a knob; `unroll 0` is no count
  EXPECT_EQ(ks[0].name, "ORDER");
  EXPECT_EQ(ks[0].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ks[1].name, "BIG_BLOCK");
  EXPECT_EQ(ks[1].values, (std::vector<int64_t>{768, 1536, 3072, 6144, 12288}));
}

// What a review of the first version found (each case failed before its fix).
TEST(parameterize, a_comment_after_a_pragma_count_is_left_alone) {
  const kernel_bundle b = snippet("int f(const int* x) { int s = 0;\n#pragma GCC unroll 4 // unroll by 4\n"
                                  "  for (int i = 0; i < 8; ++i) s += x[i];\n  return s; }\n");
  auto p = parameterize(b, find_knobs(b));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NE(p->sources.at("kernel.cpp").find("#pragma GCC unroll lathe_knob_UNROLL_1 // unroll by 4"), std::string::npos)
      << p->sources.at("kernel.cpp");
  // A comment between the words and the count: the site is not touched at all.
  EXPECT_TRUE(find_knobs(snippet("void g() {\n#pragma GCC unroll /* 4 */ 4\n  for (int i = 0; i < 4; ++i) {}\n}\n")).empty());
}

TEST(parameterize, the_macros_go_after_active_includes_and_survive_a_header_included_twice) {
  kernel_bundle b = snippet("#include <cstdio>\n#ifdef USE_OTHER\n#include <cmath>\n#endif\n#include \"h.h\"\n#include \"h.h\"\n"
                            "int main() { int x[8] = {1, 2, 3, 4, 5, 6, 7, 8}; std::printf(\"%d\\n\", f(x)); }\n");
  b.sources["h.h"] = "#ifndef H_H\n#define H_H\nconstexpr int TILE = 4;\ninline int f(const int* x) { int s = 0;\n"
                     "#pragma GCC unroll 2\n  for (int i = 0; i < 2 * TILE; ++i) s += x[i];\n  return s; }\n#endif\n";
  b.manifest.files.push_back("h.h");
  b.hash = bundle_hash(b);
  const std::string expected = build_and_run(b, "header-original");
  ASSERT_EQ(expected, "36\n");
  auto p = parameterize(b, find_knobs(b));
  ASSERT_TRUE(p) << p.error().message;
  for (const tune_config& c : {p->manifest.tune.defaults, tune_config{{"TUNE_TILE", 2}, {"UNROLL_1", 8}}}) {
    auto k = configure(*p, c);
    ASSERT_TRUE(k) << k.error().message;
    k->manifest.defines["USE_OTHER"] = "1";  // the conditional include compiled too
    // TILE = 2 sums the first four: a different kernel, still a build that runs.
    EXPECT_EQ(build_and_run(*k, "header-" + std::to_string(c.at("UNROLL_1"))), c.at("TUNE_TILE") == 4 ? "36\n" : "10\n");
  }
}

TEST(parameterize, macros_defined_twice_undefined_or_set_by_the_manifest) {
  EXPECT_TRUE(find_knobs(snippet("#ifdef __CUDA_ARCH__\n#define BLOCK 256\n#else\n#define BLOCK 64\n#endif\nint b = BLOCK;\n")).empty());
  EXPECT_TRUE(find_knobs(snippet("#define TILE 8\n#undef TILE\n#define TILE 16\nint t = TILE;\n")).empty());
  kernel_bundle two = snippet("#define BLOCK 64\n#include \"h.h\"\nint b = BLOCK;\n");
  two.sources["h.h"] = "#define BLOCK 64\n";
  EXPECT_TRUE(find_knobs(two).empty());
  // An include guard with a value is no knob.
  EXPECT_TRUE(find_knobs(snippet("#ifndef BLOCK_REDUCE_H\n#define BLOCK_REDUCE_H 1\nint r;\n#endif\n")).empty());

  // [defines] sets a guarded macro: its value is the default; an unguarded one is ambiguous.
  kernel_bundle g = snippet("#ifndef BLOCK\n#define BLOCK 64\n#endif\nint b = BLOCK;\n");
  g.manifest.defines["BLOCK"] = "256";
  g.hash = bundle_hash(g);
  const auto ks = find_knobs(g);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].value, 256);
  auto p = parameterize(g, ks);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->manifest.tune.defaults.at("BLOCK"), 256);
  const fs::path dir = fs::temp_directory_path() / ("lathe-parameterize-defines-" + std::to_string(::getpid()));
  ASSERT_TRUE(write_bundle(*p, dir));
  auto back = load_bundle(dir);  // [defines] and [tune].default agree
  EXPECT_TRUE(back) << back.error().message;
  fs::remove_all(dir);
  kernel_bundle u = snippet("#define BLOCK 64\nint b = BLOCK;\n");
  u.manifest.flags.push_back("-DBLOCK=128");
  EXPECT_TRUE(find_knobs(u).empty());
  // A new macro never takes a name the manifest defines.
  kernel_bundle n = snippet("constexpr int TILE = 8;\nint t = TILE;\n");
  n.manifest.defines["TUNE_TILE"] = "3";
  ASSERT_EQ(find_knobs(n).size(), 1u);
  EXPECT_EQ(find_knobs(n)[0].name, "TUNE_TILE_2");
}

TEST(parameterize, knob_words_and_a_callers_values) {
  const auto ks = find_knobs(snippet("#define NROWS 64\n#define WORKSPACE 64\n#define ACCURACY 8\n#define ROWS_PER_BLOCK 4\n"
                                     "constexpr int kBlockSize = 128;\nint z = NROWS + WORKSPACE + ACCURACY + ROWS_PER_BLOCK + kBlockSize;\n"));
  std::map<std::string, bool> like;
  for (const knob& k : ks) like[k.name] = k.knob_like;
  EXPECT_EQ(like, (std::map<std::string, bool>{{"ACCURACY", false}, {"NROWS", false}, {"ROWS_PER_BLOCK", true},
                                               {"TUNE_kBlockSize", true}, {"WORKSPACE", false}}));
  const kernel_bundle b = snippet(kSum);
  knob twice = knob_named("BLOCK");
  twice.values = {16, 64, 64};
  auto dup = parameterize(b, {twice});
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("64 twice"), std::string::npos) << dup.error().message;
  auto again = parameterize(b, {knob_named("BLOCK"), knob_named("BLOCK")});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("chosen twice"), std::string::npos) << again.error().message;
}

TEST(parameterize, cuda_unroll_counts_and_constants_compile_at_other_values) {
  const kernel_bundle b = snippet(R"(#include <cuda_runtime.h>
constexpr int THREADS = 256;
__global__ void k(const float* __restrict__ x, float* __restrict__ y) {
  float s = 0.0f;
#pragma unroll 4
  for (int i = 0; i < 16; ++i) s += x[i * THREADS + threadIdx.x];
  y[threadIdx.x] = s;
}
)",
                                  language::cuda);
  auto p = parameterize(b, by_default(find_knobs(b)));
  ASSERT_TRUE(p) << p.error().message;
  const std::string& text = p->sources.at("kernel.cu");
  EXPECT_NE(text.find("#pragma unroll lathe_knob_UNROLL_1"), std::string::npos) << text;
  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc: the CUDA text was checked, not compiled";
  auto k = configure(*p, {{"TUNE_THREADS", 128}, {"UNROLL_1", 16}});
  ASSERT_TRUE(k) << k.error().message;
  const fs::path dir = fs::temp_directory_path() / ("lathe-parameterize-cu-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "kernel.cu") << k->sources.at("kernel.cu");
  std::string cmd = std::string(nvcc) + " -arch=sm_90a -c -o " + (dir / "k.o").string();
  for (const auto& [n, v] : k->manifest.defines) cmd += " -D" + n + "=" + v;
  cmd += " " + (dir / "kernel.cu").string() + " > " + (dir / "err").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream e(dir / "err");
  std::stringstream ss;
  ss << e.rdbuf();
  EXPECT_EQ(ss.str().find("warning"), std::string::npos) << ss.str();  // the count was taken, not ignored
  fs::remove_all(dir);
}

}  // namespace
