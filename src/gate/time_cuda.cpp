// The CUDA's decision timing (docs/gate.md "Timing"; fresh_windows.h says what every timed call
// reads and why). The stage, in order:
//   1. the window layout of the timing shape's slots; a problem file's draws made on the host;
//   2. three processes per pair as before (candidate, baseline, baseline's copy for the A/A
//      control), created in an order that rotates, their outputs poisoned, frozen between requests;
//   3. the paired series, each block preceded by a refill of its worker's slots from new seeds
//      (every process alike), each call of a block on a window of its own;
//   4. a sample of the candidate's last blocks' outputs checked against the references of the
//      windows their calls read; its mappings and its idle threads looked at;
//   5. below the roofline floor: the series again (on inputs as fresh as before), checked again;
//   6. the candidate's processes end, then the A/A control and the decision (gate.cpp).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "gate/device_lock.h"
#include "gate/evaluator.h"
#include "gate/fresh_windows.h"
#include "spec/task_file.h"

namespace lathe::gate::detail {
namespace {

// Outputs checked after a series, over all candidate processes: as many references as the host
// trials' four timing slots had (device trials had one per slot and pair, up to 64, before).
constexpr size_t sampled_slots = 4;

// What a process's slots hold: the first seed of its last refill (slot k from seed + k).
struct drawn {
  uint64_t seed = 0;
};

}  // namespace

std::optional<stop> evaluator::start_timing_proc(const build_output& obj, const wire::command& setup,
                                                 uint64_t region_bytes, const std::string& who,
                                                 const std::vector<std::vector<uint8_t>>& staged,
                                                 std::vector<timing_proc>& pool) {
  const bool candidate = &pool == &cands_;
  timing_proc p;
  // The tensors live on the device; the region is a staging copy of the slots (a problem's
  // draws, the slots downloaded for a check).
  auto region = shared_region::create(region_bytes);
  if (!region) return stop{outcome::resource_limit, region.error().message, {}};
  p.region = std::move(*region);
  std::optional<stop> failed;
  auto w = start_worker(obj, p.region, failed, who, dev_trials_ && candidate);
  if (!w) return stop{outcome::infra_error, "a timing worker (" + who + ") could not start: " + w.error().message, {}};
  p.w = std::move(*w);
  if (failed) return failed;
  worker_result r = p.w.setup(setup, cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "timing setup of the " + who);
  if (!staged.empty()) {
    for (size_t k = 0; k < staged.size(); ++k)
      std::memcpy(p.region.data() + k * setup.slot_stride, staged[k].data(), staged[k].size());
    if (auto s = upload(p.w, 0, setup.num_slots)) return s;
  } else {
    r = p.w.request(poison_command(0, setup.num_slots), cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "poisoning outputs on the device");
  }
  if (candidate && dev_trials_)
    if (auto s = share_with_oracle(p.w, static_cast<uint32_t>(2 + cands_.size()))) return s;
  p.w.freeze_between_requests();  // none of its threads runs while another worker is timed
  pool.push_back(std::move(p));
  return std::nullopt;
}

std::optional<stop> evaluator::time_all_cuda() {
  auto t0 = clock_type::now();
  progress("time");
  const shape_set& ts = timing_shape(t_);
  e_.timing_shape = ts.name;
  auto lay = make_layout(t_, ts);
  if (!lay) return stop{outcome::resource_limit, lay.error().message, {}};
  const slot_layout& l = *lay;
  const uint32_t S = timing_slots_;
  const uint32_t processes = timing_processes_;
  e_.policy.processes = processes;
  const window_layout win = make_windows(l, S);
  const wire::command setup = window_setup(t_, l, win);
  const uint64_t region_bytes = uint64_t{S} * win.slot_bytes;

  // Lathe's inputs are drawn again on the device before every block; a problem's come from its
  // Python worker: drawn once here, the same in every process, staged into each.
  const bool redraw = ref_.problem() == nullptr;
  std::vector<trial_data> draws;
  std::vector<std::vector<uint8_t>> staged;
  if (!redraw)
    for (uint32_t k = 0; k < S; ++k) {
      auto d = make_inputs(t_, l, ref_, trial_for(t_, seed_base_ + 7'000'000 + 100ull * k, 0));
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      staged.emplace_back(win.slot_bytes, 0);
      stage_window_slot(t_, l, win, d->inputs, staged.back().data());
      draws.push_back(std::move(*d));
    }

  // Several fresh processes per side, each with its own memory, created in an order that rotates
  // with the pair (memory mapped earlier ran up to 15% slower; docs/gate.md). The worker that ran
  // the checks is not timed: it is not created like the baseline's.
  link_.reset();  // closed in the problem's worker before the buffer's owner ends
  cand_worker_ = worker{};
  for (uint32_t j = 0; j < processes; ++j)
    for (uint32_t k = 0; k < 3; ++k) {
      const uint32_t side = (j + k) % 3;
      if (side == 0) {
        if (auto s = start_timing_proc(cand_, setup, region_bytes, "kernel", staged, cands_)) return s;
      } else if (auto s = start_timing_proc(base_, setup, region_bytes, "baseline", staged,
                                            side == 1 ? bases_ : copies_)) {
        if (s->o == outcome::infra_error || s->o == outcome::resource_limit) return s;
        return stop{outcome::crash, "the baseline failed to start (a task problem)", s->message};
      }
    }
  // Host trials check the device's draws against the host's (device trials did, through the
  // oracle, before the checks): on the baseline's process, which runs trusted code only.
  if (redraw && !dev_trials_) {
    timing_proc& p = bases_.front();
    const trial_spec probe = trial_for(t_, seed_base_ + 8'000'000, 0);
    worker_result r = p.w.request(refill_command(1, probe.seed), cfg_.call_timeout_s);
    if (!r.ok()) return stop{outcome::crash, "the baseline failed while its inputs were drawn", r.detail};
    if (auto s = download(p.w, 0, 1)) return s;
    auto d = make_inputs(t_, l, ref_, probe);
    if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
    if (!window_inputs_intact(l, win, d->inputs, p.region.data()))
      return stop{outcome::crash, "lathe: the inputs drawn on the device differ from the host's (the shared generator disagrees)", {}};
  }

  // GPU timings hold the GPU and keep CPU timings (whose load would jitter the launches) away.
  auto lock = device_lock::acquire("cpu", device_lock::mode::shared);
  if (!lock) return stop{outcome::unstable, lock.error().message, {}};
  auto gpu_lock = device_lock::acquire("cuda0", device_lock::mode::exclusive);
  if (!gpu_lock) return stop{outcome::unstable, gpu_lock.error().message, {}};
  const double timeout = cfg_.call_timeout_s + cfg_.policy.block_seconds * 20;
  std::vector<drawn> state(cands_.size() + bases_.size() + copies_.size());
  uint64_t next_seed = seed_base_ + (uint64_t{1} << 40);  // apart from every check's seeds
  size_t next_state = 0;
  auto timed = [&](timing_proc& p, const char* label) {
    timed_worker tw;
    tw.w = &p.w;
    tw.label = label;
    tw.rotate = S;
    tw.cuda = true;
    tw.max_calls = distinct_calls(win);
    drawn* st = &state[next_state++];
    if (redraw) {
      tw.refill = [this, st, &next_seed, w = &p.w, S] {
        st->seed = next_seed;
        next_seed += 64;  // S <= 64 seeds a refill
        return w->request(refill_command(S, st->seed), cfg_.call_timeout_s);
      };
    } else {
      tw.advance_windows = true;
    }
    return tw;
  };
  std::vector<timed_worker> A, B, B2;
  for (auto& p : cands_) A.push_back(timed(p, "candidate"));  // state[j]: candidate j
  for (auto& p : bases_) B.push_back(timed(p, "baseline"));
  for (auto& p : copies_) B2.push_back(timed(p, "baseline"));
  worker_result cal_fail;
  auto na = calibrate(A.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (!na) return from_worker(cal_fail, "timing");
  auto nb = calibrate(B.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (!nb) return stop{outcome::crash, "the baseline failed while timed", cal_fail.detail};
  // Short kernels replay their blocks from a graph, each side by its own calibrated time (a long
  // kernel's launches cost nothing next to it, and what it enqueues outside its stream stays in
  // its blocks, where the cross-check sees it). Calibration takes the faster of two blocks: on
  // the H200 one A/A run of 10 read 2.29 when a hiccup during one side's calibration sent it to
  // launch timing while the other replayed graphs.
  const bool graph_a = A.front().per_call < graph_below_seconds;
  const bool graph_b = B.front().per_call < graph_below_seconds;
  for (auto& tw : A) tw.calls = *na, tw.per_call = A.front().per_call, tw.graph = graph_a;
  for (auto& tw : B) tw.calls = *nb, tw.per_call = B.front().per_call, tw.graph = graph_b;
  for (auto& tw : B2) tw.calls = *nb, tw.per_call = B.front().per_call, tw.graph = graph_b;
  timing_eta(static_cast<double>(*na) * A.front().per_call, static_cast<double>(*nb) * B.front().per_call,
             std::min(A.size(), B.size()));
  if (!redraw && (graph_a || graph_b))
    e_.diagnostics += "timed calls replayed from a CUDA graph read the same windows block after block: "
                      "a problem's inputs cannot be drawn again on the device\n";

  // Poisoned right before the series: a kernel that stops writing once it is being timed leaves
  // its outputs unwritten (one that writes stale results fails on the references).
  auto poison_all = [&]() -> std::optional<stop> {
    for (auto& p : cands_) {
      worker_result r = p.w.request(poison_command(0, S), cfg_.call_timeout_s);
      if (!r.ok()) return from_worker(r, "poisoning outputs on the device");
    }
    return std::nullopt;
  };
  // A sample of the outputs of every candidate process's last block, each against the reference
  // of the window its last call on that slot read, computed now.
  auto verify = [&](const std::string& when) -> std::optional<stop> {
    const std::string where = ", a timed call of the last block" + when;
    if (dev_trials_) {
      wire::command one = setup;
      one.num_slots = 1;
      if (worker_result r = oracle_->setup(one); !r.ok()) return oracle_failed(r, "timing setup");
    }
    const size_t per = (sampled_slots + cands_.size() - 1) / cands_.size();
    for (size_t j = 0; j < cands_.size(); ++j) {
      timing_proc& p = cands_[j];
      const timed_worker& tw = A[j];
      std::vector<uint32_t> written;
      for (uint32_t k = 0; k < S; ++k)
        if (last_call_on(k, S, tw.last_calls)) written.push_back(k);
      std::shuffle(written.begin(), written.end(), rng_);
      written.resize(std::min(written.size(), per));
      for (uint32_t k : written) {
        const uint32_t window = window_of(*last_call_on(k, S, tw.last_calls), S, tw.last_window);
        const trial_spec spec = redraw ? trial_for(t_, state[j].seed + k, 0) : draws[k].spec;
        if (dev_trials_) {
          worker_result r = oracle_->prepare(0, spec, window);
          if (!r.ok()) return oracle_failed(r, "a timed call's reference");
          if (ipc_) {
            r = oracle_->compare(0, static_cast<uint32_t>(2 + j), k, window);
          } else {
            if (auto s = download(p.w, k, 1)) return s;
            r = oracle_->stage(p.region.data() + k * win.slot_bytes, win.slot_bytes);
            if (!r.ok()) return oracle_failed(r, "staging a kernel's slot");
            r = oracle_->compare(0, 0, 0, window);
          }
          if (!r.ok()) return oracle_failed(r, "comparing");
          if (auto s = apply_verdict(l, judge(t_, l, r.reply, spec.seed), spec.seed, where, nullptr)) return s;
          continue;
        }
        trial_data d;
        if (redraw) {
          auto got = make_inputs(t_, l, ref_, spec);
          if (!got) return stop{outcome::crash, "lathe: " + got.error().message, {}};
          d = std::move(*got);
        } else {
          d = draws[k];
        }
        if (auto s = download(p.w, k, 1)) return s;
        const uint8_t* slot = p.region.data() + k * win.slot_bytes;
        if (!window_inputs_intact(l, win, d.inputs, slot))
          return stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
        d.inputs = window_inputs(l, win, d.inputs, window);
        if (auto r = compute_reference(t_, l, ref_, d); !r)
          return stop{outcome::crash, "lathe: the reference of a timed call: " + r.error().message, {}};
        const std::vector<uint8_t> as_checked = standard_slot(l, win, slot, window);
        if (auto s = check_slot_outputs(l, d, as_checked.data(), where)) return s;
      }
    }
    for (auto& p : cands_) {
      if (auto s = mappings_check(p.w, "while timed")) return s;
      p.w.thaw();  // the idle check measures a running worker
      if (auto s = idle_check(p.w, "after timing")) return s;
      p.w.freeze_between_requests();
    }
    return std::nullopt;
  };
  auto outside = [](const series_result& r) -> std::optional<stop> {
    if (r.outside_stream.empty()) return std::nullopt;
    return stop{outcome::suspicious_speed, "work outside the timed stream: " + r.outside_stream, {}};
  };
  if (auto s = poison_all()) return s;
  meter_baseline(B);
  series_result main = run_paired(A, B, cfg_.policy, rng_, timeout);
  if (!main.ok)
    return main.failed_a ? from_worker(main.failure, "timing")
                         : stop{outcome::crash, "the baseline failed while timed", main.failure.detail};
  if (auto s = verify("")) return s;
  if (auto s = outside(main)) return s;
  record(main.series);

  // Roofline floor for the level of memory that holds the working set. Below it the result is
  // not trusted: timed once more (every block on inputs drawn again), checked again, and refused
  // if it stays below.
  const double floor = roofline_floor(l, l.slot_bytes * S);
  if (floor > 0 && *e_.median_seconds > 0) {
    if (*e_.median_seconds < floor * cfg_.policy.roofline_slack) {
      progress("re-check (below the roofline floor)");
      if (auto s = poison_all()) return s;
      base_meter_.reset();  // the slowed-baseline check weighs the series it compares
      series_result again = run_paired(A, B, cfg_.policy, rng_, timeout);
      if (!again.ok) return from_worker(again.failure, "re-timing");
      if (auto s = verify(", in the re-check")) return s;
      if (auto s = outside(again)) return s;
      record(again.series);
    }
    e_.roofline_fraction = floor / *e_.median_seconds;
    // The GPU's ceilings come from the probe (lathe-probe-cuda, cached and ratcheted up at
    // context open) and cannot be measured again in this process: the rule weighs the host's
    // load over the re-check's baseline blocks (machine_load.h judge_floor), as on the CPU.
    const floor_judgement j = judge_floor(*e_.median_seconds, floor, 0, cfg_.policy.roofline_slack,
                                          base_meter_.total());
    if (j.verdict == floor_verdict::suspicious) return stop{outcome::suspicious_speed, j.message, {}};
    if (j.verdict == floor_verdict::machine) return stop{outcome::unstable, j.message, {}};
  }
  stage_done("time", t0);
  const paired_series measured = *e_.paired;
  cands_.clear();  // the candidate's processes end: none of its work runs during the control
  return control_and_decide(B, B2, measured);
}

}  // namespace lathe::gate::detail
