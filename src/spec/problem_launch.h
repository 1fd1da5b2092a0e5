// The problem oracle's process (spec/problem.h), started in the one sandbox (gate/cpu/bubblewrap.h):
// a problem's Model runs code from whoever wrote the file, and `lathe synth` keeps modules mined
// from trees nobody reviewed. Internal to spec/problem.cpp.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/task.h"

namespace lathe::gate {

struct oracle_process {
  pid_t pid = -1;
  // Its own folder: HOME, TMPDIR, the working directory and the problem's copy; removed by
  // remove_oracle_folder when the oracle ends. Named for the lathe process that made it
  // (oracle_folder_prefix), so that one a killed lathe left is reclaimed later.
  std::filesystem::path folder;
  std::string sandbox;  // how it is confined, in words ("bubblewrap 0.8.0: …", or why it is not)
};

// Starts `python` on lathe_problem.py and a copy of `problem` (taken now: the file may change
// later without changing the oracle) with the channels as descriptors 3 (the shared memfd),
// 4 (requests), 5 (replies) and 6 (its stderr). In the one sandbox wherever bubblewrap works:
// no network, no other process (CPU), the system's trees, the interpreter's and lathe's scripts
// read-only, the copy at the problem's path, nothing writable but its folder, an environment of
// its own, and, when lathe is root, a user of its own. Elsewhere, a user of its own with its own
// /proc, network and IPC when lathe is root, else lathe's user, said in `sandbox`.
result<oracle_process> launch_oracle(const std::filesystem::path& python,
                                     const std::filesystem::path& problem, platform p,
                                     const int (&fds)[4]);

// The oracle's folder removed (its user's files with it, never through a link), once its process
// has ended.
void remove_oracle_folder(const std::filesystem::path& folder);

// When process `pid` started (/proc/<pid>/stat's starttime, clock ticks after boot): a pid is
// reused, a pid and its start time name one process. None: no such process.
std::optional<uint64_t> process_start(pid_t pid);

// The name an oracle folder of process `pid` (started at `start`) begins with:
// "lathe-problem-<pid>-<start>-"; mkdtemp's random part follows.
std::string oracle_folder_prefix(pid_t pid, uint64_t start);

// The oracle folders in `dir` whose lathe process is gone, removed without following a link: a
// lathe killed with SIGKILL never ran remove_oracle_folder. A folder is gone's when no process
// has its pid or the one that has started at another time; only folders (not links) of this
// user's, or, as root, of an oracle's own user, are touched; names of another shape are left.
// launch_oracle calls it on the temporary directory before it makes its folder. Returns how many
// were removed.
int32_t reclaim_oracle_folders(const std::filesystem::path& dir);

}  // namespace lathe::gate
