// LATHE_EXTENSION_CACHE (gate/extension_cache.h): a workspace's built extension copied in from
// the folder every workspace shares and out to it, only `ok` builds, never through a link, only
// what the worker loads. Entries are made by hand here (no compile); modelnew_test checks a real
// build served from the shared folder.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gate/extension_cache.h"

namespace fs = std::filesystem;
using namespace lathe::gate;

namespace {

class extension_cache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-ext-cache-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    fs::create_directories(dir_ / "shared");
    fs::create_directories(dir_ / "ws/torch-ext");
  }
  void TearDown() override {
    unsetenv("LATHE_EXTENSION_CACHE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // An entry as compile_one leaves it, with what a build leaves beside the module.
  void entry(const fs::path& root, const std::string& key, const std::string& status) {
    write(root / key / "status", status);
    write(root / key / "build.log", "$ load_inline(name=ext)\n");
    write(root / key / "out/ext.so", "ELF");
    write(root / key / "out/lathe-ext.json", "{}");
    write(root / key / "out/ext.o", "object");
    write(root / key / "out/build.ninja", "rule");
  }
  bool no_temporaries(const fs::path& root) {
    for (const auto& e : fs::directory_iterator(root))
      if (e.path().filename().string().rfind("tmp-", 0) == 0) return false;
    return true;
  }
  fs::path dir_;
};

TEST_F(extension_cache, an_ok_build_is_copied_in_with_only_what_the_worker_loads) {
  entry(dir_ / "shared", "k1", "ok\n");
  std::string note;
  ASSERT_TRUE(import_extension(dir_ / "shared", dir_ / "ws/torch-ext", "k1", note)) << note;
  const fs::path got = dir_ / "ws/torch-ext/k1";
  EXPECT_TRUE(fs::is_regular_file(got / "status"));
  EXPECT_TRUE(fs::is_regular_file(got / "build.log"));
  EXPECT_TRUE(fs::is_regular_file(got / "out/ext.so"));
  EXPECT_TRUE(fs::is_regular_file(got / "out/lathe-ext.json"));
  EXPECT_FALSE(fs::exists(got / "out/ext.o"));
  EXPECT_FALSE(fs::exists(got / "out/build.ninja"));
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_TRUE(no_temporaries(dir_ / "ws/torch-ext"));
}

TEST_F(extension_cache, a_failed_or_missing_build_is_not_copied) {
  entry(dir_ / "shared", "bad", "failed\n");
  std::string note;
  EXPECT_FALSE(import_extension(dir_ / "shared", dir_ / "ws/torch-ext", "bad", note));
  EXPECT_FALSE(import_extension(dir_ / "shared", dir_ / "ws/torch-ext", "absent", note));
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_TRUE(fs::is_empty(dir_ / "ws/torch-ext"));
}

TEST_F(extension_cache, links_in_a_shared_entry_are_never_followed) {
  write(dir_ / "secret", "root-only");
  // A module that is a link to another file, and an entry that is a link to a folder.
  entry(dir_ / "shared", "k2", "ok\n");
  fs::remove(dir_ / "shared/k2/out/ext.so");
  fs::create_symlink(dir_ / "secret", dir_ / "shared/k2/out/ext.so");
  entry(dir_ / "elsewhere", "k3", "ok\n");
  fs::create_directory_symlink(dir_ / "elsewhere/k3", dir_ / "shared/k3");
  std::string note;
  EXPECT_FALSE(import_extension(dir_ / "shared", dir_ / "ws/torch-ext", "k2", note));
  EXPECT_NE(note.find("is unusable"), std::string::npos) << note;
  EXPECT_FALSE(import_extension(dir_ / "shared", dir_ / "ws/torch-ext", "k3", note));
  EXPECT_TRUE(fs::is_empty(dir_ / "ws/torch-ext"));
  // Out the other way: a workspace entry with a link is not shared either.
  entry(dir_ / "ws/torch-ext", "k4", "ok\n");
  fs::remove(dir_ / "ws/torch-ext/k4/out/lathe-ext.json");
  fs::create_symlink(dir_ / "secret", dir_ / "ws/torch-ext/k4/out/lathe-ext.json");
  export_extension(dir_ / "ws/torch-ext", dir_ / "shared", "k4");
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir_ / "shared/k4")));
  EXPECT_TRUE(no_temporaries(dir_ / "shared"));
}

TEST_F(extension_cache, an_ok_build_is_shared_once_and_a_failed_one_never) {
  entry(dir_ / "ws/torch-ext", "k5", "ok\n");
  entry(dir_ / "ws/torch-ext", "k6", "refused the extension's build left a link\n");
  export_extension(dir_ / "ws/torch-ext", dir_ / "shared", "k5");
  export_extension(dir_ / "ws/torch-ext", dir_ / "shared", "k6");
  EXPECT_TRUE(fs::is_regular_file(dir_ / "shared/k5/out/ext.so"));
  EXPECT_FALSE(fs::exists(dir_ / "shared/k5/out/ext.o"));
  EXPECT_FALSE(fs::exists(dir_ / "shared/k6"));
  // Already there: left as it is.
  write(dir_ / "shared/k5/build.log", "first\n");
  export_extension(dir_ / "ws/torch-ext", dir_ / "shared", "k5");
  std::ifstream in(dir_ / "shared/k5/build.log");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "first\n");
}

TEST_F(extension_cache, the_variable_names_a_private_folder_of_this_user_or_nothing) {
  EXPECT_FALSE(shared_extension_cache());
  setenv("LATHE_EXTENSION_CACHE", (dir_ / "made/here").c_str(), 1);
  auto p = shared_extension_cache();
  ASSERT_TRUE(p);
  struct stat st {};
  ASSERT_EQ(stat(p->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  fs::create_directory_symlink(dir_ / "shared", dir_ / "link");
  setenv("LATHE_EXTENSION_CACHE", (dir_ / "link").c_str(), 1);
  std::string why;
  EXPECT_FALSE(shared_extension_cache(&why));
  EXPECT_NE(why.find("not used"), std::string::npos) << why;
}

}  // namespace
