#include <gtest/gtest.h>

#include "gate/screen.h"

#include <fstream>
#include <set>
#include <sstream>

using namespace lathe;
using namespace lathe::gate;

namespace {

kernel_bundle bundle(const std::string& code, std::vector<std::string> flags = {"-O3"}) {
  kernel_bundle b;
  b.name = "k";
  b.manifest.entry = "k.cpp";
  b.manifest.files = {"k.cpp"};
  b.manifest.flags = std::move(flags);
  b.sources["k.cpp"] = code;
  return b;
}

task fp32_task() {
  task t;
  t.name = "t";
  tensor_spec o;
  o.name = "Y";
  o.type = dtype::f32;
  t.outputs.push_back(o);
  return t;
}

bool has(const std::vector<finding>& f, const std::string& what) {
  for (const auto& x : f)
    if (x.what == what) return true;
  return false;
}

}  // namespace

TEST(screen, clean_kernel_passes) {
  auto f = screen_sources(bundle("#include <lathe/abi.h>\n#include <immintrin.h>\nint time_steps = 3;\n"
                                 "extern \"C\" int lathe_launch(const lathe_args* a) { return 0; }\n"),
                          fp32_task(), screen_role::candidate);
  EXPECT_TRUE(f.empty()) << describe(f);
}

TEST(screen, finds_each_forbidden_call_with_its_line) {
  auto f = screen_sources(bundle("int a;\nint b = getenv(\"K\") != 0;\n"), fp32_task(), screen_role::candidate);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].what, "environment access");
  EXPECT_EQ(f[0].where, "k.cpp:2");
  EXPECT_TRUE(has(screen_sources(bundle("void f(){ system(\"ls\"); }"), fp32_task(), screen_role::candidate), "process creation"));
  EXPECT_TRUE(has(screen_sources(bundle("void f(){ fopen(\"x\",\"w\"); }"), fp32_task(), screen_role::candidate), "file access"));
  EXPECT_TRUE(has(screen_sources(bundle("void f(){ clock_gettime(0, 0); }"), fp32_task(), screen_role::candidate), "timer access"));
  EXPECT_TRUE(has(screen_sources(bundle("void f(){ asm volatile(\"syscall\"); }"), fp32_task(), screen_role::candidate), "inline assembly"));
}

TEST(screen, comments_and_strings_do_not_count) {
  auto f = screen_sources(bundle("// getenv(\"X\") is not called\n/* system(1) */\nconst char* s = \"fork()\";\n"),
                          fp32_task(), screen_role::candidate);
  EXPECT_TRUE(f.empty()) << describe(f);
}

TEST(screen, includes_outside_the_bundle) {
  EXPECT_TRUE(has(screen_sources(bundle("#include \"/proc/self/environ\"\n"), fp32_task(), screen_role::candidate), "file access"));
  EXPECT_TRUE(has(screen_sources(bundle("#include \"../../secret.h\"\n"), fp32_task(), screen_role::candidate), "file access"));
}

TEST(screen, flags) {
  task t = fp32_task();
  EXPECT_TRUE(has(screen_sources(bundle("", {"-O3", "-ffast-math"}), t, screen_role::candidate), "compiler flag"));
  EXPECT_TRUE(has(screen_sources(bundle("", {"-fplugin=/tmp/x.so"}), t, screen_role::candidate), "compiler flag"));
  EXPECT_TRUE(has(screen_sources(bundle("", {"-march=native"}), t, screen_role::candidate), "compiler flag"));
  EXPECT_TRUE(has(screen_sources(bundle("", {"-Wl,-rpath,/tmp"}), t, screen_role::candidate), "compiler flag"));
  EXPECT_TRUE(has(screen_sources(bundle("", {"-Wl,--wrap=clock_gettime"}), t, screen_role::candidate), "compiler flag"));
  EXPECT_TRUE(screen_sources(bundle("", {"-Wall", "-Wno-unused"}), t, screen_role::candidate).empty());
  EXPECT_TRUE(screen_sources(bundle("", {"-O3", "-fopenmp", "-funroll-loops", "-DTILE=64"}), t, screen_role::candidate).empty());
  t.allow_fast_math = true;
  EXPECT_TRUE(screen_sources(bundle("", {"-ffast-math"}), t, screen_role::candidate).empty());
}

TEST(screen, vendor_libraries_only_for_baselines_or_when_allowed) {
  task t = fp32_task();
  auto b = bundle("");
  b.manifest.libraries = {"openblas"};
  EXPECT_TRUE(has(screen_sources(b, t, screen_role::candidate), "vendor library"));
  EXPECT_TRUE(screen_sources(b, t, screen_role::baseline).empty());
  t.allow_libraries = {"openblas"};
  EXPECT_TRUE(screen_sources(b, t, screen_role::candidate).empty());
}

TEST(screen, half_precision_below_an_fp32_contract) {
  task t = fp32_task();
  EXPECT_TRUE(has(screen_sources(bundle("_Float16 h;"), t, screen_role::candidate),
                  "precision below the task's contract"));
  t.outputs[0].type = dtype::bf16;
  EXPECT_TRUE(screen_sources(bundle("__bf16 h;"), t, screen_role::candidate).empty());
}

TEST(screen, ptx_inline_assembly_in_cuda_sources_is_allowed_but_not_system_calls) {
  kernel_bundle b = bundle("");
  b.sources.clear();
  b.sources["k.cu"] = "__device__ void f(unsigned a) { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n";
  EXPECT_TRUE(screen_sources(b, fp32_task(), screen_role::candidate).empty());
  b.sources["k.cu"] = "void g() { asm volatile(\"syscall\"); }\n";
  EXPECT_TRUE(has(screen_sources(b, fp32_task(), screen_role::candidate), "inline assembly"));
  b.sources.clear();
  b.sources["k.cpp"] = "void g() { asm volatile(\"nop\"); }\n";
  EXPECT_TRUE(has(screen_sources(b, fp32_task(), screen_role::candidate), "inline assembly"));
}

namespace {

kernel_bundle cu_bundle(const std::string& code) {
  kernel_bundle b = bundle("");
  b.sources.clear();
  b.manifest.entry = "k.cu";
  b.manifest.files = {"k.cu"};
  b.sources["k.cu"] = code;
  return b;
}

std::vector<finding> screen_cu(const std::string& code) {
  return screen_sources(cu_bundle(code), fp32_task(), screen_role::candidate);
}

}  // namespace

TEST(screen, cuda_launches_on_the_default_stream) {
  const std::string def = "CUDA ABI violation (default stream)";
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256>>>(y); }"), def));
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256, 1024>>>(y); }"), def));
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256, 0, 0>>>(y); }"), def));
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256, 0, nullptr>>>(y); }"), def));
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256, 0, (cudaStream_t) 0>>>(y); }"), def));
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, 256, 0, static_cast<cudaStream_t>(NULL)>>>(y); }"), def));
  // The line of the launch, also when its configuration spans lines.
  auto f = screen_cu("int a;\nvoid f(float* y) {\n  k<<<dim3(4, 4),\n    dim3(16, 16)>>>(y);\n}\n");
  ASSERT_EQ(f.size(), 1u) << describe(f);
  EXPECT_EQ(f[0].where, "k.cu:3");
  // Launches on args->stream or on a stream variable pass; so does a one-argument macro, whose
  // expansion the text screen cannot see; comments do not count.
  EXPECT_TRUE(screen_cu("void f(const lathe_args* a, float* y) {\n"
                        "  k<<<dim3((n + 255) / 256, 1), 256, 0, static_cast<cudaStream_t>(a->stream)>>>(y);\n"
                        "  k<<<grid, THREADS, SMEM_BYTES, stream>>>(y);\n  k<<<GRID_>>>(y);\n"
                        "  // k<<<g, b>>>(y) would be refused\n}\n")
                  .empty());
  // The rule is for CUDA sources only.
  EXPECT_TRUE(screen_sources(bundle("// k<<<g, b>>>\nint x = 1;\n"), fp32_task(), screen_role::candidate).empty());
}

TEST(screen, cuda_default_streams_persistent_l2_and_the_driver_api_by_name) {
  EXPECT_TRUE(has(screen_cu("void f(float* y) { k<<<g, b, 0, cudaStreamPerThread>>>(y); }"),
                  "CUDA ABI violation (default stream)"));
  EXPECT_TRUE(has(screen_cu("cudaStream_t s = cudaStreamLegacy;"), "CUDA ABI violation (default stream)"));
  EXPECT_TRUE(has(screen_cu("void f() { cudaLaunchAttribute at[1];\n"
                            "  at[0].id = cudaLaunchAttributeAccessPolicyWindow; }"),
                  "CUDA ABI violation (persistent L2)"));
  EXPECT_TRUE(has(screen_cu("auto p = cudaAccessPropertyPersisting;"), "CUDA ABI violation (persistent L2)"));
  auto f = screen_cu("void f() { void* fn; cudaGetDriverEntryPoint(\"cuCtxSetLimit\", &fn, 0); }");
  EXPECT_TRUE(has(f, "dynamic loading")) << describe(f);
}

// Python bindings (tests/problems/bindings): each file's first line names the rules it must
// trip, "# expect: fallback torch_op"; an empty list means clean.
namespace {

std::set<std::string> binding_rules(const std::string& file, const task& t) {
  std::ifstream in(std::string(LATHE_SOURCE_DIR) + "/tests/problems/bindings/" + file);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  std::set<std::string> out;
  for (const auto& f : screen_python_binding(file, text, t, screen_role::candidate)) {
    EXPECT_NE(f.where.find(file + ":"), std::string::npos) << f.where;
    out.insert(f.what);
  }
  return out;
}

std::set<std::string> expected_rules(const std::string& file) {
  std::ifstream in(std::string(LATHE_SOURCE_DIR) + "/tests/problems/bindings/" + file);
  std::string line;
  std::getline(in, line);
  std::set<std::string> out;
  std::istringstream words(line.substr(line.find(':') + 1));
  for (std::string w; words >> w;)
    out.insert(w == "fallback" ? "python fallback" : w == "torch_op" ? "torch compute op" : "precision downgrade");
  return out;
}

}  // namespace

TEST(screen_python, each_binding_trips_exactly_its_rules) {
  for (const char* f : {"clean.py", "fallback.py", "swallow.py", "torch_ops.py", "precision.py"})
    EXPECT_EQ(binding_rules(f, fp32_task()), expected_rules(f)) << f;
}

TEST(screen_python, the_task_decides_what_is_allowed) {
  task t = fp32_task();
  t.allow_libraries = {"torch"};  // PyTorch's compute allowed: the matmul binding passes
  EXPECT_TRUE(binding_rules("torch_ops.py", t).empty());
  // ...but a fallback still computes behind a failure, and is still refused.
  EXPECT_EQ(binding_rules("fallback.py", t), std::set<std::string>{"python fallback"});
  task half = fp32_task();
  half.outputs[0].type = dtype::f16;  // a half task: half types in the source are its contract
  EXPECT_TRUE(binding_rules("precision.py", half).empty());
}

TEST(screen_python, a_binding_that_does_not_parse_is_a_finding) {
  const auto f = screen_python_binding("broken.py", "def forward(x:\n  return", fp32_task(),
                                       screen_role::candidate);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].detail.find("syntax error"), std::string::npos) << f[0].detail;
}

TEST(screen_python, a_bundle_carrying_a_binding_is_screened_with_its_sources) {
  kernel_bundle b = bundle("extern \"C\" int lathe_launch(const void*) { return 0; }\n");
  b.manifest.files.push_back("binding.py");
  b.sources["binding.py"] = "import torch\ndef run(x):\n    return torch.matmul(x, x)\n";
  const auto f = screen_sources(b, fp32_task(), screen_role::candidate);
  EXPECT_TRUE(has(f, "torch compute op"));
}
