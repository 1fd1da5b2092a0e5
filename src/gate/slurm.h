// Slurm's own commands, as the slurm executor uses them (issue 46 item 2; docs/scale.md "Slurm"):
// a batch job submitted with `sbatch`, its state read with `squeue`, cancelled with `scancel`.
// Nothing of a scheduler of lathe's own: Slurm queues, places and runs; lathe reads its states.
// No accounting database is assumed (sacct needs one, which a test cluster lacks): a finished
// job is read from squeue while Slurm keeps it (MinJobAge, 300 s by default), and a job that
// squeue no longer knows and that left no result is lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace lathe::gate::slurm {

// A job's state as squeue prints it (%T), Slurm's own closed set, and `unknown`: squeue no longer
// knows the job (ended longer ago than MinJobAge, or lost with the controller's state).
enum class job_state : uint8_t {
  pending, configuring, running, completing, suspended, stopped, requeued, requeue_hold,
  requeue_fed, resizing, signaling, stage_out, resv_del_hold, special_exit,  // not ended
  completed, failed, cancelled, timeout, preempted, node_fail, boot_fail, deadline,
  out_of_memory, revoked,  // ended
  unknown,
};
const char* to_string(job_state s);
// "RUNNING" -> running; a word Slurm may add later: nullopt.
std::optional<job_state> parse_job_state(std::string_view word);

// What the submitter makes of a state: wait for it, read its result (it ran to its end: the
// result file says how the evaluation went), or submit it again (Slurm ended it before its end:
// cancelled, timed out, preempted, its node failed; never the kernel's failure).
enum class job_fate : uint8_t { waiting, ran, lost };
job_fate fate_of(job_state s);
const char* to_string(job_fate f);

struct job_request {
  std::string name;                       // --job-name
  std::filesystem::path script;           // the batch script (a shell script)
  std::filesystem::path dir;              // --chdir, and where Slurm writes its output
  bool gpu = false;                       // --gres=gpu:1
  std::string partition;                  // --partition (empty: the cluster's default)
  std::string time_limit;                 // --time (empty: the partition's default)
  std::vector<std::string> sbatch_args;   // more, as given (--account=…, --qos=…)
  // The job's environment, passed as sbatch's --export list: exactly these, never the
  // submitter's (which holds API keys). job_environment() builds it.
  std::vector<std::string> environment;
};

// sbatch's argument list for `r` (without the program name); pure, for tests.
std::vector<std::string> sbatch_argv(const job_request& r);
// Submits `r`; the job's id.
result<int64_t> submit(const job_request& r);
// The states of `jobs` (one squeue call); a job squeue does not list is `unknown`. An error
// when squeue itself fails (the controller unreachable): not a reason to resubmit anything.
result<std::map<int64_t, job_state>> states(const std::vector<int64_t>& jobs);
// Asks Slurm to end a job (scancel).
result<void> cancel(int64_t job);

// The environment a job's evaluation gets: PATH, LANG, HOME and TMPDIR as the submitter has them
// (HOME where the job's user finds its files; PATH where `lathe` finds the compiler), and
// lathe's own non-secret settings (LATHE_EXTENSION_CACHE, LATHE_LOCK_DIR), "NAME=VALUE" each;
// nothing else (no *_API_KEY, no token). A value with a comma is left out (sbatch's list is
// comma-separated); the job script passes the same list to `env -i`.
std::vector<std::string> job_environment(const std::map<std::string, std::string>& submitter);
// The submitter's own environment as a map (for job_environment).
std::map<std::string, std::string> current_environment();

// Whether sbatch and squeue are on PATH and squeue reaches a controller: "" when they are, else
// what is missing and what to do.
std::string unavailable();

}  // namespace lathe::gate::slurm
