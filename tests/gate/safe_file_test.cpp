// The trusted-file module (spec/safe_file.h): in a folder a candidate could have written, no
// link is followed (at the leaf, in the middle, absolute or relative, /proc's magic ones), ".."
// and absolute paths are refused, only regular files are read, reads are capped, writes never
// go through a planted name, and tree copies and removals leave what links point at alone. The
// link tests run both ways a path is resolved (openat2, and O_NOFOLLOW per component for kernels
// without it).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "spec/safe_file.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::gate;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class safe_file : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-safe-file-test-XXXXXX";
    base_ = mkdtemp(tmpl);
    root_ = base_ / "build";       // the candidate's folder
    outside_ = base_ / "outside";  // what its links point at
    fs::create_directories(root_);
    fs::create_directories(outside_);
    secret_ = outside_ / "root-only";
    put(secret_, "the secret line\n");
    fs::permissions(secret_, fs::perms::owner_read | fs::perms::owner_write);
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path base_, root_, outside_, secret_;
};

TEST_F(safe_file, reads_a_regular_file_beneath_its_folder) {
  put(root_ / "sub/dir/build.log", "compiled\n");
  auto r = read_beneath(root_, "sub/dir/build.log", log_cap);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "compiled\n");
  auto dotted = read_beneath(root_, "./sub/./dir/build.log", log_cap);
  ASSERT_TRUE(dotted) << dotted.error().message;
}

class safe_file_resolve : public safe_file, public ::testing::WithParamInterface<resolve> {
 protected:
  bool opens(const fs::path& rel, int flags = O_RDONLY) {
    auto dir = open_root(root_);
    EXPECT_TRUE(dir) << dir.error().message;
    auto fd = open_beneath(dir->get(), rel, flags, 0644, GetParam());
    return static_cast<bool>(fd);
  }
};

TEST_P(safe_file_resolve, refuses_a_link_at_the_leaf) {
  fs::create_symlink(secret_, root_ / "status");  // absolute
  EXPECT_FALSE(opens("status"));
  fs::create_symlink("../outside/root-only", root_ / "rel");  // relative, climbing out
  EXPECT_FALSE(opens("rel"));
  put(root_ / "inner", "inside");
  fs::create_symlink("inner", root_ / "same-folder");  // stays inside: still a link, refused
  EXPECT_FALSE(opens("same-folder"));
  EXPECT_TRUE(opens("inner"));
}

TEST_P(safe_file_resolve, refuses_a_link_in_the_middle) {
  put(outside_ / "d/build.log", "outside's log");
  fs::create_symlink(outside_ / "d", root_ / "out");
  EXPECT_FALSE(opens("out/build.log"));
  fs::create_directories(root_ / "a");
  fs::create_symlink("../../outside", root_ / "a/up");
  EXPECT_FALSE(opens("a/up/root-only"));
}

TEST_P(safe_file_resolve, refuses_magic_links) {
  fs::create_symlink("/proc/self/environ", root_ / "build.log");
  EXPECT_FALSE(opens("build.log"));
  fs::create_symlink("/proc/self/fd", root_ / "fds");
  EXPECT_FALSE(opens("fds/0"));
}

TEST_P(safe_file_resolve, refuses_dot_dot_and_absolute_paths) {
  put(root_ / "a/b", "b");
  EXPECT_TRUE(opens("a/b"));
  EXPECT_FALSE(opens("../outside/root-only"));
  EXPECT_FALSE(opens("a/../a/b"));  // would come back, refused all the same
  EXPECT_FALSE(opens(secret_));
}

TEST_P(safe_file_resolve, creates_no_file_through_a_link) {
  fs::create_symlink(outside_ / "planted", root_ / "extensions.json");
  EXPECT_FALSE(opens("extensions.json", O_WRONLY | O_CREAT));
  EXPECT_FALSE(fs::exists(outside_ / "planted"));
}

INSTANTIATE_TEST_SUITE_P(both, safe_file_resolve, ::testing::Values(resolve::openat2, resolve::walk),
                         [](const auto& info) { return info.param == resolve::walk ? "walk" : "openat2"; });

TEST_F(safe_file, says_why_a_link_is_refused_and_reads_nothing_through_it) {
  fs::create_symlink(secret_, root_ / "build.log");
  auto r = read_beneath(root_, "build.log", log_cap);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("secret line"), std::string::npos);
}

TEST_F(safe_file, environ_behind_a_link_stays_unread) {
  setenv("LATHE_SAFE_FILE_TEST_SECRET", "sk-never-read", 1);
  fs::create_symlink("/proc/self/environ", root_ / "build.log");
  auto r = read_beneath(root_, "build.log", log_cap);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find("sk-never-read"), std::string::npos);
  unsetenv("LATHE_SAFE_FILE_TEST_SECRET");
}

TEST_F(safe_file, reads_no_fifo_and_does_not_wait_on_one) {
  ASSERT_EQ(mkfifo((root_ / "status").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = read_beneath(root_, "status", status_cap);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a regular file"), std::string::npos) << r.error().message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  fs::create_directories(root_ / "a-folder");
  EXPECT_FALSE(read_beneath(root_, "a-folder", status_cap));
}

TEST_F(safe_file, refuses_a_file_over_its_cap) {
  put(root_ / "status", std::string(100, 'x'));
  auto r = read_beneath(root_, "status", 10);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("100 bytes"), std::string::npos) << r.error().message;
  auto fits = read_beneath(root_, "status", 100);
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->size(), 100u);
}

TEST_F(safe_file, create_refuses_any_existing_name) {
  fs::create_symlink(secret_, root_ / "build.log");
  auto w = write_beneath(root_, "build.log", "candidate's line\n", write_mode::create);
  ASSERT_FALSE(w);
  EXPECT_EQ(slurp(secret_), "the secret line\n");
  fs::create_symlink(outside_ / "dangling", root_ / "status");  // a link to nothing yet
  EXPECT_FALSE(write_beneath(root_, "status", "ok\n", write_mode::create));
  EXPECT_FALSE(fs::exists(outside_ / "dangling"));
  ASSERT_TRUE(write_beneath(root_, "fresh", "new\n", write_mode::create));
  EXPECT_EQ(slurp(root_ / "fresh"), "new\n");
}

TEST_F(safe_file, replace_swaps_the_planted_name_instead_of_writing_through_it) {
  fs::create_symlink(secret_, root_ / "build.log");
  auto w = write_beneath(root_, "build.log", "lathe's log\n", write_mode::replace);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(slurp(secret_), "the secret line\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(root_ / "build.log")));
  EXPECT_EQ(slurp(root_ / "build.log"), "lathe's log\n");
  // A hard link is replaced, not written through either.
  put(outside_ / "shared", "shared\n");
  fs::create_hard_link(outside_ / "shared", root_ / "status");
  ASSERT_TRUE(write_beneath(root_, "status", "ok\n", write_mode::replace));
  EXPECT_EQ(slurp(outside_ / "shared"), "shared\n");
  // Nothing is left under a temporary name.
  for (const auto& e : fs::directory_iterator(root_)) EXPECT_EQ(e.path().filename().string().find(".lathe-new"), std::string::npos);
  fs::create_directories(root_ / "a-folder");
  EXPECT_FALSE(write_beneath(root_, "a-folder", "x", write_mode::replace));
}

TEST_F(safe_file, writes_nothing_through_a_linked_folder) {
  fs::create_symlink(outside_, root_ / "out");
  EXPECT_FALSE(write_beneath(root_, "out/lathe-ext.json", "{}", write_mode::replace));
  EXPECT_FALSE(fs::exists(outside_ / "lathe-ext.json"));
  EXPECT_FALSE(create_dirs_beneath(root_, "out/deeper"));
  EXPECT_FALSE(fs::exists(outside_ / "deeper"));
  ASSERT_TRUE(create_dirs_beneath(root_, "x/y/z"));
  EXPECT_TRUE(fs::is_directory(root_ / "x/y/z"));
}

TEST_F(safe_file, lists_links_as_links) {
  put(root_ / "out/m.so", "ELF");
  fs::create_symlink(secret_, root_ / "out/lathe-ext.json");
  fs::create_directories(root_ / "out/sub");
  auto l = list_beneath(root_, "out");
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[0].name, "lathe-ext.json");
  EXPECT_EQ((*l)[0].kind, entry_kind::link);
  EXPECT_EQ((*l)[1].kind, entry_kind::regular);
  EXPECT_EQ((*l)[1].bytes, 3u);
  EXPECT_EQ((*l)[2].kind, entry_kind::directory);
}

TEST_F(safe_file, copies_a_tree_of_regular_files) {
  put(root_ / "out/m.so", "ELF module");
  put(root_ / "out/sub/lathe-ext.json", "{}");
  auto c = copy_tree_beneath(root_, "out", base_, "copy", 1 << 20);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c, 12u);
  EXPECT_EQ(slurp(base_ / "copy/m.so"), "ELF module");
  EXPECT_EQ(slurp(base_ / "copy/sub/lathe-ext.json"), "{}");
}

TEST_F(safe_file, a_tree_copy_refuses_links_and_other_files_instead_of_following_them) {
  put(root_ / "out/m.so", "ELF");
  fs::create_symlink(secret_, root_ / "out/lathe-ext.json");
  auto c = copy_tree_beneath(root_, "out", base_, "copy", 1 << 20);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("lathe-ext.json"), std::string::npos) << c.error().message;
  EXPECT_FALSE(fs::exists(base_ / "copy/lathe-ext.json"));
  // A link the filter leaves out is neither followed nor a failure.
  auto kept = copy_tree_beneath(root_, "out", base_, "kept", 1 << 20,
                                [](const fs::path& p, entry_kind) { return p.extension() == ".so"; });
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_TRUE(fs::exists(base_ / "kept/m.so"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(base_ / "kept/lathe-ext.json")));
  // A linked folder in the tree, a fifo, and a tree over its cap.
  fs::remove(root_ / "out/lathe-ext.json");
  fs::create_symlink(outside_, root_ / "out/sub");
  EXPECT_FALSE(copy_tree_beneath(root_, "out", base_, "c2", 1 << 20));
  EXPECT_FALSE(fs::exists(base_ / "c2/sub/root-only"));
  fs::remove(root_ / "out/sub");
  ASSERT_EQ(mkfifo((root_ / "out/pipe.so").c_str(), 0600), 0);
  EXPECT_FALSE(copy_tree_beneath(root_, "out", base_, "c3", 1 << 20));
  fs::remove(root_ / "out/pipe.so");
  EXPECT_FALSE(copy_tree_beneath(root_, "out", base_, "c4", 2));
  // The source folder itself a link.
  fs::create_symlink(outside_, root_ / "out2");
  EXPECT_FALSE(copy_tree_beneath(root_, "out2", base_, "c5", 1 << 20));
}

TEST_F(safe_file, copy_of_one_file_refuses_a_link_and_an_existing_target) {
  fs::create_symlink(secret_, root_ / "m.so");
  EXPECT_FALSE(copy_beneath(root_, "m.so", base_, "m.so", 1 << 20));
  EXPECT_FALSE(fs::exists(base_ / "m.so"));
  put(root_ / "n.so", "n");
  fs::create_symlink(secret_, base_ / "n.so");
  EXPECT_FALSE(copy_beneath(root_, "n.so", base_, "n.so", 1 << 20));
  EXPECT_EQ(slurp(secret_), "the secret line\n");
}

TEST_F(safe_file, removal_leaves_what_links_point_at) {
  put(root_ / "a/b/c", "c");
  fs::create_symlink(outside_, root_ / "a/linked-folder");
  fs::create_symlink(secret_, root_ / "a/b/linked-file");
  ASSERT_EQ(mkfifo((root_ / "a/fifo").c_str(), 0600), 0);
  auto r = remove_tree(root_);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(fs::exists(fs::symlink_status(root_)));
  EXPECT_EQ(slurp(secret_), "the secret line\n");
  EXPECT_TRUE(fs::exists(outside_ / "root-only"));
  EXPECT_TRUE(remove_tree(root_));  // already gone: nothing to do
  EXPECT_TRUE(remove_beneath(base_, "no/such/thing"));
}

}  // namespace
