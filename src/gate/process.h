// Running tools (the compiler, nm, readelf) with a clean environment, a time limit and captured
// output. Never used for candidate code: that runs in gate/cpu/worker. The compiler reads the
// candidate's sources, though, which steer it (`#include MACRO`, `.incbin`), so it runs jailed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lathe::gate {

struct tool_result {
  int exit_code = -1;   // -1 when it could not start; 128+signal when killed
  bool timed_out = false;
  std::string output;   // stdout and stderr interleaved (the first MiB)
  double seconds = 0;
  std::string jail;     // how a jailed tool was confined ("" when not jailed)
};

// A tool that reads a candidate's files: it works in its directory (cwd), which it may read and
// write, and may read the system's programs, libraries and headers and nothing else; as root it
// runs as a user of its own; its memory, output files and CPU time are bounded. It runs in the
// one sandbox (bubblewrap.h: no network, nothing alive after it) wherever bubblewrap works, and
// says so in tool_result::jail; elsewhere in a Landlock jail of lathe's own, except a tool that
// runs candidate code (tool_jail::candidate_code), which is then not run. A
// compiler ran as root without limits: an include of a root-only file put its first line into
// lathe's output, and `#include </dev/zero>` grew it to the machine's memory.
struct tool_jail {
  std::vector<std::filesystem::path> read_trees = {"/usr", "/lib", "/lib64", "/bin", "/etc"};
  uint64_t address_space = uint64_t{16} << 30;  // each of its processes (nvcc's cicc is the largest)
  uint64_t file_size = uint64_t{1} << 30;       // any file it writes
  bool drop = true;                             // as root: a user of its own
  // The tool runs the candidate's own code (a ModelNew's record step, load_inline's build and
  // import): without the sandbox (bubblewrap.h) it is not run at all, rather than jailed less.
  bool candidate_code = false;
  // The step as a whole, through a cgroup where lathe may make one (step_cgroup.h).
  uint64_t step_memory = uint64_t{16} << 30;
  uint32_t step_processes = 512;
};

// An interpreter's trees added to what `jail` may read: as named (a virtual environment, which
// holds its packages) and as resolved (its base's binary), two folders up from each.
void allow_interpreter(tool_jail& jail, const std::filesystem::path& interpreter);

// argv[0] is looked up in PATH. The environment is only PATH and LANG=C (and TMPDIR=. when
// jailed): a compiler run on a candidate's sources must not see API keys (an `#include` of
// /proc/self/environ would embed them in the object).
tool_result run_tool(const std::vector<std::string>& argv, double timeout_s,
                     const std::filesystem::path& cwd = {}, const tool_jail* jail = nullptr);

// What a jailed tool wrote in `dir` (its user's, when lathe is root) becomes root's again.
void own_again(const std::filesystem::path& dir);

}  // namespace lathe::gate
