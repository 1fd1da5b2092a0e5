// The CPU ceilings shared by the workspaces of one machine (cli/context.cpp): a fresh workspace
// takes the machine's instead of measuring again, the values only ratchet up, and a folder that is
// not this user's alone is not trusted.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "cli/context.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

class machine_ceilings : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-machine-ceilings-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    locks_ = dir_ / "locks";
    setenv("LATHE_LOCK_DIR", locks_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("LATHE_LOCK_DIR");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  target open(const std::string& ws) {
    auto c = open_context(dir_ / ws, true);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return c ? c->tgt : target{};
  }
  fs::path machine_file() const {
    for (const auto& e : fs::directory_iterator(locks_))
      if (e.path().filename().string().rfind("ceilings", 0) == 0) return e.path();
    return {};
  }
  nlohmann::json machine() const {
    std::ifstream in(machine_file());
    return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
  }
  void plant(double v) const {
    std::ofstream(machine_file(), std::ios::trunc) << nlohmann::json{
        {"dram_bytes_per_s", v}, {"llc_bytes_per_s", v}, {"l2_bytes_per_s", v}, {"flops_per_s", v}}.dump();
  }
  fs::path dir_, locks_;
};

TEST_F(machine_ceilings, a_fresh_workspace_takes_the_machines_and_they_only_go_up) {
  const target first = open("ws1");
  ASSERT_GT(first.copy_bytes_per_s, 1e6) << "the first workspace measured nothing";
  ASSERT_FALSE(machine_file().empty()) << "the measurement was not kept for the machine";
  EXPECT_DOUBLE_EQ(machine().value("dram_bytes_per_s", 0.0), first.copy_bytes_per_s);
  EXPECT_DOUBLE_EQ(machine().value("flops_per_s", 0.0), first.flops_per_s);

  // Values far below any real measurement: a fresh workspace that took them measured nothing.
  plant(1.0);
  const target second = open("ws2");
  EXPECT_DOUBLE_EQ(second.copy_bytes_per_s, 1.0);
  EXPECT_DOUBLE_EQ(second.flops_per_s, 1.0);

  // The first workspace keeps its own (higher) ceilings and raises the machine's back to them.
  const target again = open("ws1");
  EXPECT_DOUBLE_EQ(again.copy_bytes_per_s, first.copy_bytes_per_s);
  EXPECT_DOUBLE_EQ(machine().value("dram_bytes_per_s", 0.0), first.copy_bytes_per_s);
  // A machine that does not say its L2's size (a VM without /sys/devices/system/cpu/*/cache)
  // measures no L2 ceiling: nothing raises the planted value then.
  EXPECT_DOUBLE_EQ(machine().value("l2_bytes_per_s", 0.0), first.l2_bytes_per_s > 0 ? first.l2_bytes_per_s : 1.0);
}

TEST_F(machine_ceilings, a_folder_others_may_write_is_not_read) {
  (void)open("ws1");
  ASSERT_FALSE(machine_file().empty());
  plant(1.0);
  ASSERT_EQ(chmod(locks_.c_str(), 0777), 0);
  const target t = open("ws3");
  EXPECT_GT(t.copy_bytes_per_s, 1e6) << "the planted ceilings of a folder open to others were taken";
  EXPECT_DOUBLE_EQ(machine().value("dram_bytes_per_s", 0.0), 1.0) << "written into a folder open to others";
}

}  // namespace
}  // namespace lathe::cli
