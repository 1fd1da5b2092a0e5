// Going on with a stored run from the command line: --resume RUN and batch mode's folders
// (llm/batch_dir.h), the same for every verb that resumes (decompose, optimize, evolve). The
// options a verb stores with its run and reads back: cli/stored_options.h (optimize, evolve);
// decompose reads its task and expert itself.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cli/context.h"
#include "core/error.h"
#include "core/run.h"

namespace lathe::cli {

// The run --resume names, refused when there is none or it is of another kind.
result<run> run_to_resume(context& ctx, const std::string& id, run_kind kind);

// A resumed run's stored arguments, refused when they are no JSON object or name another task
// than `task` (empty: any). `verb` says what the run does to its task ("optimizes").
result<nlohmann::json> stored_args(const run& r, const std::string& task, const std::string& verb);

// --platform on --resume: the run stored the platform it decided when it began (`stored`), and
// goes on there. A stored word that names no platform, or a different one given on the command
// line (`given`, empty when not), is the user's error: its message, or empty when none.
std::string platform_on_resume(const std::string& given, const std::string& stored, const std::string& run_id);

// Batch mode: --propose-only DIR begins a run whose prompts go to DIR, --gate-batch DIR goes on
// with the run DIR/run.txt names (which becomes `resume`; a --resume given too must agree).
// Returns the folder, or none outside batch mode. The error is the user's: exit code 2.
result<std::optional<std::filesystem::path>> batch_folder(const std::string& propose_only,
                                                          const std::string& gate_batch,
                                                          std::string& resume);

// --propose-only: the new folder names its run, for the --gate-batch that goes on with it.
void write_batch_run(const std::filesystem::path& folder, const std::string& run_id);

// A batch run stopped for answers: the prompts that wait in `folder`, and the command that goes
// on, as text or as `lathe.<verb>/1` JSON ({"stop": "waiting", "batch", "waiting"}).
void print_waiting(const std::string& verb, const std::string& run_id, const std::filesystem::path& folder,
                   const std::vector<std::filesystem::path>& waiting, bool as_json);

}  // namespace lathe::cli
