// The problem oracle's process (spec/problem.h), started in the one sandbox (gate/cpu/bubblewrap.h):
// a problem's Model runs code from whoever wrote the file, and `lathe synth` keeps modules mined
// from trees nobody reviewed. Internal to spec/problem.cpp.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/task.h"

namespace lathe::gate {

struct oracle_process {
  pid_t pid = -1;
  // Its own folder: HOME, TMPDIR, the working directory and the problem's copy; removed by
  // remove_oracle_folder when the oracle ends.
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

// The oracle's folder removed (its user's files with it), once its process has ended.
void remove_oracle_folder(const std::filesystem::path& folder);

}  // namespace lathe::gate
