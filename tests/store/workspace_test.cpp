#include "store/workspace.h"

#include <gtest/gtest.h>

#include <fstream>

#include "store/store.h"
#include "store/temp_dir.h"

namespace lathe {
namespace {

namespace fs = std::filesystem;
using testing::temp_dir;

void expect_private_dirs(const workspace& w) {
  for (const fs::path& d : {w.root, w.cache(), w.runs()}) {
    SCOPED_TRACE(d.string());
    ASSERT_TRUE(fs::is_directory(d));
    EXPECT_EQ(fs::status(d).permissions() & fs::perms::all, fs::perms::owner_all);
  }
}

// The upward search would find a .lathe above the temp directory (a developer's own workspace
// in /tmp, say) before creating one; such a machine cannot run the "absent" cases.
bool ancestor_has_workspace(const fs::path& p) {
  for (fs::path q = p.parent_path(); q != q.parent_path(); q = q.parent_path())
    if (fs::is_directory(q / ".lathe")) return true;
  return fs::is_directory("/.lathe");
}

TEST(workspace, found_from_a_nested_subdirectory) {
  temp_dir dir;
  fs::create_directory(dir / ".lathe");
  fs::create_directories(dir / "a" / "b" / "c");
  auto w = open_workspace(std::nullopt, dir / "a" / "b" / "c");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->root, dir / ".lathe");
  EXPECT_TRUE(fs::is_directory(w->cache()));
  EXPECT_TRUE(fs::is_directory(w->runs()));
  EXPECT_FALSE(fs::exists(dir / "a" / "b" / "c" / ".lathe"));
}

TEST(workspace, nearest_workspace_wins) {
  temp_dir dir;
  fs::create_directories(dir / ".lathe");
  fs::create_directories(dir / "project" / ".lathe");
  fs::create_directories(dir / "project" / "src");
  auto w = open_workspace(std::nullopt, dir / "project" / "src");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->root, dir / "project" / ".lathe");
}

TEST(workspace, created_when_absent) {
  temp_dir dir;
  if (ancestor_has_workspace(dir.path())) GTEST_SKIP() << "a .lathe exists above " << dir.path();
  auto w = open_workspace(std::nullopt, dir.path());
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->root, dir / ".lathe");
  EXPECT_EQ(w->db(), dir / ".lathe" / "lathe.db");
  expect_private_dirs(*w);
  // The store opens inside it, and a second open finds the same workspace.
  EXPECT_TRUE(store::open(w->db()).has_value());
  EXPECT_EQ(open_workspace(std::nullopt, dir.path()).value().root, w->root);
}

TEST(workspace, explicit_directory_overrides_the_search) {
  temp_dir dir;
  fs::create_directories(dir / "here" / ".lathe");
  auto w = open_workspace(dir / "elsewhere" / "deep", dir / "here");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->root, dir / "elsewhere" / "deep" / ".lathe");
  expect_private_dirs(*w);

  // Naming the .lathe directory itself means that directory, not .lathe/.lathe.
  auto same = open_workspace(dir / "elsewhere" / "deep" / ".lathe", dir / "here");
  ASSERT_TRUE(same.has_value()) << same.error().message;
  EXPECT_EQ(same->root, w->root);
}

TEST(workspace, explicit_regular_file_is_an_error) {
  temp_dir dir;
  std::ofstream(dir / "notes.txt") << "not a directory";
  auto w = open_workspace(dir / "notes.txt", dir.path());
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, errc::invalid_argument);
  EXPECT_NE(w.error().message.find("notes.txt"), std::string::npos) << w.error().message;

  std::ofstream(dir / ".lathe") << "a file where the workspace should be";
  auto named = open_workspace(dir / ".lathe", dir.path());
  ASSERT_FALSE(named.has_value());
  EXPECT_NE(named.error().message.find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace lathe
