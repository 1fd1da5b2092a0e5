// lathe-probe-cuda on a real device (label gpu; skipped where there is no NVIDIA device): the
// properties are those of a GPU, the measured ceilings are plausible and below the hardware's
// peaks, NVML reads the same device, and `lathe doctor` reports it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gate/gpu_target.h"
#include "gate/nvml.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

const fs::path probe = fs::path(LATHE_BINARY_DIR) / "lathe-probe-cuda";

class gpu_probe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "no NVIDIA device";
    ASSERT_TRUE(fs::exists(probe)) << probe << " was not built (CUDA toolkit not found by CMake?)";
    char tmpl[] = "/tmp/lathe-gpu-probe-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

}  // namespace

TEST_F(gpu_probe, properties_and_measured_ceilings_are_sane) {
  auto t = gate::detect_gpu_target(probe, true);
  ASSERT_TRUE(t) << t.error().message;
  std::printf("%s %s (cc %d.%d, %u SMs, L2 %llu MiB): copy %.0f GB/s, L2 copy %.0f GB/s, "
              "bf16 %.1f TFLOP/s, fp32 %.1f TFLOP/s\n",
              t->device.c_str(), t->arch.c_str(), t->cc_major, t->cc_minor, t->cores,
              static_cast<unsigned long long>(t->llc_bytes >> 20), t->copy_bytes_per_s / 1e9,
              t->cache_bytes_per_s / 1e9, t->tensor_flops_per_s / 1e12, t->flops_per_s / 1e12);
  EXPECT_EQ(t->plat, platform::cuda);
  EXPECT_FALSE(t->device.empty());
  EXPECT_EQ(t->uuid.rfind("GPU-", 0), 0u) << t->uuid;
  EXPECT_EQ(t->uuid.size(), 40u) << t->uuid;
  EXPECT_GE(t->cc_major, 7);
  EXPECT_EQ(t->arch, gate::cuda_arch(t->cc_major, t->cc_minor));
  EXPECT_EQ(t->capabilities, gate::cuda_capabilities(t->cc_major, t->cc_minor));
  EXPECT_GT(t->cores, 0u);
  EXPECT_GT(t->llc_bytes, uint64_t{1} << 20);
  EXPECT_GT(t->memory_bytes, uint64_t{4} << 30);
  EXPECT_GE(t->smem_optin_bytes, uint64_t{48} << 10);
  EXPECT_GE(t->smem_per_sm_bytes, t->smem_optin_bytes);
  EXPECT_GE(t->registers_per_sm, 65536u);
  EXPECT_GT(t->sm_clock_mhz, 500u);
  EXPECT_GE(t->driver_version, 11000);
  EXPECT_GE(t->runtime_version, 11000);

  EXPECT_GT(t->copy_bytes_per_s, 100e9);
  EXPECT_GT(t->cache_bytes_per_s, t->copy_bytes_per_s);  // L2 is faster than device memory
  EXPECT_GT(t->flops_per_s, 1e12);
  EXPECT_GT(t->tensor_flops_per_s, t->flops_per_s);
  // Below the hardware's peaks: double data rate over the bus for memory; at most 128 fp32 FMA
  // lanes per SM (an SGEMM above that would be TF32, which the default math mode must not use).
  if (t->mem_clock_mhz > 0 && t->memory_bus_bits > 0) {
    const double dram_peak = 2.0 * t->mem_clock_mhz * 1e6 * t->memory_bus_bits / 8;
    EXPECT_LT(t->copy_bytes_per_s, 1.1 * dram_peak) << "peak " << dram_peak / 1e9 << " GB/s";
  }
  const double fp32_peak = 2.0 * 128 * t->cores * t->sm_clock_mhz * 1e6;
  EXPECT_LT(t->flops_per_s, 1.1 * fp32_peak) << "peak " << fp32_peak / 1e12 << " TFLOP/s";
}

TEST_F(gpu_probe, no_measure_reads_properties_only_and_a_missing_device_is_an_error) {
  auto t = gate::detect_gpu_target(probe, false);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_GT(t->cores, 0u);
  EXPECT_EQ(t->copy_bytes_per_s, 0.0);
  EXPECT_EQ(t->tensor_flops_per_s, 0.0);
  auto none = gate::detect_gpu_target(probe, false, 999);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no CUDA device 999"), std::string::npos) << none.error().message;
}

TEST_F(gpu_probe, nvml_reads_the_same_device) {
  auto t = gate::detect_gpu_target(probe, false);
  ASSERT_TRUE(t) << t.error().message;
  auto s = gate::read_gpu_snapshot(t->uuid);
  ASSERT_TRUE(s) << "NVML could not read " << t->uuid;
  EXPECT_GT(s->sm_clock_mhz, 0u);
  EXPECT_LE(s->sm_clock_mhz, t->sm_clock_mhz + 100);
  EXPECT_GT(s->mem_clock_mhz, 0u);
  EXPECT_GT(s->temperature_c, 0);
  EXPECT_LT(s->temperature_c, 110);
  EXPECT_GT(s->power_w, 0.0);
  EXPECT_FALSE(s->time.empty());
}

TEST_F(gpu_probe, doctor_reports_the_gpu) {
  const std::string cmd = "'" + LATHE_BINARY_DIR + "/lathe' --workspace '" + dir_.string() + "' doctor --json";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  auto j = nlohmann::json::parse(out);
  // Exit code 0 means the device was read (and OpenMP links, which this test is not about).
  if (j["openmp"].get<bool>()) {
    EXPECT_EQ(status, 0) << out;
  }
  EXPECT_TRUE(j["gpu"].get<bool>());
  ASSERT_TRUE(j["gpu_target"].is_object()) << j["gpu_error"];
  EXPECT_EQ(j["gpu_target"]["platform"], "cuda");
  EXPECT_EQ(j["gpu_target"]["arch"].get<std::string>().rfind("sm_", 0), 0u);
  EXPECT_GT(j["gpu_target"]["copy_bytes_per_s"].get<double>(), 100e9);
  EXPECT_TRUE(j["gpu_snapshot"].is_object());
}
