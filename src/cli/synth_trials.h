// lathe synth's input trials (issue 47 item 2, first increment): the candidate problem files
// python/lathe_synth.py planned (DIR/plan.json) tried in the one sandbox (gate/cpu/bubblewrap.h,
// through run_tool's tool_jail with candidate_code: never run where the sandbox cannot be set up)
// by python/lathe_synth_trial.py; its results written to DIR/trials.json for lathe_synth.py
// --apply (docs/synth.md).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace lathe::cli {

struct synth_trial_options {
  double per_trial_s = 10;  // each candidate (SIGALRM in the trial's child; the child killed after
                            // all of its module's candidates' time)
  double timeout_s = 600;   // the whole run in the sandbox
  double target_ms = 4;     // a kept module's batch scaled toward this forward time (0: off)
};

// Runs the trials of DIR/plan.json in a fresh folder in TMPDIR (the sandbox's one writable folder,
// removed afterwards) and returns
// lathe.synth_trials/1: {"modules": [{"id", "tried", "kept", "errors"}], "error": why none ran
// or null, "seconds", "jail", "python"}. Writes the same to DIR/trials.json.
nlohmann::json run_synth_trials(const std::filesystem::path& out, const synth_trial_options& o);

}  // namespace lathe::cli
