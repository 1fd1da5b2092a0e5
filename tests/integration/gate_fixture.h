// Shared set-up of the integration tests: a real toolchain, the real worker, a private cache
// and lock directory, the CPU target with measured ceilings (measured once per process).
#pragma once

#include <cstdint>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spec/bundle.h"
#include "gate/gate.h"
#include "gate/host_target.h"
#include "spec/task_file.h"

namespace lathe::testing {

inline std::filesystem::path source_dir() { return LATHE_SOURCE_DIR; }

// The outcome a test kernel must get, from its first line: `// expect: <outcome>` (`# expect: `
// in a Python file).
inline std::string expected_outcome(const std::filesystem::path& file, const std::string& tag = "// expect: ") {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line.rfind(tag, 0) == 0 ? line.substr(tag.size()) : "";
}

inline const target& measured_target() {
  static target t = [] {
    target x = gate::detect_cpu_target();
    auto c = gate::measure_cpu_ceilings(x);
    x.copy_bytes_per_s = c.dram_bytes_per_s;
    x.cache_bytes_per_s = c.llc_bytes_per_s;
    x.l2_bytes_per_s = c.l2_bytes_per_s;
    x.flops_per_s = c.flops_per_s;
    return x;
  }();
  return t;
}

class gate_env : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-gate-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
    auto tc = gate::detect_toolchain(source_dir() / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    cfg_.tools = *tc;
    cfg_.cache_dir = dir_ / "cache";
    cfg_.tgt = measured_target();
    cfg_.sandbox.worker_exe = std::filesystem::path(LATHE_BINARY_DIR) / "lathe-worker";
    cfg_.sandbox.address_space_bytes = uint64_t{2} << 30;
    cfg_.sandbox.rss_limit_bytes = uint64_t{1} << 30;
    cfg_.call_timeout_s = 3;
    cfg_.policy.min_seconds = 0.2;
    cfg_.policy.max_seconds = 1.5;
    cfg_.policy.warmup_seconds = 0.02;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  task load(const std::filesystem::path& p) {
    auto t = load_task(p);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? *t : task{};
  }
  kernel_bundle kernel(const std::filesystem::path& p) {
    auto b = load_bundle(p);
    EXPECT_TRUE(b) << (b ? "" : b.error().message);
    return b ? *b : kernel_bundle{};
  }
  evaluation eval(const task& t, const kernel_bundle& k, bool time, const std::string& baseline = "") {
    gate::gate_config cfg = cfg_;
    cfg.time = time;
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.baseline = kernel(*find_kernel(t, baseline.empty() ? t.baseline : baseline));
    req.prov = {"human", "test", false};
    return gate::evaluate(cfg, req);
  }

  std::filesystem::path dir_;
  gate::gate_config cfg_;
};

}  // namespace lathe::testing
