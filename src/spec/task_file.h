// Loading tasks (task.toml; docs/tasks.md) and resolving their shapes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/task.h"

namespace lathe {

// `path` is a task directory (holding task.toml) or the task.toml itself. Errors name the file,
// the line and the field.
// A PyTorch problem file (*.py; *.json KLineage definitions) is imported as a task
// (spec/problem.h) on `problem_platform` (default: cpu); a task.toml may wrap one with
// `problem = "file.py"` to give it a name, platform, role, baseline kernels and perturbations.
result<task> load_task(const std::filesystem::path& path,
                       std::optional<platform> problem_platform = std::nullopt);

// Sizes of one tensor under one shape set; unknown symbols and overflow are errors.
result<resolved_tensor> resolve(const tensor_spec& t, const shape_set& s);

// A cost expression (task.cost.flops / bytes) under one shape set; empty expression -> 0.
result<double> eval_cost(const std::string& expr, const shape_set& s);

// kernels/<name> (directory) or kernels/<name>.cpp / .cu under the task directory.
std::optional<std::filesystem::path> find_kernel(const task& t, const std::string& name);

// The shape set that is timed: the one marked time = true, else the largest by input bytes.
const shape_set& timing_shape(const task& t);
// The smallest shape set by input bytes: checked first.
const shape_set& smallest_shape(const task& t);

}  // namespace lathe
