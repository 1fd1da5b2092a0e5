#include "gate/cuda_tools.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "gate/process.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

// `--version` output differs by tool: ncu and compute-sanitizer print "Version 2025.1.0.0 …",
// nsys "NVIDIA Nsight Systems version 2024.6…", cuobjdump and nvcc end with "Cuda compilation
// tools, release 13.0, V13.0.88". The last line that says "version" or "release" names it.
std::string version_line(const std::string& output) {
  std::istringstream in(output);
  std::string best, first;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (first.empty()) first = line;
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("version") != std::string::npos || lower.find("release") != std::string::npos)
      best = line;
  }
  return best.empty() ? first : best;
}

}  // namespace

cuda_tool find_cuda_tool(const std::string& name) {
  cuda_tool t;
  t.name = name;
  std::vector<fs::path> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.emplace_back(d);
  }
  dirs.emplace_back("/usr/local/cuda/bin");
  for (const auto& d : dirs)
    if (executable(d / name)) {
      t.path = d / name;
      break;
    }
  if (t.path.empty()) return t;
  // A tool that hangs on --version (a broken install) must not hang the doctor.
  const tool_result r = run_tool({t.path.string(), "--version"}, 60);
  t.version = r.exit_code == 0 ? version_line(r.output) : "(`--version` failed: exit " + std::to_string(r.exit_code) + ")";
  return t;
}

}  // namespace lathe::gate
