// The gate's bench modes (`--mode kernelbench|do_bench`): numbers next to those harnesses'
// protocols, no baseline and no decision. Split from gate.cpp.
#include "gate/gate.h"
#include "gate/evaluator.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <random>

#include "core/hash.h"
#include "core/text.h"
#include "core/target.h"
#include "gate/check.h"
#include "gate/device_lock.h"
#include "gate/device_trial.h"
#include "gate/fresh_windows.h"
#include "gate/host_target.h"
#include "gate/nvml.h"
#include "gate/paired.h"
#include "spec/problem.h"
#include "gate/python_build.h"
#include "gate/python_kernel.h"
#include "gate/problem_ipc.h"
#include "gate/reference.h"
#include "gate/screen.h"
#include "spec/task_file.h"
#include "gate/timing.h"
#include "gate/trial.h"

namespace fs = std::filesystem;

namespace lathe::gate::detail {

static wire::bench_stats bench_stats_of(std::vector<double> t) {
  wire::bench_stats b;
  if (t.empty()) return b;
  b.trials = static_cast<uint32_t>(t.size());
  double sum = 0;
  for (double x : t) sum += x;
  b.mean_s = sum / static_cast<double>(t.size());
  double var = 0;
  for (double x : t) var += (x - b.mean_s) * (x - b.mean_s);
  b.std_s = std::sqrt(var / static_cast<double>(t.size()));
  std::sort(t.begin(), t.end());
  b.min_s = t.front();
  b.max_s = t.back();
  auto at = [&](double q) { return t[std::min(t.size() - 1, static_cast<size_t>(q * static_cast<double>(t.size())))]; };
  b.median_s = at(0.5);
  b.p20_s = at(0.2);
  b.p80_s = at(0.8);
  return b;
}

// CPU comparability: the CPU worker keeps no clock, so lathe's clock times each request. A
// trial is one request of k calls (k sized so that a request lasts about a millisecond, at least
// 1) and its time per call is the request's over k: the pipe round trip (tens of microseconds
// here) is spread over the block instead of added to each call. Comparable in method to the
// harness's per-call events, not to the microsecond (docs/problems.md).
std::optional<stop> evaluator::bench_host(const wire::command& c, worker_result& out) {
  const auto t0 = clock_type::now();
  worker_result est = cand_worker_.run(0, 1, 1, cfg_.call_timeout_s);
  if (!est.ok()) return from_worker(est, "comparability timing");
  const double one = std::max(est.seconds, 1e-7);
  const uint64_t k = std::clamp<uint64_t>(static_cast<uint64_t>(1e-3 / one), 1, 1000);
  uint32_t warm = c.warmup, trials = c.trials;
  if (c.protocol == wire::bench_protocol::do_bench) {
    warm = static_cast<uint32_t>(std::max(1.0, c.warmup_ms * 1e-3 / one));
    trials = static_cast<uint32_t>(std::min(100000.0, std::max(1.0, c.rep_ms * 1e-3 / (one * k))));
  }
  if (warm > 0) {
    worker_result w = cand_worker_.run(0, 1, warm, cfg_.call_timeout_s * warm);
    if (!w.ok()) return from_worker(w, "comparability warm-up");
  }
  std::vector<double> times;
  for (uint32_t i = 0; i < trials; ++i) {
    worker_result w = cand_worker_.run(0, 1, k, cfg_.call_timeout_s * static_cast<double>(k));
    if (!w.ok()) return from_worker(w, "comparability timing");
    times.push_back(w.seconds / static_cast<double>(k));
  }
  out.reply.bench = bench_stats_of(std::move(times));
  out.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  return std::nullopt;
}

// Comparability mode: the other harness's timing on the worker that ran the checks (as they
// time in the process that checked), then the outputs checked once more.
std::optional<stop> evaluator::bench() {
  auto t0 = clock_type::now();
  progress(cfg_.mode == timing_mode::kernelbench ? "time (KernelBench cuda_event protocol)"
                                                 : "time (do_bench protocol)");
  const shape_set& ts = timing_shape(t_);
  e_.timing_shape = ts.name;
  auto l = make_layout(t_, ts);
  if (!l) return stop{outcome::resource_limit, l.error().message, {}};
  wire::command c;
  c.kind = wire::op::bench;
  c.protocol = cfg_.mode == timing_mode::kernelbench ? wire::bench_protocol::kernelbench
                                                      : wire::bench_protocol::do_bench;
  c.warmup = cfg_.bench_warmup;
  c.trials = cfg_.bench_trials;
  worker_result r;
  if (cuda_) {
    r = cand_worker_.request(c, cfg_.call_timeout_s * 10);
    if (!r.ok()) return from_worker(r, "comparability timing");
  } else if (auto s = bench_host(c, r)) {
    return s;
  }
  const wire::bench_stats& b = r.reply.bench;
  comparability_result cr;
  cr.protocol = cfg_.mode == timing_mode::kernelbench ? "kernelbench" : "do_bench";
  cr.warmup = c.warmup;
  cr.trials = b.trials;
  cr.mean_seconds = b.mean_s;
  cr.std_seconds = b.std_s;
  cr.min_seconds = b.min_s;
  cr.max_seconds = b.max_s;
  cr.median_seconds = b.median_s;
  cr.p20_seconds = b.p20_s;
  cr.p80_seconds = b.p80_s;
  cr.host_seconds = r.seconds;
  if (problem_oracle* o = ref_.problem()) {
    // The eager problem, timed live on the same device by the same protocol in its own process
    // (KernelBench's reference timing); a failure there is the problem's, not the candidate's.
    progress("time the eager PyTorch problem");
    std::lock_guard<std::mutex> g(o->lock());
    auto er = o->request({{"op", "time"}, {"seed", last_seed_}, {"protocol", cr.protocol},
                          {"warmup", c.warmup}, {"trials", c.trials},
                          {"warmup_ms", c.warmup_ms}, {"rep_ms", c.rep_ms}});
    if (!er) {
      e_.diagnostics += "eager PyTorch timing failed: " + er.error().message + "\n";
    } else {
      std::vector<double> s;
      for (const auto& x : er->value("seconds", nlohmann::json::array())) s.push_back(x.get<double>());
      if (!s.empty()) {
        double sum = 0;
        for (double x : s) sum += x;
        cr.eager_mean_seconds = sum / static_cast<double>(s.size());
        std::sort(s.begin(), s.end());
        cr.eager_median_seconds = s[s.size() / 2];
        if (cr.mean_seconds > 0) cr.speedup_vs_eager = *cr.eager_mean_seconds / cr.mean_seconds;
      }
    }
  }
  e_.comparability = cr;
  e_.median_seconds = b.median_s;
  stage_done("time", t0);
  // The worker's events cannot claim more time than passed on lathe's clock.
  if (b.mean_s * b.trials > r.seconds * 1.01 + 1e-4)
    return stop{outcome::suspicious_speed, "the worker's event times exceed lathe's clock", {}};
  // The outputs of the last timed call, against the last check's reference.
  auto t1 = clock_type::now();
  if (dev_trials_) {
    if (auto s = device_verify(cand_worker_, region_, 1, *l, 0, 0, last_seed_, ", after the timing loop",
                               nullptr))
      return s;
  } else if (link_) {
    auto c = link_.compare(t_, *l, 0);
    if (c) {
      if (auto s = apply_verdict(*l, judge(t_, *l, *c, last_spec_.seed), last_spec_.seed,
                                 ", after the timing loop", nullptr))
        return s;
    } else {
      drop_link("comparing after the timing loop: " + c.error().message);
      auto d = make_trial(t_, *l, ref_, last_spec_);
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      if (auto s = download(cand_worker_, 0, 1)) return s;
      if (auto s = check_slot_outputs(*l, *d, region_.data(), ", after the timing loop")) return s;
    }
  } else if (last_host_trial_) {
    if (auto s = download(cand_worker_, 0, 1)) return s;
    if (auto s = check_slot_outputs(*l, *last_host_trial_, region_.data(), ", after the timing loop"))
      return s;
  }
  stage_done("verify", t1);
  const double floor = roofline_floor(*l, l->slot_bytes);
  if (floor > 0 && b.median_s > 0) e_.roofline_fraction = floor / b.median_s;
  return std::nullopt;
}

}  // namespace lathe::gate::detail
