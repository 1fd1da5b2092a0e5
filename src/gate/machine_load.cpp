#include "gate/machine_load.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace lathe::gate {
namespace {

double clock_tick() {
  static const double tick = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
  }();
  return tick;
}

// utime + stime from a /proc stat file: a process's (every thread) or one thread's (the fields
// after the command's closing parenthesis; the command may hold spaces and parentheses of its
// own). 0 when it is gone.
double stat_cpu_seconds(const std::string& stat_path) {
  std::ifstream in(stat_path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields 3..13 (state … cmajflt), then utime (14) and stime (15).
  for (int i = 3; i <= 13 && rest >> field; ++i) {
  }
  rest >> utime >> stime;
  return static_cast<double>(utime + stime) * clock_tick();
}

double process_cpu_seconds(pid_t pid) { return stat_cpu_seconds("/proc/" + std::to_string(pid) + "/stat"); }

// Busy and stolen seconds of the CPUs in lathe's affinity mask, from /proc/stat's cpuN lines:
// user nice system idle iowait irq softirq steal (guest time is inside user already).
void machine_cpu_seconds(double& busy, double& steal, uint32_t& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool masked = sched_getaffinity(0, sizeof set, &set) == 0;
  std::ifstream in("/proc/stat");
  busy = steal = 0;
  cpus = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] == ' ') continue;
    std::istringstream s(line.substr(3));
    int n = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, st = 0;
    s >> n >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> st;
    if (n < 0 || (masked && n < CPU_SETSIZE && !CPU_ISSET(n, &set))) continue;
    busy += static_cast<double>(user + nice + system + irq + softirq) * clock_tick();
    steal += static_cast<double>(st) * clock_tick();
    ++cpus;
  }
  cpus = std::max<uint32_t>(cpus, 1);
}

double loadavg_1() {
  std::ifstream in("/proc/loadavg");
  double l = 0;
  in >> l;
  return l;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

}  // namespace

double load_window::other_s() const { return std::max(0.0, busy_s - lathe_s - candidate_s); }

void load_window::add(const load_window& w) {
  wall_s += w.wall_s;
  busy_s += w.busy_s;
  steal_s += w.steal_s;
  lathe_s += w.lathe_s;
  candidate_s += w.candidate_s;
  lathe_threads_s += w.lathe_threads_s;
  cpus = w.cpus;
  loadavg = std::max(loadavg, w.loadavg);
  windows += w.windows;
}

bool machine_loaded(const load_window& w) {
  return w.other_cpus() >= loaded_other_cpus || w.steal_fraction() >= loaded_steal_fraction;
}

std::string describe_load(const load_window& w) {
  std::string s = fmt("other processes used %.2f of the %.0f CPUs lathe may use", w.other_cpus(),
                      static_cast<double>(w.cpus));
  if (w.wall_s > 0 && w.lathe_threads_s / w.wall_s >= 0.005)
    s += fmt(" (lathe's other evaluations %.2f of them)", w.lathe_threads_s / w.wall_s);
  return s + fmt(", steal %.1f%%, load average %.1f", 100 * w.steal_fraction(), w.loadavg);
}

const char* to_string(slowdown_cause c) {
  switch (c) {
    case slowdown_cause::none: return "none";
    case slowdown_cause::candidate: return "candidate";
    case slowdown_cause::machine: return "machine";
    case slowdown_cause::presumed: return "presumed";
  }
  return "?";
}

slowdown_judgement judge_slowdown(double with_s, double without_s, double margin, const load_window& main,
                                  const load_window& control) {
  slowdown_judgement j;
  if (!(with_s > 0) || !(without_s > 0) || with_s <= without_s * (1 + margin)) return j;
  j.slowdown = with_s / without_s - 1;
  const std::string slowed =
      fmt("the baseline ran %.0f%% slower while the candidate's processes were alive (%.3g ms a call) than "
          "after they ended (%.3g ms)",
          100 * j.slowdown, with_s * 1e3, without_s * 1e3);
  // The candidate's own CPU time first: a candidate that burns the CPU is to blame however
  // loaded the machine is (a load of its own must not buy it an `unstable`).
  if (main.candidate_s > candidate_seconds_allowed && main.candidate_cpus() > candidate_cpus_allowed) {
    j.cause = slowdown_cause::candidate;
    j.message = slowed + fmt(": the candidate slowed it (its processes used %.2f CPU-seconds, %.2f CPUs, while "
                             "the baseline was timed, when they should have been idle)",
                             main.candidate_s, main.candidate_cpus());
    return j;
  }
  const bool main_loaded = machine_loaded(main), control_loaded = machine_loaded(control);
  if (main_loaded || control_loaded) {
    j.cause = slowdown_cause::machine;
    j.message = slowed + ", but the machine was loaded, not the candidate's processes (" +
                (main_loaded ? "with the candidate alive: " + describe_load(main)
                             : "in the control: " + describe_load(control)) +
                fmt("; the candidate's processes used %.2f CPUs): not decided", main.candidate_cpus());
    return j;
  }
  j.cause = slowdown_cause::presumed;
  j.message = slowed + ": the candidate slowed it (the machine was quiet: " + describe_load(main) + ")";
  return j;
}

floor_judgement judge_floor(double median_s, double floor_s, double fresh_floor_s, double slack,
                            const load_window& ceilings) {
  floor_judgement j;
  j.floor_s = floor_s;
  // A ceiling measured again can only lower the floor: the stored one ratchets up (context.cpp),
  // so a fresh reading above it means the stored one was taken on a loaded machine.
  if (fresh_floor_s > 0) j.floor_s = std::min(floor_s, fresh_floor_s);
  if (!(median_s > 0) || !(j.floor_s > 0) || median_s >= j.floor_s * slack) return j;
  const std::string below = fmt("faster than the roofline floor allows, twice: %.3g us < floor %.3g us",
                                median_s * 1e6, j.floor_s * 1e6);
  if (machine_loaded(ceilings)) {
    j.verdict = floor_verdict::machine;
    j.message = below + ", but the machine was loaded while its ceilings were measured (" +
                describe_load(ceilings) + "): not decided";
    return j;
  }
  j.verdict = floor_verdict::suspicious;
  j.message = below;
  return j;
}

void load_meter::set_pids(std::vector<pid_t> lathe, std::vector<pid_t> candidate) {
  lathe_ = std::move(lathe);
  candidate_ = std::move(candidate);
}

load_meter::snapshot load_meter::take() const {
  snapshot s;
  s.t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  uint32_t cpus = 1;
  machine_cpu_seconds(s.busy, s.steal, cpus);
  // lathe's own process is the calling thread only (it waits on the baseline's worker while a
  // block runs); its other threads are other evaluations of a batch or an evolve generation,
  // whose inputs, checks and comparisons load the machine as another process's work does (the
  // same clock ticks for both readings, so that their difference is the other threads').
  s.thread = stat_cpu_seconds("/proc/thread-self/stat");
  s.lathe = s.thread;
  s.lathe_threads = std::max(0.0, process_cpu_seconds(getpid()) - s.thread);
  for (pid_t p : lathe_)
    if (p > 0) s.lathe += process_cpu_seconds(p);
  for (pid_t p : candidate_)
    if (p > 0) s.candidate += process_cpu_seconds(p);
  return s;
}

void load_meter::count_as_lathes(double seconds) {
  // The meter reads the other threads in clock ticks, the measurement its threads in nanoseconds:
  // never more than the meter saw, so that a tick's difference does not make load negative.
  const double s = std::clamp(seconds, 0.0, total_.lathe_threads_s);
  total_.lathe_threads_s -= s;
  total_.lathe_s += s;
}

void load_meter::begin() {
  open_ = take();
  opened_ = true;
}

void load_meter::end() {
  if (!opened_) return;
  opened_ = false;
  const snapshot now = take();
  load_window w;
  w.wall_s = now.t - open_.t;
  w.busy_s = std::max(0.0, now.busy - open_.busy);
  w.steal_s = std::max(0.0, now.steal - open_.steal);
  // A process that ended within the window reads 0 at its end: its share is not counted (less
  // than the window's, and lathe's processes end only between series).
  w.lathe_s = std::max(0.0, now.lathe - open_.lathe);
  w.candidate_s = std::max(0.0, now.candidate - open_.candidate);
  w.lathe_threads_s = std::max(0.0, now.lathe_threads - open_.lathe_threads);
  double busy = 0, steal = 0;
  machine_cpu_seconds(busy, steal, w.cpus);
  w.loadavg = loadavg_1();
  w.windows = 1;
  total_.add(w);
}

load_window wait_for_quiet(double max_seconds, const std::vector<pid_t>& lathe) {
  load_meter m;
  m.set_pids(lathe, {});
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  for (;;) {
    m.reset();
    m.begin();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    m.end();
    if (!machine_loaded(m.total()) || std::chrono::steady_clock::now() >= until) return m.total();
  }
}

}  // namespace lathe::gate
