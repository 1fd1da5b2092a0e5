// The one sandbox's cost (issue 42: target <= 50 ms a process start): the same tool started by
// gate::run_tool with no jail, in the sandbox (bubblewrap, gate/cpu/bubblewrap.h), and, for scale,
// the Python interpreter's own start in both. Start and finish of each run alternate in one
// series so that a loaded machine weighs on both alike; medians and the 10th/90th percentiles.
// Also what a worker's own namespaces cost (gate/cpu/sandbox.h own_namespaces; root only): a
// fork that unshares mount, network, IPC and UTS namespaces and exits, against a bare fork.
//
//   build/bench/sandbox/sandbox_cost [RUNS]      (default 40; prints one JSON object)
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gate/cpu/bubblewrap.h"
#include "gate/process.h"

namespace fs = std::filesystem;
using namespace lathe::gate;

namespace {

struct stats {
  double p10, median, p90;
};

stats of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.1), at(0.5), at(0.9)};
}

std::string row(const char* name, const stats& s) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "\"%s\": {\"p10_ms\": %.1f, \"median_ms\": %.1f, \"p90_ms\": %.1f}", name,
                s.p10 * 1e3, s.median * 1e3, s.p90 * 1e3);
  return buf;
}

// Seconds for a fork whose child unshares `flags` and exits, reaped.
double fork_unshare(int flags) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) _exit(flags && unshare(flags) != 0 ? 1 : 0);
  int st = 0;
  waitpid(pid, &st, 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) std::fprintf(stderr, "unshare(%#x) failed\n", flags);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 40;
  const bubblewrap_tool& bw = find_bubblewrap();
  if (!bw.usable) {
    std::fprintf(stderr, "no sandbox here: %s\n", bw.why.c_str());
    return 1;
  }
  char tmpl[] = "/tmp/lathe-sandbox-cost-XXXXXX";
  const fs::path work = mkdtemp(tmpl);
  double load_before = 0;
  getloadavg(&load_before, 1);  // the one-minute load average as the series starts
  tool_jail jail;
  jail.candidate_code = true;
  std::vector<double> plain_true, boxed_true, plain_py, boxed_py;
  for (int i = 0; i < runs; ++i) {
    // Alternating, so that drift in the machine's load falls on both sides.
    plain_true.push_back(run_tool({"/bin/true"}, 30, work).seconds);
    boxed_true.push_back(run_tool({"/bin/true"}, 30, work, &jail).seconds);
    plain_py.push_back(run_tool({"/usr/bin/python3", "-c", "pass"}, 30, work).seconds);
    boxed_py.push_back(run_tool({"/usr/bin/python3", "-c", "pass"}, 30, work, &jail).seconds);
  }
  fs::remove_all(work);
  std::vector<double> bare_fork, ns_fork;
  const int worker_ns = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
  for (int i = 0; geteuid() == 0 && i < 5 * runs; ++i) {
    bare_fork.push_back(fork_unshare(0));
    ns_fork.push_back(fork_unshare(worker_ns));
  }
  const stats pt = of(plain_true), bt = of(boxed_true), pp = of(plain_py), bp = of(boxed_py);
  std::string forks;
  if (!bare_fork.empty()) {
    const stats bf = of(bare_fork), nf = of(ns_fork);
    char cost[80];
    std::snprintf(cost, sizeof cost, "\"worker_namespaces_cost_ms\": %.2f", (nf.median - bf.median) * 1e3);
    forks = ",\n  " + row("fork_bare", bf) + ",\n  " + row("fork_own_namespaces", nf) + ",\n  " + cost;
  }
  std::printf("{\"schema\": \"lathe.bench.sandbox_cost/1\", \"sandbox\": \"%s\", \"runs\": %d, \"load\": %.2f,\n"
              "  %s,\n  %s,\n  %s,\n  %s,\n  \"start_cost_ms\": %.1f, \"start_cost_python_ms\": %.1f%s}\n",
              bw.version.c_str(), runs, load_before, row("true_unsandboxed", pt).c_str(), row("true_sandboxed", bt).c_str(),
              row("python_unsandboxed", pp).c_str(), row("python_sandboxed", bp).c_str(),
              (bt.median - pt.median) * 1e3, (bp.median - pp.median) * 1e3, forks.c_str());
  return 0;
}
