// The evaluation of one kernel as the gate's stages share it (gate.cpp, time_cpu.cpp): what
// the request and the configuration are, the processes it started, what it found so far. Not
// part of the gate's interface (gate.h).
#pragma once

#include <cstdio>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "gate/check.h"
#include "gate/device_trial.h"
#include "gate/gate.h"
#include "gate/paired.h"
#include "gate/problem_ipc.h"
#include "gate/python_kernel.h"
#include "gate/reference.h"
#include "gate/timing.h"
#include "gate/trial.h"

namespace lathe::gate::detail {

using clock_type = std::chrono::steady_clock;

// A stage ended the evaluation: the outcome and what the user reads.
struct stop {
  outcome o;
  std::string message;
  std::string diagnostics;
  // Once more from the start before this is the verdict: the machine's doing is likely (a worker
  // that could not start; a baseline slowed while the candidate lived, which a load that came and
  // went between the series reads alike on a shared VM), and a kernel that caused it does again.
  bool retry = false;
  // Undecided because a series' interval came from too few process pairs that differed (its pair
  // means, pairs - 1 degrees of freedom): time_all times the stage again with more pairs.
  bool more_pairs = false;
};

// Maps how a worker request ended onto the outcome enum, with a message a user can act on.
stop from_worker(const worker_result& r, const std::string& when);
// The stop a failed output check means (nullopt when it passed).
std::optional<stop> verdict_stop(const output_check& oc, const std::string& what);
std::string output_where(const task& t, size_t i, const slot_layout& l, uint64_t seed,
                         const std::string& where);

// Progress on a long check: trials done of all, and the time left at the pace so far, said at
// most every 2 s (never for the first or the last trial).
class check_pace {
 public:
  check_pace(const std::function<void(const std::string&)>& tell, const task& t, uint32_t seeds, uint32_t sets)
      : tell_(tell), begun_(std::chrono::steady_clock::now()), said_(begun_) {
    for (uint32_t i = 0; i < sets; ++i) all_ += trials_on_set(t, seeds, i);
  }
  void trial_done() {
    ++done_;
    const auto now = std::chrono::steady_clock::now();
    if (!tell_ || done_ >= all_ || now - said_ < std::chrono::seconds(2)) return;
    said_ = now;
    const double per = std::chrono::duration<double>(now - begun_).count() / done_;
    if (per * (all_ - done_) < 1) return;
    char b[120];
    std::snprintf(b, sizeof b, "check: %u of %u trials, about %.0f s left in the checks", done_, all_,
                  per * (all_ - done_));
    tell_(b);
  }

 private:
  const std::function<void(const std::string&)>& tell_;
  std::chrono::steady_clock::time_point begun_, said_;
  uint32_t all_ = 0, done_ = 0;
};

// One timing process of one side: its shared region and its worker.
struct timing_proc {
  shared_region region;
  worker w;
};
// The CPU's timing pools and the per-process state of a timed series (time_cpu.cpp); the CUDA's
// window draws (time_cuda.cpp).
struct timing_pools;
struct timed_arenas;
struct window_draws;

class evaluator {
 public:
  evaluator(const gate_config& cfg, const gate_request& req, evaluation& e)
      : cfg_(cfg),
        req_(req),
        t_(*req.t),
        e_(e),
        cuda_(req.t->plat == platform::cuda),
        python_device_(cuda_ && req.candidate.manifest.lang == language::python),
        python_timed_(cuda_ && (python_device_ || req.baseline.manifest.lang == language::python)),
        dev_trials_(cuda_ && !python_timed_ && cfg.device_trials && !req.t->gpu_reference.empty() &&
                    req.t->compare.kind == comparison_kind::elementwise &&
                    req.t->outputs.size() <= static_cast<size_t>(wire::max_compared)),
        comparability_(cfg.mode != timing_mode::decision) {
    if (dev_trials_) e_.trials_on = trial_site::device;
    if (!t_.problem.empty()) {
      e_.problem_path = tensor_path::host;
      const std::string misfit = problem_ipc_misfit(t_);
      problem_ipc_ = cfg.device_trials && misfit.empty() && !python_device_;
      if (cuda_ && !problem_ipc_)
        e_.diagnostics += "checks of the problem staged through host memory, not CUDA IPC: " +
                          (!cfg.device_trials ? std::string("host trials asked for")
                           : python_device_   ? std::string("a Python kernel's worker shares no device buffer yet")
                                              : misfit) +
                          "\n";
    }
    std::random_device rd;
    seed_base_ = cfg.seed_base ? cfg.seed_base : (uint64_t{rd()} << 32 | rd());
    rng_.seed(seed_base_ ^ 0x9e3779b97f4a7c15ull);
  }

  std::optional<stop> run();

 private:
  void progress(const std::string& s) {
    if (cfg_.progress) cfg_.progress(s);
  }
  // The timed stage's expected length, once calibration knows a block of each side (`a_block`,
  // `b_block` seconds, of `a_calls`, `b_calls` calls): per series a warm-up cycle over the
  // `pairs`, then rounds until the noise criterion or max_seconds, but never fewer than two cycles
  // (timing.cpp); the A/A control runs the baseline on both sides. The worst case, short of a
  // re-check below the floor. (It said "20 ms a call" of a 60 us kernel's block until 12-07.)
  void timing_eta(double a_block, double b_block, uint64_t a_calls, uint64_t b_calls, size_t pairs) {
    if (!cfg_.progress || pairs == 0) return;
    const auto& p = cfg_.policy;
    auto series = [&](double round) { return pairs * round + std::max(p.max_seconds + round, 2 * pairs * round); };
    const double left = series(a_block + b_block) + (cfg_.aa_control ? series(2 * b_block) : 0.0);
    char b[240];
    std::snprintf(b, sizeof b, "time: the kernel %.3g us a call, %llu calls a block; the baseline %.3g us, "
                  "%llu calls; about %.0f s left (the paired series%s)",
                  a_block * 1e6 / static_cast<double>(std::max<uint64_t>(a_calls, 1)),
                  static_cast<unsigned long long>(a_calls),
                  b_block * 1e6 / static_cast<double>(std::max<uint64_t>(b_calls, 1)),
                  static_cast<unsigned long long>(b_calls), left, cfg_.aa_control ? ", then the A/A control" : "");
    progress(b);
  }
  void stage_done(const char* name, clock_type::time_point since) {
    e_.stage_seconds.push_back(
        {name, std::chrono::duration<double>(clock_type::now() - since).count()});
  }
  std::optional<stop> build_all();
  std::optional<stop> check_all();
  void size_timing(const slot_layout& l);  // timing_slots_, timing_processes_ (and its cap)
  std::optional<stop> check_all_device(const std::vector<slot_layout>& layouts);
  // PyTorch problems on CUDA (problem_ipc.h): the problem's worker opens the checks' worker's
  // device buffer; any failure of the link ends it with a note, and host trials go on.
  std::optional<stop> open_link();
  void drop_link(const std::string& why);
  // One trial through the link. `mirror`: the trial also comes through host memory and the two
  // verdicts must agree (the evaluation's first trial). `checked` stays false when the link
  // failed before a verdict: the caller runs the trial on the host.
  std::optional<stop> check_trial_ipc(const slot_layout& l, const trial_spec& spec, bool mirror,
                                      std::string& previous,
                                      uint64_t& checksum, bool& checked);
  // A verdict computed on the device (the CUDA oracle's or the problem's worker's).
  std::optional<stop> apply_verdict(const slot_layout& l, const device_verdict& v, uint64_t seed,
                                    const std::string& where, uint64_t* checksum);
  std::optional<stop> bench();
  std::optional<stop> bench_host(const wire::command& c, worker_result& out);
  // Device trials: the inputs of slot k of worker w from `spec`, outputs poisoned (host trials:
  // staged from `host` and uploaded).
  std::optional<stop> prepare_slot(worker& w, uint8_t* slot_mem, const slot_layout& l, uint32_t k,
                                   const trial_spec& spec, const trial_data* host);
  // Device trials: the oracle's verdict on slot k of `w` (peer `peer` when IPC works, else
  // staged through `region`); the outputs' checksum for the cached-result check.
  std::optional<stop> device_verify(worker& w, const shared_region& region, uint32_t peer,
                                    const slot_layout& l, uint32_t oracle_slot, uint32_t k,
                                    uint64_t seed, const std::string& where, uint64_t* checksum);
  std::optional<stop> share_with_oracle(worker& w, uint32_t peer);
  std::optional<stop> oracle_failed(const worker_result& r, const std::string& when);
  std::optional<stop> check_trial(const slot_layout& l, const trial_data& d, uint8_t* slot,
                                  std::string& previous,
                                  const std::string& where);
  // The digest of a slot's outputs, for the cached-output check (byte-identical outputs of two
  // trials with different inputs).
  std::string outputs_digest(const slot_layout& l, const uint8_t* slot) const;
  // check_trial once the slot is back in host memory: inputs, cached outputs, outputs.
  std::optional<stop> judge_host_slot(const slot_layout& l, const trial_data& d, const uint8_t* slot,
                                      std::string& previous,
                                      const std::string& where);
  std::optional<stop> check_slot_outputs(const slot_layout& l, const trial_data& d,
                                         const uint8_t* slot, const std::string& where);
  // The same on an output area alone (output i at l.output_offset[i] - l.input_bytes).
  std::optional<stop> check_outputs(const slot_layout& l, const trial_data& d, const uint8_t* outputs,
                                    const std::string& where);
  // The decision timing on either platform. Undecided with too few process pairs that differed
  // (stop::more_pairs): timed once more from fresh processes, twice the pairs (up to 8 and the
  // device's memory), the first attempt's verdict kept in the diagnostics.
  std::optional<stop> time_all();
  // The CPU's decision timing (time_cpu.cpp, timing_arena.h): every timed call on inputs of its
  // own and an output of its own, a uniform sample of calls checked, workers frozen between
  // requests.
  std::optional<stop> time_all_cpu();
  // After the main series, on both platforms, with the candidate's processes gone: the A/A
  // control, the baseline's times with and without the candidate alive, the decision.
  // control.cpp; the slowed-baseline check blames the candidate only after ruling out the
  // machine (machine_load.h).
  std::optional<stop> control_and_decide(std::vector<timed_worker>& b, std::vector<timed_worker>& b2,
                                         const paired_series& main);
  // Meters the baseline's blocks of the main series (base_meter_); before run_paired.
  void meter_baseline(std::vector<timed_worker>& b);
  // The baseline's timing processes (its copies too): lathe's, not the candidate's.
  std::vector<pid_t> lathe_pids() const;
  std::optional<stop> idle_check(const worker& w, const std::string& when);
  // A vendor library the task forbids, mapped into the candidate's worker at run time.
  std::optional<stop> mappings_check(const worker& w, const std::string& when);
  // The start and the end every decision timing shares (time_shared.cpp). The timing shape's
  // layout, said as the stage's start.
  tl::expected<slot_layout, stop> timing_layout();
  // Three processes per pair (candidate, baseline, baseline's copy for the A/A control), created
  // in an order that rotates with the pair: memory mapped earlier ran up to 15% slower. `start`
  // starts one into its pool; a baseline that fails is the task's problem unless the machine's.
  // `concurrent`: all of them at once, as many at a time as the machine has CPUs (a Python
  // worker imports torch for about 2 s on the 2-core VM, and twelve started one after another
  // were half of a ModelNew's timing stage); each into a pool of its own, moved into the sides'
  // pools in the rotating order afterwards, where the first stop in that order is the answer.
  // `candidate`: the candidate's process's place among the candidate's (0, 1, ...; -1 for a
  // baseline's), which is where it lands in cands_ (the CUDA starter numbers the oracle's peers
  // by it). A starter must read no side's pool.
  using proc_starter = std::function<std::optional<stop>(const build_output&, const std::string& who,
                                                         int candidate, std::vector<timing_proc>&)>;
  std::optional<stop> start_timing_sides(const proc_starter& start, bool concurrent = false);
  // Every worker of every side settled, then calls per block for each side from the median of
  // its workers' settled times, given to all its workers; the stage's expected length said. `pool_failure`: a stop the CPU's pools left during calibration, which
  // outranks the failed request it caused (may be empty).
  std::optional<stop> calibrate_sides(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                                      std::vector<timed_worker>& b2, double timeout,
                                      const std::function<std::optional<stop>()>& pool_failure);
  // The stop a failed series means: the main one's by the side that failed, a re-check's always
  // the candidate's (its baseline passed the main series).
  static std::optional<stop> series_stop(const series_result& r, bool recheck);
  // The candidate's timing processes after a series, while frozen: vendor mappings, then thawed
  // for the idle check (frozen again when `refreeze`).
  std::optional<stop> check_timed_candidates(bool refreeze);
  // Below the floor after every re-check: suspicious (the kernel's doing) or unstable (the
  // machine's); nullopt when the floor is met or undecided either way.
  static std::optional<stop> floor_stop(const floor_judgement& j);
  // The stage's end: its time recorded, the candidate's processes ended (none of its work runs
  // during the control), then the A/A control and the decision (control.cpp).
  std::optional<stop> end_timing(std::vector<timed_worker>& b, std::vector<timed_worker>& b2,
                                 clock_type::time_point since);
  // The CPU's parts (time_cpu.cpp): one process with its arena; every arena staged and every
  // worker set up, all processes at once; the timed calls checked after a series; the roofline
  // floor's re-check and judgement.
  std::optional<stop> start_arena_proc(const build_output& obj, const std::string& who, uint64_t bytes,
                                       std::vector<timing_proc>& pool);
  std::optional<stop> stage_arenas(const timing_pools& pools, const wire::command& setup);
  std::optional<stop> check_timed_calls(const timing_pools& pools, timed_arenas& ta, const std::string& when);
  std::optional<stop> cpu_floor(std::vector<timed_worker>& a, std::vector<timed_worker>& b, timing_pools& pools,
                                timed_arenas& ta, double timeout);
  std::optional<stop> judge_cpu_floor(const slot_layout& l, uint64_t working_set, double floor);
  // The CUDA's parts (time_cuda.cpp): the host's draw of the device's inputs checked; a sample of
  // the candidate's last blocks checked against the references of the windows they read.
  std::optional<stop> check_device_draws(const window_draws& wd);
  std::optional<stop> check_timed_windows(const window_draws& wd, const std::vector<timed_worker>& a,
                                          const std::string& when);
  std::optional<stop> check_timed_window(const window_draws& wd, size_t j, uint32_t k, uint32_t window,
                                         const std::string& where);
  // The CUDA's decision timing (time_cuda.cpp, fresh_windows.h): every timed call on inputs no
  // earlier timed call read, slots drawn again between blocks, a sample of the last blocks'
  // outputs checked against the references of the windows they read.
  std::optional<stop> time_all_cuda();
  // One timing process of one side on the window layout `setup` describes: started, set up, its
  // slots' outputs poisoned (a problem's draws `staged` into them first), frozen between requests.
  // `candidate`: as proc_starter's (device trials share a candidate's buffer with the oracle as
  // peer 2 + candidate). Safe to run for several processes at once.
  std::optional<stop> start_timing_proc(const build_output& obj, const wire::command& setup,
                                        uint64_t region_bytes, const std::string& who, int candidate,
                                        const std::vector<std::vector<uint8_t>>& staged,
                                        std::vector<timing_proc>& pool);
  // The time below which the timing shape cannot run when a block's data is `working_set` bytes.
  // `ceilings`: the target whose ceilings to use (cfg_.tgt when null).
  double roofline_floor(const slot_layout& l, uint64_t working_set, const target* ceilings = nullptr) const;
  // The candidate-vs-baseline series and the figures taken from it.
  void record(const paired_series& s) {
    e_.paired = s;
    e_.median_seconds = median(s.a_seconds);
    e_.baseline_median_seconds = median(s.b_seconds);
    e_.dispersion = relative_mad(s.a_seconds);
  }
  // `share`: the worker exports its device buffer to the oracle (candidates in device trials).
  result<worker> start_worker(const build_output& obj, const shared_region& region,
                              std::optional<stop>& failed, const std::string& who,
                              bool share = false);

  const gate_config& cfg_;
  const gate_request& req_;
  const task& t_;
  evaluation& e_;
  uint64_t seed_base_ = 0;
  std::mt19937_64 rng_;
  build_output cand_, base_, ref_obj_;
  // A Python ModelNew's staged build files, kept while its workers run (declared before them).
  std::vector<std::shared_ptr<python_stage>> python_stages_;
  // A ModelNew's extensions' calls around torch's dispatcher (python_kernel.h), read at its first stage.
  std::optional<std::vector<std::string>> ext_bypass_;
  // What start_worker reads and writes of the evaluation (the two above, e_.diagnostics) while
  // timing workers start at once (start_timing_sides).
  std::mutex start_mu_;
  reference ref_;
  shared_region region_;
  worker cand_worker_;  // the checks' worker
  bool problem_ipc_ = false;  // a CUDA problem task whose checks may go through CUDA IPC
  problem_link link_;         // to cand_worker_'s buffer; declared after ref_, which holds the oracle
  trial_spec last_spec_;      // the last check's trial
  std::vector<timing_proc> cands_, bases_, copies_;  // the timing processes
  uint32_t timing_slots_ = 1;
  uint32_t timing_processes_ = 1;  // process pairs (policy.processes, fewer where memory is short)
  uint32_t timing_processes_cap_ = 1;  // the most a stage timed again may start (time_all)
  uint64_t timing_bytes_ = 0;      // CUDA: one slot of the timing shape's window layout
  bool cuda_ = false;  // tensors live on the device: every staging is followed by an upload
  // A Python candidate on a CUDA task (python/lathe_cuda.py): its worker holds the slots on the
  // device but draws no inputs there and shares no buffer, so its trials go through host memory.
  bool python_device_ = false;
  // A Python worker on either side of the timing (the candidate, or eager PyTorch as the
  // baseline): inputs drawn once on the host and staged into every process, as a problem's are;
  // CUDA graphs for both sides or for neither (time_cuda.cpp), since a replay skips the work of a
  // Python call's interpreter (dispatch, the output's copy) and would pair a Python candidate's
  // replays against an eager baseline paying it.
  bool python_timed_ = false;
  bool dev_trials_ = false;     // inputs, references and comparisons on the device (device_trial.h)
  bool comparability_ = false;  // cfg_.mode is not decision
  build_output gpu_ref_obj_;
  std::optional<oracle> oracle_;
  bool ipc_ = true;             // the oracle reads kernels' buffers through CUDA IPC
  std::optional<trial_data> last_host_trial_;  // host trials: the last check's data (bench)
  uint64_t last_seed_ = 0;
  // The machine's CPU time over the baseline's blocks of the main series (machine_load.h).
  load_meter base_meter_;
  // CUDA: region -> device before a call, device -> region after it (no-ops on CPU).
  std::optional<stop> upload(worker& w, uint32_t first, uint32_t count) {
    if (!cuda_) return std::nullopt;
    worker_result r = w.transfer(wire::op::upload, first, count, cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "copying inputs to the device");
    return std::nullopt;
  }
  std::optional<stop> download(worker& w, uint32_t first, uint32_t count) {
    if (!cuda_) return std::nullopt;
    worker_result r = w.transfer(wire::op::download, first, count, cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "copying outputs from the device");
    return std::nullopt;
  }
};

}  // namespace lathe::gate::detail
