// The one sandbox's cost (issue 42: target <= 50 ms a process start): the same tool started by
// gate::run_tool with no jail, in the sandbox (bubblewrap, gate/bubblewrap.h), and, for scale,
// the Python interpreter's own start in both. Start and finish of each run alternate in one
// series so that a loaded machine weighs on both alike; medians and the 10th/90th percentiles.
//
//   build/bench/sandbox/sandbox_cost [RUNS]      (default 40; prints one JSON object)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gate/bubblewrap.h"
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
  const stats pt = of(plain_true), bt = of(boxed_true), pp = of(plain_py), bp = of(boxed_py);
  std::printf("{\"schema\": \"lathe.bench.sandbox_cost/1\", \"sandbox\": \"%s\", \"runs\": %d,\n  %s,\n  %s,\n  %s,\n  %s,\n"
              "  \"start_cost_ms\": %.1f, \"start_cost_python_ms\": %.1f}\n",
              bw.version.c_str(), runs, row("true_unsandboxed", pt).c_str(), row("true_sandboxed", bt).c_str(),
              row("python_unsandboxed", pp).c_str(), row("python_sandboxed", bp).c_str(),
              (bt.median - pt.median) * 1e3, (bp.median - pp.median) * 1e3);
  return 0;
}
