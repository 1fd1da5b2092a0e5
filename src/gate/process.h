// Running trusted tools (the compiler, nm, readelf) with a clean environment, a time limit and
// captured output. Never used for candidate code: that runs in gate/cpu/worker.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lathe::gate {

struct tool_result {
  int exit_code = -1;   // -1 when it could not start; 128+signal when killed
  bool timed_out = false;
  std::string output;   // stdout and stderr interleaved
  double seconds = 0;
};

// argv[0] is looked up in PATH. The environment is only PATH and LANG=C: a compiler run on a
// candidate's sources must not see API keys (an `#include` of /proc/self/environ would embed
// them in the object).
tool_result run_tool(const std::vector<std::string>& argv, double timeout_s,
                     const std::filesystem::path& cwd = {});

}  // namespace lathe::gate
