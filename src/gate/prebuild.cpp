#include "gate/prebuild.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "core/target.h"
#include "gate/build.h"
#include "gate/device_lock.h"
#include "gate/screen.h"

namespace lathe::gate {

const char* to_string(prebuild_status s) {
  switch (s) {
    case prebuild_status::built: return "built";
    case prebuild_status::cached: return "cached";
    case prebuild_status::failed: return "failed";
    case prebuild_status::skipped: return "skipped";
  }
  return "skipped";
}

namespace {

// What the gate's run() checks before it builds, in the same order: the screen (a torch fallback
// only counts when it is refused), the kernel's platform against the task's, the host's ISA.
std::string reason_not_to_build(const gate_config& cfg, const task& t, const kernel_bundle& k, const std::string& isa) {
  for (const auto& f : screen_sources(k, t, screen_role::candidate))
    if (f.what != "torch fallback" || cfg.refuse_torch_fallback) return "refused by the screen: " + f.what;
  const bool cuda = k.manifest.lang == language::cuda;
  if (cuda != (t.plat == platform::cuda)) return "not a kernel for this task's platform";
  if (cuda) return cfg.tools.nvcc.empty() ? "no nvcc on this machine" : std::string();
  if (x86_level(isa) < 0 || x86_level(isa) > x86_level(cfg.tgt.arch)) return "needs " + isa + ", this host is " + cfg.tgt.arch;
  return {};
}

prebuild_outcome build_one(const prebuild_job& j) {
  const auto t0 = std::chrono::steady_clock::now();
  prebuild_outcome out;
  out.task = j.t->name;
  out.kernel = j.candidate.name;
  const std::string isa = resolved_isa(j.candidate, j.cfg->tgt);
  out.why = reason_not_to_build(*j.cfg, *j.t, j.candidate, isa);
  if (!out.why.empty()) return out;
  // Shared, as the gate's own compile stage: builds overlap each other, never a timed series.
  auto lock = device_lock::acquire("cpu", device_lock::mode::shared);
  if (!lock) {
    out.why = lock.error().message;
    return out;
  }
  auto b = build(j.candidate, isa, j.cfg->tools, j.cfg->cache_dir, build_kind::kernel, j.t->problem_model);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!b) {
    out.status = prebuild_status::failed;
    out.why = b.error().message;
    return out;
  }
  out.ok = b->ok;
  out.status = b->cached ? prebuild_status::cached : b->ok ? prebuild_status::built : prebuild_status::failed;
  if (!b->ok)
    out.why = b->refused.empty() ? "does not compile (its evaluation carries the compiler's log)"
                                 : "refused at its build: " + b->refused;
  return out;
}

}  // namespace

std::vector<prebuild_outcome> prebuild(const std::vector<prebuild_job>& jobs, size_t parallel,
                                       const std::function<void(const prebuild_outcome&)>& done) {
  if (parallel == 0) parallel = std::max(1u, std::thread::hardware_concurrency());
  std::vector<prebuild_outcome> out(jobs.size());
  std::vector<std::future<prebuild_outcome>> running;
  std::vector<size_t> index;
  size_t next = 0;
  // A window of `parallel` builds: the oldest is waited for, then the next one starts.
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < parallel) {
      running.push_back(std::async(std::launch::async, build_one, std::cref(jobs[next])));
      index.push_back(next++);
    }
    out[index.front()] = running.front().get();
    if (done) done(out[index.front()]);
    running.erase(running.begin());
    index.erase(index.begin());
  }
  return out;
}

}  // namespace lathe::gate
