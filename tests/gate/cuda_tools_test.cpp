// Finding the CUDA tools: in PATH first, then /usr/local/cuda/bin, with the line of
// `--version` that names the version.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gate/cuda_tools.h"

namespace fs = std::filesystem;
using namespace lathe::gate;

TEST(cuda_tools, a_tool_in_path_is_found_with_its_version_line) {
  char tmpl[] = "/tmp/lathe-tools-test-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const fs::path tool = dir / "fake-profiler";
  std::ofstream(tool) << "#!/bin/sh\n[ \"$1\" = --version ] || exit 9\n"
                         "echo 'NVIDIA (R) Fake Profiler'\necho 'Copyright (c) 2025'\n"
                         "echo 'Version 2025.1.0.0 (build 1)'\necho\n";
  chmod(tool.c_str(), 0755);
  const std::string old_path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  const cuda_tool t = find_cuda_tool("fake-profiler");
  setenv("PATH", old_path.c_str(), 1);
  fs::remove_all(dir);
  EXPECT_EQ(t.name, "fake-profiler");
  EXPECT_EQ(t.path, tool);
  EXPECT_EQ(t.version, "Version 2025.1.0.0 (build 1)");
}

TEST(cuda_tools, a_missing_tool_has_no_path_and_no_version) {
  const cuda_tool t = find_cuda_tool("lathe-no-such-tool");
  EXPECT_TRUE(t.path.empty());
  EXPECT_TRUE(t.version.empty());
}

TEST(cuda_tools, the_toolkit_directory_is_searched_outside_path) {
  if (!fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no CUDA toolkit in /usr/local/cuda";
  const std::string old_path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", "/usr/bin:/bin", 1);
  const cuda_tool t = find_cuda_tool("nvcc");
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(t.path, "/usr/local/cuda/bin/nvcc");
  EXPECT_NE(t.version.find("release"), std::string::npos) << t.version;
}
