// What every verb needs: the workspace, the store, the toolchain and the target (with measured
// ceilings, cached in the store per device), and where lathe's own files are.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/target.h"
#include "gate/build.h"
#include "store/store.h"
#include "store/workspace.h"

namespace lathe::cli {

struct paths {
  std::filesystem::path exe_dir;      // where lathe and lathe-worker live
  std::filesystem::path include_dir;  // lathe/abi.h
  std::filesystem::path tasks_dir;    // the shipped tasks
};
paths locate();

struct context {
  workspace ws;
  std::optional<store> db;
  gate::toolchain tools;
  target tgt;
  paths where;
};

// Opens the workspace and store, detects the toolchain and the CPU target; measures the
// target's ceilings once per device and caches them in the store (`refresh`: measure again and
// keep the higher of old and new).
result<context> open_context(const std::optional<std::filesystem::path>& workspace_dir,
                             bool measure_ceilings, bool refresh = false);

// A task argument: a directory, a task.toml, or the name of a shipped task.
result<std::filesystem::path> find_task_path(const std::string& arg, const paths& where);

}  // namespace lathe::cli
