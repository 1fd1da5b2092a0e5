// The machine is not the kernel (PROTOCOL.md "Trust boundary"): what the gate measures of the
// machine's load before a check that suspects a candidate blames it, and the pure rules that
// decide between the candidate, the machine and neither.
//
// Why: on the 2-core VM, with other builds running, honest OpenMP and SIMD rewrites were refused
// as suspicious_speed ("the candidate slowed the baseline") that measured 1.59-1.94x minutes
// earlier (issue 42, item 7). A baseline timed while the candidate's processes live can be slowed
// by the candidate (its threads, its processes) or by anything else on the machine (a compiler,
// a hypervisor's steal). The candidate's processes are frozen between their requests, so CPU time
// they use while the baseline is timed is theirs to answer for; CPU time of other processes and
// steal is the machine's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lathe::gate {

// CPU accounting over one window (or the sum of several): seconds of CPU time, from /proc.
struct load_window {
  double wall_s = 0;           // wall-clock seconds the window lasted
  double busy_s = 0;           // non-idle CPU time of the CPUs lathe may use (/proc/stat)
  double steal_s = 0;          // stolen from those CPUs by the hypervisor (/proc/stat)
  double lathe_s = 0;          // lathe's timing thread and the baseline's workers
  double candidate_s = 0;      // the candidate's processes (its workers, every thread)
  // lathe's other threads (other evaluations of the same process): inside busy_s and other_s,
  // since their work loads the machine as another process's does; kept apart to say so.
  double lathe_threads_s = 0;
  uint32_t cpus = 1;           // CPUs lathe may use (its affinity mask)
  double loadavg = 0;          // the 1-minute load average at the window's end (/proc/loadavg)
  uint32_t windows = 0;

  // CPU time of neither the timing (lathe's thread, the baseline's workers) nor the candidate:
  // other processes and lathe's other threads.
  double other_s() const;
  // Averages over the window, in CPUs.
  double other_cpus() const { return wall_s > 0 ? other_s() / wall_s : 0; }
  double candidate_cpus() const { return wall_s > 0 ? candidate_s / wall_s : 0; }
  double steal_fraction() const { return wall_s > 0 && cpus > 0 ? steal_s / (wall_s * cpus) : 0; }
  void add(const load_window& w);
};

// Thresholds of the rules below, with their reasons.
// Another process using 15% of a CPU on average beside the baseline: enough to slow a baseline
// that uses every CPU (an OpenMP one) by the 25% the slowed-baseline check asks for in bursts;
// the accounting's own error is a clock tick (10 ms) per counter per block, about 0.05 CPU over
// a series of 20-ms blocks on the 2-core VM.
constexpr double loaded_other_cpus = 0.15;
// 3% of the CPUs' time stolen by the hypervisor: the steal of an idle cloud VM is well under 1%.
constexpr double loaded_steal_fraction = 0.03;
// The candidate's processes are frozen while the baseline is timed: 5% of a CPU (and 30 ms, three
// clock ticks, so that one tick charged at a freeze's edge is not read as work) is work of theirs.
constexpr double candidate_cpus_allowed = 0.05;
constexpr double candidate_seconds_allowed = 0.03;

bool machine_loaded(const load_window& w);
// "other processes used 0.62 of the 2 CPUs lathe may use, steal 0.4%, load average 3.1".
std::string describe_load(const load_window& w);

// Who slowed the baseline: the slowed-baseline check's decision (evaluator::control_and_decide).
enum class slowdown_cause : uint8_t {
  none,       // the baseline was not slowed beyond the margin
  candidate,  // the candidate's processes used the CPU while the baseline was timed
  machine,    // other processes or steal loaded the machine in one of the windows: not decidable
  presumed,   // slowed on a quiet machine with the candidate's processes idle: still the candidate's
              // (it may slow the baseline without CPU time of its own: the GPU, memory it holds)
};
const char* to_string(slowdown_cause c);

struct slowdown_judgement {
  slowdown_cause cause = slowdown_cause::none;
  double slowdown = 0;  // with / without - 1
  std::string message;  // what the user reads (empty for none)
};

// `with_s`, `without_s`: the baseline's median seconds a call while the candidate's processes
// were alive (the main series) and after they ended (the A/A control); `margin` the slowdown the
// check tolerates; `main`, `control`: the accounting over the baseline's blocks in each series.
slowdown_judgement judge_slowdown(double with_s, double without_s, double margin, const load_window& main,
                                  const load_window& control);

// The roofline floor's decision once a kernel stayed below it twice (time_cpu.cpp, time_cuda.cpp).
enum class floor_verdict : uint8_t {
  above,       // at or above the floor (with the re-measured ceiling, when that lowered it)
  suspicious,  // below it on a quiet machine: suspicious_speed
  machine,     // below it, but the ceilings were measured on a loaded machine: unstable
};
struct floor_judgement {
  floor_verdict verdict = floor_verdict::above;
  double floor_s = 0;  // the floor the verdict used
  std::string message;
};
// `median_s` the kernel's time a call; `floor_s` from the stored ceilings; `fresh_floor_s` from
// ceilings measured again just now (0: not measured, as on CUDA); `slack` the policy's
// roofline_slack; `ceilings` the accounting over that measurement (on CUDA, over the series).
floor_judgement judge_floor(double median_s, double floor_s, double fresh_floor_s, double slack,
                            const load_window& ceilings);

// Counts /proc's CPU times between begin() and end(): the machine's, lathe's processes' and the
// candidate's. Windows add up, so a meter wrapped around every block of one side of a series
// measures that side's blocks only.
class load_meter {
 public:
  // `lathe` and `candidate`: pids whose CPU time is lathe's or the candidate's; of lathe's own
  // process, the thread that calls begin() and end() is lathe's (the same thread for both), its
  // other threads are the machine's load (lathe_threads_s).
  void set_pids(std::vector<pid_t> lathe, std::vector<pid_t> candidate);
  // `seconds` of lathe's other threads were the measurement's own (the CPU ceilings' passes,
  // cpu_ceilings::thread_cpu_s): moved from the other threads' load to lathe's. Called after
  // end(); the rest of the other threads (other evaluations of a batch) stay the machine's load.
  void count_as_lathes(double seconds);
  void begin();
  void end();
  const load_window& total() const { return total_; }
  void reset() { total_ = load_window{}; }

 private:
  struct snapshot {
    double t = 0, busy = 0, steal = 0, lathe = 0, candidate = 0, thread = 0, lathe_threads = 0;
  };
  snapshot take() const;
  std::vector<pid_t> lathe_, candidate_;
  snapshot open_;
  bool opened_ = false;
  load_window total_;
};

// Polls the machine in 0.25-s windows, up to `max_seconds`, until a window's other-process load
// is below the threshold; lathe's processes (`lathe`) do not count, lathe's other threads do
// (another evaluation of a batch checking its candidate). Returns the last window.
load_window wait_for_quiet(double max_seconds, const std::vector<pid_t>& lathe);

}  // namespace lathe::gate
