// `lathe bench`'s build pass: every candidate of the suite compiled ahead of the first
// evaluation, on every core (gate/prebuild.h), with one progress line and a summary for the
// JSON (`prebuild` in lathe.bench/1).
#pragma once

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "cli/context.h"
#include "core/kernel.h"
#include "core/task.h"

namespace lathe::cli {

// Builds `candidates` (task, bundle) with the gate's configuration for each task under `gs`;
// `quiet`: no progress on stderr. Returns {"candidates", "built", "cached", "failed", "skipped",
// "parallel", "seconds"}.
nlohmann::json prebuild_suite(const context& ctx, const gate_settings& gs,
                              const std::vector<std::pair<const task*, kernel_bundle>>& candidates, bool quiet);

}  // namespace lathe::cli
