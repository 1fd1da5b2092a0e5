#include "cli/bench_prebuild.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>

#include "gate/prebuild.h"

namespace lathe::cli {

nlohmann::json prebuild_suite(const context& ctx, const gate_settings& gs,
                              const std::vector<std::pair<const task*, kernel_bundle>>& candidates, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t parallel = std::max(1u, std::thread::hardware_concurrency());
  std::deque<gate::gate_config> configs;  // stable addresses for the jobs
  std::map<const task*, const gate::gate_config*> by_task;
  std::vector<gate::prebuild_job> jobs;
  for (const auto& [t, k] : candidates) {
    if (!by_task.count(t)) {
      gate_settings quiet_gate = gs;
      quiet_gate.progress = false;
      configs.push_back(make_gate_config(ctx, *t, quiet_gate));
      by_task[t] = &configs.back();
    }
    jobs.push_back({by_task[t], t, k});
  }
  if (!quiet && !jobs.empty())
    std::fprintf(stderr, "… build %zu candidate(s) ahead of the suite, %zu at a time\n", jobs.size(), parallel);
  std::map<gate::prebuild_status, int> count;
  size_t done = 0;
  const auto outcomes = gate::prebuild(jobs, parallel, [&](const gate::prebuild_outcome& o) {
    ++done;
    if (!quiet && o.status == gate::prebuild_status::failed)
      std::fprintf(stderr, "… build %zu/%zu: %s for %s %s\n", done, jobs.size(), o.kernel.c_str(), o.task.c_str(),
                   o.why.c_str());
  });
  for (const auto& o : outcomes) ++count[o.status];
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet && !jobs.empty())
    std::fprintf(stderr, "… built ahead in %.1f s: %d compiled, %d from the cache, %d failed, %d skipped\n", seconds,
                 count[gate::prebuild_status::built], count[gate::prebuild_status::cached],
                 count[gate::prebuild_status::failed], count[gate::prebuild_status::skipped]);
  return {{"candidates", jobs.size()},
          {"built", count[gate::prebuild_status::built]},
          {"cached", count[gate::prebuild_status::cached]},
          {"failed", count[gate::prebuild_status::failed]},
          {"skipped", count[gate::prebuild_status::skipped]},
          {"parallel", parallel},
          {"seconds", seconds}};
}

}  // namespace lathe::cli
