// After the main series, on both platforms, with the candidate's processes gone: the A/A
// control, the baseline's times with and without the candidate alive, and the decision. The
// slowed-baseline check blames the candidate only after ruling out the machine (PROTOCOL.md "The
// machine is not the kernel"; machine_load.h says what is measured and why).
#include <cmath>
#include <cstdio>

#include "gate/evaluator.h"
#include "gate/machine_load.h"

namespace lathe::gate::detail {

std::vector<pid_t> evaluator::lathe_pids() const {
  std::vector<pid_t> out;
  for (const auto* pool : {&bases_, &copies_})
    for (const auto& p : *pool) out.push_back(p.w.pid());
  return out;
}

void evaluator::meter_baseline(std::vector<timed_worker>& b) {
  std::vector<pid_t> cand;
  for (const auto& p : cands_) cand.push_back(p.w.pid());
  base_meter_.reset();
  base_meter_.set_pids(lathe_pids(), std::move(cand));
  for (auto& tw : b) tw.meter = &base_meter_;
}

std::optional<stop> evaluator::control_and_decide(std::vector<timed_worker>& b,
                                                  std::vector<timed_worker>& b2,
                                                  const paired_series& main) {
  for (auto& tw : b) tw.meter = nullptr;  // the main series is over
  if (!cfg_.aa_control) {
    const decision_result d = decide(main, nullptr, cfg_.policy, decision_floor(t_.plat));
    e_.decision = d.decision;
    e_.epsilon = d.epsilon;
    return std::nullopt;
  }
  auto t0 = clock_type::now();
  timing_policy aa = cfg_.policy;
  aa.max_seconds = std::max(aa.min_seconds, aa.max_seconds / 2);
  const double timeout = cfg_.call_timeout_s + cfg_.policy.block_seconds * 20;
  // The control, its baseline's blocks metered: lathe's processes are the baseline's, the
  // candidate has none left.
  load_meter control_meter;
  auto control = [&]() -> std::optional<stop> {
    control_meter.reset();
    control_meter.set_pids(lathe_pids(), {});
    for (auto& tw : b) tw.meter = &control_meter;
    series_result c = run_paired(b, b2, aa, rng_, timeout);
    for (auto& tw : b) tw.meter = nullptr;
    // The candidate's processes are gone by now: a baseline that dies here (a signal from outside,
    // the machine's limits) is not the candidate's doing. infra_error: the gate tries the whole
    // evaluation once more, and a search does not keep the failure as the candidate's (`crash`
    // cached a SIGHUP'd baseline as a configuration's own outcome in lathe tune, 2026-12-06).
    if (!c.ok) return stop{outcome::infra_error, "the baseline failed in the A/A control, after the candidate's processes had ended",
                           c.failure.detail};
    c.series.a_label = "baseline";
    c.series.b_label = "baseline (second process)";
    e_.aa = c.series;
    return std::nullopt;
  };
  if (auto s = control()) return s;
  stage_done("aa_control", t0);
  // The same baseline processes timed with the candidate's alive (the main series) and after they
  // ended (the control): a candidate that slows its baseline shows here, whatever the means (a
  // thread that burns the CPU, work on the GPU from another context). 25% at least: DRAM-bound
  // baselines drift by 10-15% over a run on the 2-core VM.
  auto judge = [&] {
    const double spread = std::max(std::fabs(e_.aa->ci_high - 1), std::fabs(1 - e_.aa->ci_low));
    const double margin = std::max(0.25, 3 * (std::isfinite(spread) ? spread : 0.0));
    return judge_slowdown(median(main.b_seconds), median(e_.aa->a_seconds), margin, base_meter_.total(),
                          control_meter.total());
  };
  slowdown_judgement j = judge();
  if (j.cause == slowdown_cause::machine || j.cause == slowdown_cause::presumed) {
    // Not the candidate's CPU time: the control once more, in a quieter window (up to 10 s of
    // waiting), before anyone is blamed. A load that came and went between the two series reads
    // as a slowed baseline (853% once on the 2-core VM with a build beside it).
    e_.diagnostics += "load: " + j.message + "; the A/A control again in a quieter window\n";
    progress("A/A control again, in a quieter window (the baseline was slower with the candidate alive)");
    const auto t1 = clock_type::now();
    const load_window quiet = wait_for_quiet(10, lathe_pids());
    if (machine_loaded(quiet)) e_.diagnostics += "load: no quiet window within 10 s: " + describe_load(quiet) + "\n";
    if (auto s = control()) return s;
    stage_done("aa_control_again", t1);
    j = judge();
  }
  switch (j.cause) {
    case slowdown_cause::none: break;
    case slowdown_cause::candidate: return stop{outcome::suspicious_speed, j.message, {}};
    // Once more from the start (gate.cpp evaluate): a kernel that caused it does so again.
    case slowdown_cause::presumed: return stop{outcome::suspicious_speed, j.message, {}, true};
    case slowdown_cause::machine: return stop{outcome::unstable, j.message, {}};
  }
  const decision_result d = decide(main, &*e_.aa, cfg_.policy, decision_floor(t_.plat));
  e_.decision = d.decision;
  e_.epsilon = d.epsilon;
  if (d.decision == decision::undecided) {
    stop s{outcome::unstable,
           "the machine is too noisy to decide: A/A interval [" + std::to_string(e_.aa->ci_low) +
               ", " + std::to_string(e_.aa->ci_high) + "] against the candidate's [" +
               std::to_string(main.ci_low) + ", " + std::to_string(main.ci_high) + "]",
           {}};
    // Two pairs 4% apart made an A/A interval of [0.75, 1.35] on a quiet 2-core VM (a ModelNew
    // against eager, --quick: 1 in 3 runs unstable): more pairs, not a noisier machine, decide.
    s.more_pairs = pairs_differ(main) || pairs_differ(*e_.aa);
    return s;
  }
  return std::nullopt;
}

}  // namespace lathe::gate::detail
