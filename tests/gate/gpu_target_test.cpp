// The GPU target without a GPU: the probe's JSON, the capabilities and build architecture that
// follow from a compute capability, the nvcc command lathe builds with on Hopper, and
// detect_gpu_target running a stand-in probe (a shell script) through gate::run_tool.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gate/build.h"
#include "gate/gpu_target.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::gate;

namespace {

const fs::path fixture = fs::path(LATHE_SOURCE_DIR) / "tests/gate/fixtures/probe_h200.json";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using caps = std::vector<std::string>;

}  // namespace

TEST(probe_json, every_field_is_read) {
  auto g = parse_probe_json(slurp(fixture));
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->name, "NVIDIA H200");
  EXPECT_EQ(g->uuid, "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9");
  EXPECT_EQ(g->cc_major, 9);
  EXPECT_EQ(g->cc_minor, 0);
  EXPECT_EQ(g->sm_count, 132u);
  EXPECT_EQ(g->l2_bytes, 52428800u);
  EXPECT_EQ(g->memory_bytes, 150754820096u);
  EXPECT_EQ(g->smem_optin_bytes, 232448u);
  EXPECT_EQ(g->smem_per_sm_bytes, 233472u);
  EXPECT_EQ(g->registers_per_sm, 65536u);
  EXPECT_EQ(g->sm_clock_mhz, 1980u);
  EXPECT_EQ(g->mem_clock_mhz, 3201u);
  EXPECT_EQ(g->memory_bus_bits, 6144u);
  EXPECT_EQ(g->driver_version, 13000);
  EXPECT_EQ(g->runtime_version, 13000);
  EXPECT_DOUBLE_EQ(g->copy_bytes_per_s, 4.2e12);
  EXPECT_DOUBLE_EQ(g->cache_bytes_per_s, 9.5e12);
  EXPECT_DOUBLE_EQ(g->tensor_flops_per_s, 8.07e14);
  EXPECT_DOUBLE_EQ(g->flops_per_s, 5.1e13);
}

TEST(probe_json, found_among_other_output_and_unmeasured_is_zero) {
  // run_tool interleaves stderr: a driver warning before the object must not hide it.
  const std::string text =
      "warning: something from the driver\n"
      R"({"schema": "lathe.probe-cuda/1", "name": "NVIDIA A100", "uuid": "GPU-x", "cc_major": 8,
          "cc_minor": 0, "sm_count": 108, "measured": false})"
      "\n";
  auto g = parse_probe_json(text);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->name, "NVIDIA A100");
  EXPECT_EQ(g->sm_count, 108u);
  EXPECT_EQ(g->copy_bytes_per_s, 0.0);
  EXPECT_EQ(g->tensor_flops_per_s, 0.0);
}

TEST(probe_json, failures_say_why) {
  auto e = parse_probe_json(R"({"schema": "lathe.probe-cuda/1", "error": "cudaGetDeviceCount: cudaErrorNoDevice"})");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("cudaErrorNoDevice"), std::string::npos) << e.error().message;

  auto garbage = parse_probe_json("Segmentation fault (core dumped)\n");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code, errc::parse_error);
  EXPECT_NE(garbage.error().message.find("Segmentation fault"), std::string::npos);

  auto other = parse_probe_json(R"({"schema": "lathe.probe-cuda/9", "name": "x", "cc_major": 9, "cc_minor": 0, "sm_count": 1})");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("lathe.probe-cuda/9"), std::string::npos);

  auto missing = parse_probe_json(R"({"schema": "lathe.probe-cuda/1", "name": "x", "cc_major": 9, "cc_minor": 0})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("sm_count"), std::string::npos);

  auto wrong_type = parse_probe_json(
      R"({"schema": "lathe.probe-cuda/1", "name": "x", "cc_major": "nine", "cc_minor": 0, "sm_count": 1})");
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().code, errc::parse_error);

  auto no_sms = parse_probe_json(R"({"schema": "lathe.probe-cuda/1", "name": "x", "cc_major": 9, "cc_minor": 0, "sm_count": 0})");
  ASSERT_FALSE(no_sms);
  EXPECT_NE(no_sms.error().message.find("implausible"), std::string::npos);
}

TEST(cuda_target, architecture_is_arch_specific_from_hopper_on) {
  EXPECT_EQ(cuda_arch(7, 0), "sm_70");
  EXPECT_EQ(cuda_arch(7, 5), "sm_75");
  EXPECT_EQ(cuda_arch(8, 0), "sm_80");
  EXPECT_EQ(cuda_arch(8, 9), "sm_89");
  EXPECT_EQ(cuda_arch(9, 0), "sm_90a");
  EXPECT_EQ(cuda_arch(10, 0), "sm_100a");
  EXPECT_EQ(cuda_arch(12, 0), "sm_120a");
}

TEST(cuda_target, capabilities_follow_the_compute_capability) {
  EXPECT_EQ(cuda_capabilities(6, 1), caps{});
  EXPECT_EQ(cuda_capabilities(7, 0), caps{"mma.sync"});
  EXPECT_EQ(cuda_capabilities(7, 5), (caps{"ldmatrix", "mma.sync"}));
  EXPECT_EQ(cuda_capabilities(8, 0), (caps{"bf16", "cp.async", "ldmatrix", "mma.sync"}));
  EXPECT_EQ(cuda_capabilities(8, 6), (caps{"bf16", "cp.async", "ldmatrix", "mma.sync"}));
  EXPECT_EQ(cuda_capabilities(8, 9), (caps{"bf16", "cp.async", "fp8", "ldmatrix", "mma.sync"}));
  EXPECT_EQ(cuda_capabilities(9, 0), (caps{"bf16", "cluster", "cp.async", "fp8", "ldmatrix", "mma.sync",
                                           "setmaxnreg", "tma", "wgmma"}));
  // Blackwell keeps TMA and clusters but has no wgmma.
  const caps blackwell = cuda_capabilities(10, 0);
  EXPECT_TRUE(std::count(blackwell.begin(), blackwell.end(), "tma"));
  EXPECT_TRUE(std::count(blackwell.begin(), blackwell.end(), "cluster"));
  EXPECT_FALSE(std::count(blackwell.begin(), blackwell.end(), "wgmma"));
  EXPECT_TRUE(std::is_sorted(blackwell.begin(), blackwell.end()));
}

TEST(cuda_target, probe_reading_becomes_a_lathe_target) {
  auto g = parse_probe_json(slurp(fixture));
  ASSERT_TRUE(g);
  const target t = to_target(*g);
  EXPECT_EQ(t.plat, platform::cuda);
  EXPECT_EQ(t.arch, "sm_90a");
  EXPECT_EQ(t.device, "NVIDIA H200");
  EXPECT_EQ(t.uuid, g->uuid);
  EXPECT_TRUE(has_capability(t, "wgmma"));
  EXPECT_TRUE(has_capability(t, "tma"));
  EXPECT_EQ(t.cores, 132u);
  EXPECT_EQ(t.llc_bytes, 52428800u);
  EXPECT_EQ(t.memory_bytes, g->memory_bytes);
  EXPECT_EQ(t.smem_optin_bytes, 232448u);
  EXPECT_EQ(t.cc_major, 9);
  EXPECT_EQ(t.driver_version, 13000);
  EXPECT_DOUBLE_EQ(t.copy_bytes_per_s, 4.2e12);
  EXPECT_DOUBLE_EQ(t.cache_bytes_per_s, 9.5e12);
  EXPECT_DOUBLE_EQ(t.flops_per_s, 5.1e13);
  EXPECT_DOUBLE_EQ(t.tensor_flops_per_s, 8.07e14);
}

TEST(cuda_target, hopper_builds_use_the_arch_specific_gencode) {
  kernel_bundle b;
  b.manifest.lang = language::cuda;
  b.manifest.entry = "k.cu";
  b.sources = {{"k.cu", "extern \"C\" int lathe_launch(const void*) { return 0; }\n"}};
  toolchain tc;
  tc.nvcc = "/usr/local/cuda/bin/nvcc";
  auto gencodes = [&](const std::string& isa) {
    std::vector<std::string> out;
    for (const auto& a : compile_command(b, isa, tc, build_kind::kernel, "/src", "/out/k.so"))
      if (a.starts_with("-gencode") || a.starts_with("-arch") || a.starts_with("--gpu-architecture"))
        out.push_back(a);
    return out;
  };
  // Exactly one architecture, the arch-specific one: compute_90 PTX would reject wgmma.
  EXPECT_EQ(gencodes(cuda_arch(9, 0)), std::vector<std::string>{"-gencode=arch=compute_90a,code=sm_90a"});
  EXPECT_EQ(gencodes(cuda_arch(8, 0)), std::vector<std::string>{"-gencode=arch=compute_80,code=sm_80"});
}

class fake_probe : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-probe-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A probe that records its arguments and prints `body` (a shell fragment), exiting with `rc`.
  fs::path write_probe(const std::string& body, int rc = 0) {
    const fs::path p = dir_ / "lathe-probe-cuda";
    std::ofstream(p) << "#!/bin/sh\necho \"$*\" >> '" << (dir_ / "args").string() << "'\n"
                     << body << "\nexit " << rc << "\n";
    chmod(p.c_str(), 0755);
    return p;
  }
  std::string args() const { return slurp(dir_ / "args"); }
  fs::path dir_;
};

TEST_F(fake_probe, detect_runs_the_probe_and_builds_the_target) {
  const fs::path p = write_probe("cat '" + fixture.string() + "'");
  auto t = detect_gpu_target(p, false);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(args(), "--device 0 --no-measure\n");
  EXPECT_EQ(t->arch, "sm_90a");
  EXPECT_EQ(t->cores, 132u);
  auto m = detect_gpu_target(p, true, 1);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(args(), "--device 0 --no-measure\n--device 1\n");
  EXPECT_DOUBLE_EQ(m->tensor_flops_per_s, 8.07e14);
}

TEST_F(fake_probe, a_failing_probe_is_an_error_with_its_reason) {
  const fs::path p = write_probe(
      R"(echo '{"schema": "lathe.probe-cuda/1", "error": "cudaMalloc (copy source): cudaErrorMemoryAllocation"}')", 1);
  auto t = detect_gpu_target(p, true);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("cudaErrorMemoryAllocation"), std::string::npos) << t.error().message;

  // A probe that prints a valid object but exits non-zero is not trusted either.
  const fs::path q = write_probe("cat '" + fixture.string() + "'", 3);
  auto u = detect_gpu_target(q, false);
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("exited with 3"), std::string::npos) << u.error().message;

  auto missing = detect_gpu_target(dir_ / "no-such-probe", false);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no-such-probe"), std::string::npos) << missing.error().message;
}
