// The slurm executor (issue 46 item 2; docs/scale.md "Slurm"): each evaluation a verb asks of the
// gate goes out as a Slurm batch job running `lathe eval … --json` against the same workspace
// (its store takes concurrent writers; its build cache is shared), and comes back as the
// evaluation that job stored. A verifier like gate_verifier, so a verb's loop is unchanged:
// `bench --executor slurm --in-flight N` keeps N jobs in the queue.
//
// Every request has a folder in the submission's ledger (.lathe/runs/slurm/<submission>/),
// named by what it evaluates: the batch script, the ids of the jobs it took, and the result the
// job renamed into place when `lathe eval` ended. So a submitter killed and run again with the
// same arguments takes a finished result from its folder, waits for a job still queued or
// running, and submits only what has neither: nothing finished is lost or redone. A job Slurm
// ended before its end (cancelled, timed out, preempted, its node failed, or forgotten without a
// result) is submitted again, at most `resubmits` times, and never counted as the kernel's
// failure: past that, the evaluation is `infra_error`.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <vector>

#include "gate/settings.h"
#include "store/workspace.h"
#include "verify/verifier.h"

namespace CLI {
class App;
}

namespace lathe::cli {

struct context;

struct slurm_settings {
  std::string partition;                 // --partition (empty: the cluster's default)
  std::string time_limit;                // --time, Slurm's format (empty: the partition's)
  std::vector<std::string> sbatch_args;  // more sbatch options, as given
  int32_t resubmits = 3;                 // a request's lost jobs submitted again at most this often
  double poll_seconds = 2;               // between squeue reads while a job is queued or running
};

struct slurm_submission {
  std::filesystem::path ledger;     // this submission's folder (submission_ledger)
  std::filesystem::path lathe;      // the lathe binary the jobs run (this one)
  std::filesystem::path workspace;  // the .lathe folder the jobs store into
  std::vector<std::string> eval_flags;  // the gate's settings as `lathe eval` options (--quick…)
  slurm_settings settings;
};

// The ledger of a submission: `runs/slurm/<hash of key>` under the workspace. `key` says what
// was asked (the verb's arguments that decide its evaluations): the same arguments, the same
// ledger, which is what makes running a killed submitter again a resume.
std::filesystem::path submission_ledger(const std::filesystem::path& workspace, const std::string& key);
// After a submission has ended: its ledger moved aside (`<hash>.done-<run>`), so that the same
// arguments run later evaluate afresh instead of reading these results back.
void close_ledger(const std::filesystem::path& ledger, const std::string& run);

class slurm_verifier final : public lineages::verifier {
 public:
  explicit slurm_verifier(slurm_submission s) : s_(std::move(s)) {}
  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                   const provenance& prov) override;
  evaluation compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                     const provenance& prov) override;
  // Not over Slurm: bench asks for neither (a verb that does must use the local executor).
  agent::rules::detections features(const task& t, const kernel_bundle& k) override;
  result<std::filesystem::path> object(const task& t, const kernel_bundle& k) override;
  int32_t jobs_submitted() const;  // by this process, resubmissions included
  const std::filesystem::path& ledger() const { return s_.ledger; }

 private:
  evaluation run(const task& t, const kernel_bundle& c, const kernel_bundle& b, bool time);
  slurm_submission s_;
  mutable std::mutex m_;
  std::map<std::string, int32_t> asked_;  // request key -> times asked by this process
  int32_t submitted_ = 0;
};

// Where a verb's evaluations run (DESIGN.md "slot", "executor").
enum class executor_kind : uint8_t { local, slurm };

const char* to_string(executor_kind k);

struct executor_choice {
  executor_kind kind = executor_kind::local;
  slurm_settings slurm;
  std::string source;  // where it was read: "command line", lathe.toml's path, "default"
};

// What the command line said; unset: lathe.toml's [executor], else the default.
struct executor_cli {
  std::optional<std::string> kind, partition, time_limit;
  std::optional<std::vector<std::string>> sbatch_args;
  std::optional<int32_t> resubmits;
};

// --executor local|slurm and the Slurm job options (--slurm-partition, --slurm-time,
// --slurm-arg, --slurm-resubmits) on a verb.
void add_executor_options(CLI::App* verb, executor_cli& c);

// The command line's choice over [executor] in the lathe.toml the workspace finds (the file
// docs/config.md says is read; keys kind, partition, time, sbatch_args, resubmits): a wrong
// table is an error naming the file and the key.
result<executor_choice> resolve_executor(const workspace& ws, const executor_cli& given);

// The gate's settings a job's `lathe eval` must be given to measure as this process would.
std::vector<std::string> eval_flags(const gate::gate_settings& s);

// A slurm executor for one submission of a verb: Slurm reachable (else why not and what to do),
// the ledger named by `key` (submission_ledger), jobs running this lathe binary on ctx's workspace.
result<std::unique_ptr<slurm_verifier>> open_slurm_executor(const context& ctx, const executor_choice& c, const std::string& key,
                                           std::vector<std::string> flags);

}  // namespace lathe::cli
