// What the CPU's and the CUDA's decision timing share (time_cpu.cpp, time_cuda.cpp): the timing
// shape's layout, the processes of both sides started in a rotating order, calibration, how a
// failed series or a kernel below the roofline floor ends the stage, the checks of the
// candidate's processes after a series, and the stage's end (the A/A control and the decision).
#include <algorithm>
#include <atomic>
#include <thread>

#include "gate/evaluator.h"
#include "gate/machine_load.h"
#include "spec/task_file.h"

namespace lathe::gate::detail {

tl::expected<slot_layout, stop> evaluator::timing_layout() {
  progress("time");
  const shape_set& ts = timing_shape(t_);
  e_.timing_shape = ts.name;
  auto lay = make_layout(t_, ts);
  if (!lay) return tl::unexpected(stop{outcome::resource_limit, lay.error().message, {}});
  return std::move(*lay);
}

std::optional<stop> evaluator::start_timing_sides(const proc_starter& start, bool concurrent) {
  struct job {
    uint32_t side;
    int candidate;  // its place among the candidate's processes, -1 for a baseline's
    std::vector<timing_proc> started;
    std::optional<stop> s;
  };
  std::vector<job> jobs;
  int candidates = 0;
  for (uint32_t j = 0; j < timing_processes_; ++j)
    for (uint32_t k = 0; k < 3; ++k) {
      const uint32_t side = (j + k) % 3;
      jobs.push_back(job{side, side == 0 ? candidates++ : -1, {}, std::nullopt});
    }
  auto pool_of = [&](uint32_t side) -> std::vector<timing_proc>& {
    return side == 0 ? cands_ : side == 1 ? bases_ : copies_;
  };
  auto run = [&](job& jb, std::vector<timing_proc>& into) {
    jb.s = jb.side == 0 ? start(cand_, "kernel", jb.candidate, into) : start(base_, "baseline", -1, into);
  };
  if (concurrent) {
    std::atomic<size_t> next{0};
    auto serve = [&] {
      for (size_t i; (i = next.fetch_add(1)) < jobs.size();) run(jobs[i], jobs[i].started);
    };
    const size_t n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, jobs.size());
    std::vector<std::thread> threads;
    for (size_t t = 1; t < n; ++t) threads.emplace_back(serve);
    serve();
    for (auto& t : threads) t.join();
  }
  for (auto& jb : jobs) {
    if (!concurrent) run(jb, pool_of(jb.side));
    for (auto& p : jb.started) pool_of(jb.side).push_back(std::move(p));
    if (!jb.s) continue;
    if (jb.side == 0 || jb.s->o == outcome::infra_error || jb.s->o == outcome::resource_limit) return jb.s;
    return stop{outcome::infra_error, "the baseline failed to start (a task problem)", jb.s->message};
  }
  return std::nullopt;
}

// Every process of every side settled (timing.h settle: the A/A control's copies too, in the
// rotating order they were started in), then each side's calls per block from the median of its
// processes' settled times. Calibrating a side on its first process alone, fresh, set the
// Python path's blocks from its cold calls (bench/results/python-timing-2026-12-06.md).
std::optional<stop> evaluator::calibrate_sides(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                                               std::vector<timed_worker>& b2, double timeout,
                                               const std::function<std::optional<stop>()>& pool_failure) {
  std::vector<double> per_a, per_b;
  const size_t n = std::max({a.size(), b.size(), b2.size()});
  for (size_t j = 0; j < n; ++j)
    for (size_t k = 0; k < 3; ++k) {
      const size_t side = (j + k) % 3;
      std::vector<timed_worker>& tws = side == 0 ? a : side == 1 ? b : b2;
      if (j >= tws.size()) continue;
      worker_result failed;
      auto per = settle(tws[j], cfg_.policy.block_seconds, cfg_.policy.settle_seconds, timeout, failed);
      if (pool_failure)
        if (auto f = pool_failure()) return f;
      if (!per) return side == 0 ? from_worker(failed, "timing")
                                 : stop{outcome::crash, "the baseline failed while timed", failed.detail};
      if (side != 2) (side == 0 ? per_a : per_b).push_back(*per);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double pa = median(per_a), pb = median(per_b);
  auto calls = [&](const timed_worker& tw, double per) {
    return block_calls(per, cfg_.policy.block_seconds, tw.rotate, tw.max_calls ? tw.max_calls : uint64_t{1} << 24);
  };
  const uint64_t na = calls(a.front(), pa), nb = calls(b.front(), pb);
  for (auto& tw : a) tw.calls = na, tw.per_call = pa;
  for (auto* side : {&b, &b2})
    for (auto& tw : *side) tw.calls = nb, tw.per_call = pb;
  timing_eta(static_cast<double>(na) * pa, static_cast<double>(nb) * pb, na, nb, std::min(a.size(), b.size()));
  return std::nullopt;
}

std::optional<stop> evaluator::series_stop(const series_result& r, bool recheck) {
  if (r.ok) return std::nullopt;
  if (recheck) return from_worker(r.failure, "re-timing");
  return r.failed_a ? from_worker(r.failure, "timing")
                    : stop{outcome::crash, "the baseline failed while timed", r.failure.detail};
}

std::optional<stop> evaluator::check_timed_candidates(bool refreeze) {
  for (auto& p : cands_) {
    if (auto s = mappings_check(p.w, "while timed")) return s;
    p.w.thaw();  // the idle check measures a running worker
    if (auto s = idle_check(p.w, "after timing")) return s;
    if (refreeze) p.w.freeze_between_requests();
  }
  return std::nullopt;
}

std::optional<stop> evaluator::floor_stop(const floor_judgement& j) {
  if (j.verdict == floor_verdict::suspicious) return stop{outcome::suspicious_speed, j.message, {}};
  if (j.verdict == floor_verdict::machine) return stop{outcome::unstable, j.message, {}};
  return std::nullopt;
}

std::optional<stop> evaluator::end_timing(std::vector<timed_worker>& b, std::vector<timed_worker>& b2,
                                          clock_type::time_point since) {
  stage_done("time", since);
  const paired_series measured = *e_.paired;
  cands_.clear();  // the candidate's processes end: none of its work runs during the control
  return control_and_decide(b, b2, measured);
}

}  // namespace lathe::gate::detail
