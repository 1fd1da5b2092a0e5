// The problem oracle's own folders (spec/problem_launch.h) left by a lathe killed with SIGKILL:
// named for the process that made them, reclaimed by the next oracle start when that process is
// gone, never when it lives, and removed without following a link planted inside.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "spec/problem_launch.h"

namespace lathe::gate {
namespace {

namespace fs = std::filesystem;

class oracle_folders : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-oracle-folder-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A folder as an oracle of `pid` (started at `start`) leaves it: a file, a subfolder and a
  // link to `outside`.
  fs::path plant(pid_t pid, uint64_t start, const fs::path& outside) {
    const fs::path f = dir_ / (oracle_folder_prefix(pid, start) + "Ab12cD");
    fs::create_directories(f / "sub");
    std::ofstream(f / "sub" / "x.txt") << "left";
    fs::create_symlink(outside, f / "link");
    return f;
  }
  fs::path dir_;
};

// A pid that no process has now, and the start time it had: a child that exited (a zombie
// keeps its /proc entry until reaped) and was reaped.
std::pair<pid_t, uint64_t> dead_process() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  const auto start = process_start(pid);
  EXPECT_TRUE(start) << "no start time for a child not yet reaped";
  int st = 0;
  waitpid(pid, &st, 0);
  return {pid, start.value_or(0)};
}

TEST_F(oracle_folders, a_process_start_time_names_it_and_a_gone_one_has_none) {
  const auto self = process_start(getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(process_start(getpid()), self) << "the start time of one process changed";
  const auto [pid, start] = dead_process();
  EXPECT_FALSE(process_start(pid)) << "a reaped child still has a start time";
  EXPECT_GE(start, *self) << "a child started before its parent";
}

TEST_F(oracle_folders, a_dead_processs_folder_is_removed_a_live_ones_is_not) {
  const fs::path outside = dir_ / "outside";
  fs::create_directory(outside);
  std::ofstream(outside / "keep.txt") << "kept";
  const auto [dead_pid, dead_start] = dead_process();
  const fs::path dead = plant(dead_pid, dead_start, outside);
  const fs::path live = plant(getpid(), *process_start(getpid()), outside);
  // This pid with another start time: the pid was reused, the folder's process is gone.
  const fs::path reused = plant(getpid(), *process_start(getpid()) + 1, outside);
  // Names that say nothing of their owner (the old mkdtemp shape) are left alone.
  const fs::path unnamed = dir_ / "lathe-problem-Xy12Zq";
  fs::create_directory(unnamed);

  EXPECT_EQ(reclaim_oracle_folders(dir_), 2);
  EXPECT_FALSE(fs::exists(dead)) << "a folder of a process that is gone was left";
  EXPECT_FALSE(fs::exists(reused)) << "a folder of a pid's earlier process was left";
  EXPECT_TRUE(fs::exists(live / "sub" / "x.txt")) << "a living process's folder was removed";
  EXPECT_TRUE(fs::exists(unnamed));
  EXPECT_TRUE(fs::exists(outside / "keep.txt")) << "removal followed a link out of the folder";
}

TEST_F(oracle_folders, a_link_named_as_a_dead_processs_folder_is_not_followed) {
  const fs::path target = dir_ / "target";
  fs::create_directory(target);
  std::ofstream(target / "keep.txt") << "kept";
  const auto [pid, start] = dead_process();
  const fs::path link = dir_ / (oracle_folder_prefix(pid, start) + "Zz99zz");
  fs::create_directory_symlink(target, link);
  EXPECT_EQ(reclaim_oracle_folders(dir_), 0);
  EXPECT_TRUE(fs::exists(target / "keep.txt"));
  EXPECT_TRUE(fs::is_symlink(link)) << "lathe reclaims folders, not links";
}

TEST_F(oracle_folders, the_oracles_own_folder_is_removed_without_following_its_links) {
  const fs::path outside = dir_ / "outside";
  fs::create_directory(outside);
  std::ofstream(outside / "keep.txt") << "kept";
  const fs::path f = plant(getpid(), *process_start(getpid()), outside);
  remove_oracle_folder(f);
  EXPECT_FALSE(fs::exists(f));
  EXPECT_TRUE(fs::exists(outside / "keep.txt"));
}

}  // namespace
}  // namespace lathe::gate
