// The device locks' files (gate/device_lock.h), opened as the CPU slots' core locks are: a link
// planted where a lock file belongs is refused and never followed. Nothing here times anything.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gate/device_lock.h"

namespace lathe::gate {
namespace {

namespace fs = std::filesystem;

class device_lock_file : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-device-lock-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("LATHE_LOCK_DIR");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(device_lock_file, a_link_planted_at_the_lock_path_is_refused_not_followed) {
  ASSERT_TRUE(device_lock::own_directory());  // the folder, as lathe makes it
  const fs::path lock = fs::path(device_lock::directory()) / "cpu.lock";
  const fs::path target = dir_ / "elsewhere";
  fs::create_symlink(target, lock);
  for (auto m : {device_lock::mode::shared, device_lock::mode::exclusive}) {
    auto l = device_lock::acquire("cpu", m);
    ASSERT_FALSE(l) << "a link planted as the lock file was used";
    EXPECT_NE(l.error().message.find("symbolic link"), std::string::npos) << l.error().message;
  }
  EXPECT_FALSE(fs::exists(target)) << "lathe created the link's target";
  EXPECT_TRUE(fs::is_symlink(lock)) << "the planted link is left for the user to remove";
}

TEST_F(device_lock_file, a_link_to_an_existing_file_is_refused_and_the_file_left_alone) {
  ASSERT_TRUE(device_lock::own_directory());
  const fs::path target = dir_ / "precious";
  std::ofstream(target) << "kept";
  fs::create_symlink(target, fs::path(device_lock::directory()) / "cuda0.lock");
  auto l = device_lock::acquire_all({{"cpu", device_lock::mode::shared}, {"cuda0", device_lock::mode::exclusive}});
  ASSERT_FALSE(l) << "a link planted as cuda0's lock file was used";
  std::ifstream in(target);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "kept");
}

TEST_F(device_lock_file, a_folder_in_place_of_the_lock_file_is_refused) {
  ASSERT_TRUE(device_lock::own_directory());
  fs::create_directory(fs::path(device_lock::directory()) / "cpu.lock");
  auto l = device_lock::acquire("cpu", device_lock::mode::shared);
  ASSERT_FALSE(l) << "a folder was used as the lock file";
}

TEST_F(device_lock_file, a_regular_file_is_created_and_locked) {
  auto l = device_lock::acquire("cpu", device_lock::mode::exclusive);
  ASSERT_TRUE(l) << l.error().message;
  struct stat st{};
  const std::string path = device_lock::directory() + "/cpu.lock";
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace lathe::gate
