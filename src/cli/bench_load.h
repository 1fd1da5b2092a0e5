// `lathe bench`'s suite load (issue 46): each task directory or problem file read into a task,
// several at once. A problem file's import starts its Python oracle (torch imported, the problem
// described: 2-3 s on the 2-core VM, 51 s for a 19-problem suite one after another, before the
// first evaluation; bench/results/in-flight-2026-12-07b.md), so `bench --in-flight N` loads N at
// a time; the results come back in the suite's order, whatever finished first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/task.h"

namespace lathe::cli {

using task_loader = std::function<result<task>(const std::filesystem::path&)>;
// True when a load's failure ends the suite (what follows it is never looked at).
using load_ends_suite = std::function<bool(const std::filesystem::path&, const result<task>&)>;

// `load` of each of `paths` on up to `width` threads (1: on this one, in order), handed out in
// the paths' order. Entry i is the load of paths[i]; once a load ends the suite (`ends`), no
// later path is started, and those left are nothing (every earlier one was started, so loaded).
std::vector<std::optional<result<task>>> load_suite(const std::vector<std::filesystem::path>& paths,
                                                    int32_t width, const task_loader& load,
                                                    const load_ends_suite& ends);

}  // namespace lathe::cli
