// lathe solve (issue 44, item 4; docs/solve.md): a folder of KernelBench problems solved in one
// command. Each problem gets one optimize run in language `modelnew` (optimize.h) under a
// per-problem budget, starting from its own Model as a ModelNew (eager PyTorch); the run's best
// verified ModelNew is written in KernelBench's layout (`level_<L>_problem_<P>_sample_<S>_
// kernel.py`), a problem with no accepted step getting its start, so that every file is a valid
// submission.
//
// This file holds the loop and what it keeps: the problems of a folder, the per-problem record,
// the state file that makes the loop resumable after kill -9 (each finished problem written
// atomically, its ModelNew first, the state second: a problem in the state always has its file),
// and the aggregates, pure arithmetic over the records. The optimize run itself is the caller's
// (`solve_runner`): the cli wires the proposer session and the gate per problem, as bench's
// --strategy does, and hands back the record that solve_attempt_of makes of the run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/decision.h"
#include "core/error.h"
#include "search/bench_stats.h"
#include "search/optimize.h"
#include "store/store.h"

namespace lathe::search {

struct solve_problem {
  int32_t level = 0, problem = 0;
  std::filesystem::path file;  // the problem file (`<P>_<Name>.py`)
};

// The KernelBench problem files of `dir`: regular `*.py` files named `<P>_<Name>.py`, sorted by P;
// other entries are not problems and are passed over. The level is `level`, else the folder's
// name (`level1`). Refused with the reason: not a folder, no level, no problem file, two files
// with one number.
result<std::vector<solve_problem>> solve_problems(const std::filesystem::path& dir, std::optional<int32_t> level);

enum class solve_status : uint8_t {
  solved,  // the run finished: its best verified ModelNew (or the eager start) is written
  failed,  // no run, or the run failed (a problem that does not import, a start that fails the gate)
};
const char* to_string(solve_status s);
std::optional<solve_status> parse_solve_status(std::string_view s);

struct solve_record {
  int32_t level = 0, problem = 0, sample = 0;
  std::string file;          // the problem file's name
  solve_status status = solve_status::failed;
  std::string message;       // failed: why; solved: what the run found, in words
  std::string run;           // the optimize run (empty when none started)
  std::string kernel;        // the ModelNew written in the layout (its file name); empty: none
  std::string kernel_hash;
  int32_t steps = 0;         // accepted steps: 0 means the submission is the eager start
  std::string stop;          // what ended the run (optimize's stop reason)
  // The run's final paired series, its best against the eager start (none when no step was
  // accepted: the best is then the start itself).
  int64_t evaluation = 0;
  std::string outcome;       // that series' gate outcome ("ok", "unstable"); empty without one
  std::optional<lathe::decision> decided;
  std::optional<double> speedup, ci_low, ci_high;    // time(eager) / time(best), its 95% interval
  std::optional<double> runtime_ms, ref_runtime_ms;  // best's and eager's medians in that series
  // What the run used (its metering: tokens and money where the provider reports them).
  int64_t calls = 0, tokens = 0;
  double usd = 0, seconds = 0;
};
void to_json(nlohmann::json& j, const solve_record& r);
void from_json(const nlohmann::json& j, solve_record& r);

// The speedup over eager a problem counts with in the geomean: the final series' ratio when the
// gate decided it (faster or slower), else 1.0 (no step accepted; the series undecided or `same`).
double counted_speedup(const solve_record& r);

// A gain over `p` that counts in fast_p: solved, the final series decided `faster`, and its
// interval's low end above p (a point estimate above p is not a decided gain).
bool decided_gain(const solve_record& r, double p);

struct solve_summary {
  int32_t problems = 0, correct = 0, failed = 0;
  int32_t decided_faster = 0;   // correct problems whose best is decided faster than eager
  std::vector<fast_p> fast;     // per p: count of decided gains over p, fraction over ALL problems
  std::optional<double> geomean;  // of counted_speedup over the correct problems; none without one
  int64_t calls = 0, tokens = 0;
  double usd = 0, seconds = 0;
};
solve_summary summarize_solve(const std::vector<solve_record>& records,
                              const std::vector<double>& ps = {1.0, 1.5, 2.0});

// The out folder's state: the finished problems, each written the moment it finished.
inline constexpr const char* solve_state_name = "lathe-solve-state.json";
// A problem being run when the state was written last, and its optimize run's id: what a kill
// interrupted, resumed by the next call.
struct solve_running {
  int32_t level = 0, problem = 0;
  std::string run;
};
struct solve_state {
  std::string suite;  // the solved folder, absolute
  int32_t sample = 0;
  // The options every problem's run was made with, in words ("strategy none, budget steps=1, …"):
  // a call that resumes the folder must give the same (empty in a state that did not keep them).
  std::string settings;
  std::vector<solve_record> finished;
  std::vector<solve_running> running;  // several with --jobs
};
// None when the folder has no state file yet.
result<std::optional<solve_state>> read_solve_state(const std::filesystem::path& out);
// Written under a fresh name and renamed over the old one (spec/safe_file.h write_beneath).
result<void> write_solve_state(const std::filesystem::path& out, const solve_state& s);

// What a runner hands back for one problem: its record and the ModelNew to write (none: failed).
struct solve_attempt {
  solve_record rec;
  std::optional<std::string> modelnew;
};
// The optimize run a problem gets: a new id, or the one an earlier call was running when it was
// killed (`interrupted`: resume it where the store holds it, `lathe optimize --resume`, so that no
// finished evaluation or model call is repeated; start it under that id where it holds nothing).
struct solve_run {
  std::string id;
  bool interrupted = false;
};
using solve_runner = std::function<solve_attempt(const solve_problem&, const solve_run&)>;

// The record of a finished optimize run (its final series read from the store), and its best
// ModelNew's source.
solve_attempt solve_attempt_of(const optimize_result& res, const solve_problem& p, int32_t sample, const store& db);
// A problem that got no run, or whose run failed.
solve_attempt solve_failure(const solve_problem& p, int32_t sample, const std::string& why, const std::string& run = "");

enum class solve_event : uint8_t { skipped, started, finished };
struct solve_progress {
  solve_event what = solve_event::started;
  int32_t index = 0, total = 0;  // 1-based position among the problems
  const solve_problem* problem = nullptr;
  const solve_run* run = nullptr;        // started
  const solve_record* record = nullptr;  // skipped, finished
};

struct solve_options {
  std::filesystem::path out;   // created when missing
  std::string suite;           // the folder, absolute
  int32_t sample = 0;
  std::string settings;        // solve_state::settings
  // Problems run at once, each on a thread of its own (the runner must allow it: the cli gives
  // each its own context, store connection and proposer session; timings still take turns on
  // the device lock). 1: one after the other, on the calling thread.
  int32_t jobs = 1;
  std::function<void(const solve_progress&)> progress;
  // After each problem's state is written: every record finished so far, in the state's order
  // (the cli rewrites KernelBench's results file, so that a kill leaves it up to date).
  std::function<void(const std::vector<solve_record>&)> finished;
  std::function<std::string()> new_run_id;  // none: optimize's (new_run_id())
};

struct solve_result {
  std::vector<solve_record> records;  // one per problem, in problem order
  int32_t skipped = 0;                // finished by an earlier call (read from the state)
};

// The out folder held for one `lathe solve` at a time (an flock on lathe-solve.lock, released
// when the process ends, kill -9 included): a second call on the same folder while the first
// runs would write the state over it. An error that says so when another process holds it.
class solve_folder_lock {
 public:
  static result<solve_folder_lock> take(const std::filesystem::path& out);
  solve_folder_lock(solve_folder_lock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  solve_folder_lock(const solve_folder_lock&) = delete;
  solve_folder_lock& operator=(const solve_folder_lock&) = delete;
  ~solve_folder_lock();

 private:
  explicit solve_folder_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The loop: each problem already finished in the out folder's state is skipped (and said so);
// each other one is named in the state as running with its run's id, run, its ModelNew written,
// then the state (one problem's writes at a time, whatever `jobs`). A problem interrupted by a
// kill gets its run again, `interrupted`. An exception out of the runner ends the loop, as a
// kill would (with jobs, once the problems in flight are done), and is thrown again. Errors: the
// out folder cannot be made, locked (another call is solving into it) or written, or its state is
// another suite's or sample's, or was made with other settings.
result<solve_result> solve(const std::vector<solve_problem>& problems, const solve_runner& run,
                           const solve_options& o);

}  // namespace lathe::search
