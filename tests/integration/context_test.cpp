// The GPU target of the CLI context, cached per device: a stand-in lathe-probe-cuda (a shell
// script that logs its arguments and returns readings that change with every call) shows when
// lathe measures, when it reuses the store's ceilings, and that re-measuring only ratchets up.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/context.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

class gpu_cache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-context-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
    auto db = store::open(dir_ / "lathe.db");
    ASSERT_TRUE(db) << db.error().message;
    db_.emplace(std::move(*db));
    set_uuid("GPU-11111111-2222-3333-4444-555555555555");
    // Call n reports copy (20 - n) TB/s and bf16 n x 100 TFLOP/s when it measures.
    const std::string log = (dir_ / "log").string(), uuid = (dir_ / "uuid").string();
    std::ofstream(probe()) << "#!/bin/sh\n"
        "echo \"$*\" >> '" << log << "'\n"
        "n=$(wc -l < '" << log << "')\n"
        "m=''\n"
        "case \"$*\" in *--no-measure*) ;; *) m=\", \\\"copy_bytes_per_s\\\": $((20 - n))e12, "
        "\\\"cache_bytes_per_s\\\": 9e12, \\\"flops_per_s\\\": 5e13, \\\"tensor_flops_per_s\\\": ${n}e14\";; esac\n"
        "echo \"{\\\"schema\\\": \\\"lathe.probe-cuda/1\\\", \\\"name\\\": \\\"NVIDIA H200\\\", "
        "\\\"uuid\\\": \\\"$(cat '" << uuid << "')\\\", \\\"cc_major\\\": 9, \\\"cc_minor\\\": 0, "
        "\\\"sm_count\\\": 132, \\\"l2_bytes\\\": 52428800$m}\"\n";
    chmod(probe().c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void set_uuid(const std::string& u) { std::ofstream(dir_ / "uuid") << u; }
  // How many times the probe ran, and how many of those measured.
  std::pair<int, int> calls() const {
    std::ifstream in(dir_ / "log");
    int all = 0, measured = 0;
    for (std::string line; std::getline(in, line); ++all)
      if (line.find("--no-measure") == std::string::npos) ++measured;
    return {all, measured};
  }
  fs::path probe() const { return dir_ / "lathe-probe-cuda"; }
  result<target> get(bool measure, bool refresh) {
    return cli::cached_gpu_target_probed(*db_, probe(), measure, refresh);
  }
  fs::path dir_;
  std::optional<store> db_;
};

}  // namespace

TEST_F(gpu_cache, probed_once_per_device_then_reused_and_refreshed_upward) {
  auto none = get(false, false);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->arch, "sm_90a");
  EXPECT_EQ(none->copy_bytes_per_s, 0.0);  // nothing cached and not allowed to measure
  EXPECT_EQ(calls(), std::make_pair(1, 0));

  auto first = get(true, false);  // call 2 reads the device, call 3 measures
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(calls(), std::make_pair(3, 1));
  EXPECT_DOUBLE_EQ(first->copy_bytes_per_s, 17e12);
  EXPECT_DOUBLE_EQ(first->tensor_flops_per_s, 3e14);
  EXPECT_DOUBLE_EQ(first->cache_bytes_per_s, 9e12);
  EXPECT_DOUBLE_EQ(first->flops_per_s, 5e13);

  auto again = get(true, false);  // cached: no new measurement
  ASSERT_TRUE(again);
  EXPECT_EQ(calls(), std::make_pair(4, 1));
  EXPECT_DOUBLE_EQ(again->copy_bytes_per_s, 17e12);
  EXPECT_DOUBLE_EQ(again->tensor_flops_per_s, 3e14);
  auto unmeasured = get(false, false);  // the cache serves callers that may not measure
  EXPECT_DOUBLE_EQ(unmeasured->copy_bytes_per_s, 17e12);

  auto refreshed = get(true, true);  // calls 6 and 7: copy reads 13 TB/s, bf16 700 TFLOP/s
  ASSERT_TRUE(refreshed);
  EXPECT_EQ(calls(), std::make_pair(7, 2));
  EXPECT_DOUBLE_EQ(refreshed->copy_bytes_per_s, 17e12);    // a lower reading does not replace
  EXPECT_DOUBLE_EQ(refreshed->tensor_flops_per_s, 7e14);   // a higher one does
  EXPECT_DOUBLE_EQ(get(false, false)->tensor_flops_per_s, 7e14);

  set_uuid("GPU-99999999-2222-3333-4444-555555555555");  // another device of the same model
  auto other = get(true, false);  // calls 9 and 10: its own measurement, not the first's
  ASSERT_TRUE(other);
  EXPECT_EQ(calls(), std::make_pair(10, 3));
  EXPECT_DOUBLE_EQ(other->copy_bytes_per_s, 10e12);
  EXPECT_EQ(other->uuid, "GPU-99999999-2222-3333-4444-555555555555");
}

TEST_F(gpu_cache, with_a_known_identity_the_whole_target_is_cached_and_the_probe_skipped) {
  const std::string id = "GPU-11111111-2222-3333-4444-555555555555|NVRM version: 580";
  auto first = cli::cached_gpu_target(*db_, probe(), true, false, id);  // reads, then measures
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(calls(), std::make_pair(2, 1));
  auto again = cli::cached_gpu_target(*db_, probe(), true, false, id);  // no probe at all
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(calls(), std::make_pair(2, 1));
  EXPECT_EQ(again->arch, first->arch);
  EXPECT_EQ(again->uuid, first->uuid);
  EXPECT_EQ(again->sm_clock_mhz, first->sm_clock_mhz);
  EXPECT_DOUBLE_EQ(again->copy_bytes_per_s, first->copy_bytes_per_s);
  // Another driver is another identity: probed again (the ceilings come from the store).
  auto other = cli::cached_gpu_target(*db_, probe(), true, false, id + "x");
  ASSERT_TRUE(other);
  EXPECT_EQ(calls(), std::make_pair(3, 1));
  // --remeasure always probes.
  ASSERT_TRUE(cli::cached_gpu_target(*db_, probe(), true, true, id));
  EXPECT_EQ(calls(), std::make_pair(5, 2));
  // No identity (several GPUs, or none in /proc): the probe runs every time.
  ASSERT_TRUE(cli::cached_gpu_target(*db_, probe(), true, false, ""));
  EXPECT_EQ(calls(), std::make_pair(6, 2));
}

TEST_F(gpu_cache, a_probe_that_cannot_run_is_an_error) {
  auto r = cli::cached_gpu_target_probed(*db_, "/nonexistent/lathe-probe-cuda", true, false);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/nonexistent/lathe-probe-cuda"), std::string::npos) << r.error().message;
  EXPECT_EQ(calls(), std::make_pair(0, 0));
}
