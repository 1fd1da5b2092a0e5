// What the CPU's and the CUDA's decision timing share (time_cpu.cpp, time_cuda.cpp): the timing
// shape's layout, the processes of both sides started in a rotating order, calibration, how a
// failed series or a kernel below the roofline floor ends the stage, the checks of the
// candidate's processes after a series, and the stage's end (the A/A control and the decision).
#include <algorithm>

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

std::optional<stop> evaluator::start_timing_sides(const proc_starter& start) {
  for (uint32_t j = 0; j < timing_processes_; ++j)
    for (uint32_t k = 0; k < 3; ++k) {
      const uint32_t side = (j + k) % 3;
      if (side == 0) {
        if (auto s = start(cand_, "kernel", cands_)) return s;
      } else if (auto s = start(base_, "baseline", side == 1 ? bases_ : copies_)) {
        if (s->o == outcome::infra_error || s->o == outcome::resource_limit) return s;
        return stop{outcome::crash, "the baseline failed to start (a task problem)", s->message};
      }
    }
  return std::nullopt;
}

std::optional<stop> evaluator::calibrate_sides(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                                               std::vector<timed_worker>& b2, double timeout,
                                               const std::function<std::optional<stop>()>& pool_failure) {
  auto left = [&]() -> std::optional<stop> { return pool_failure ? pool_failure() : std::nullopt; };
  worker_result cal_fail;
  auto na = calibrate(a.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (auto f = left()) return f;
  if (!na) return from_worker(cal_fail, "timing");
  auto nb = calibrate(b.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (auto f = left()) return f;
  if (!nb) return stop{outcome::crash, "the baseline failed while timed", cal_fail.detail};
  for (auto& tw : a) tw.calls = *na, tw.per_call = a.front().per_call;
  for (auto& tw : b) tw.calls = *nb, tw.per_call = b.front().per_call;
  for (auto& tw : b2) tw.calls = *nb, tw.per_call = b.front().per_call;
  timing_eta(static_cast<double>(*na) * a.front().per_call, static_cast<double>(*nb) * b.front().per_call,
             std::min(a.size(), b.size()));
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
