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

}  // namespace

// The window layout of the timing shape's slots and what every timing process's slots hold:
// lathe's inputs are drawn again on the device before every block (a process's slot k from its
// last refill's first seed + k); a problem's come from its Python worker: drawn once here, the
// same in every process, staged into each.
struct window_draws {
  window_draws(const task& t, const slot_layout& lay, uint32_t slots, bool redraw)
      : l(lay), S(slots), win(make_windows(l, S)), setup(window_setup(t, l, win)),
        region_bytes(uint64_t{S} * win.slot_bytes), redraw(redraw) {}
  window_draws(const window_draws&) = delete;  // its workers' refills point into it
  std::optional<stop> draw_once(const task& t, const reference& ref, uint64_t seed_base) {
    for (uint32_t k = 0; k < S; ++k) {
      auto d = make_inputs(t, l, ref, trial_for(t, seed_base + 7'000'000 + 100ull * k, 0));
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      staged.emplace_back(win.slot_bytes, 0);
      stage_window_slot(t, l, win, d->inputs, staged.back().data());
      draws.push_back(std::move(*d));
    }
    return std::nullopt;
  }
  // The timed worker of process `p`, the next in `seeds` (whose size is fixed before the first).
  timed_worker timed(timing_proc& p, const char* label, double call_timeout) {
    timed_worker tw;
    tw.w = &p.w;
    tw.label = label;
    tw.rotate = S;
    tw.cuda = true;
    tw.max_calls = distinct_calls(win);
    uint64_t* seed = &seeds[next_process++];
    if (redraw) {
      tw.refill = [this, seed, w = &p.w, call_timeout] {
        *seed = next_seed;
        next_seed += 64;  // S <= 64 seeds a refill
        return w->request(refill_command(S, *seed), call_timeout);
      };
    } else {
      tw.advance_windows = true;
    }
    return tw;
  }

  const slot_layout l;
  const uint32_t S;
  const window_layout win;
  const wire::command setup;
  const uint64_t region_bytes;
  const bool redraw;
  std::vector<trial_data> draws;            // a problem's, per slot
  std::vector<std::vector<uint8_t>> staged;  // the same, as staged into a slot
  std::vector<uint64_t> seeds;               // per timed process (candidates first): its last refill's
  uint64_t next_seed = 0;
  size_t next_process = 0;
};

std::optional<stop> evaluator::start_timing_proc(const build_output& obj, const wire::command& setup,
                                                 uint64_t region_bytes, const std::string& who, int candidate,
                                                 const std::vector<std::vector<uint8_t>>& staged,
                                                 std::vector<timing_proc>& pool) {
  timing_proc p;
  // The tensors live on the device; the region is a staging copy of the slots (a problem's
  // draws, the slots downloaded for a check).
  auto region = shared_region::create(region_bytes);
  if (!region) return stop{outcome::resource_limit, region.error().message, {}};
  p.region = std::move(*region);
  std::optional<stop> failed;
  auto w = start_worker(obj, p.region, failed, who, dev_trials_ && candidate >= 0);
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
  if (candidate >= 0 && dev_trials_) {
    // One request at a time to the oracle; share_with_oracle writes ipc_ and the diagnostics.
    std::lock_guard<std::mutex> held(start_mu_);
    if (auto s = share_with_oracle(p.w, static_cast<uint32_t>(2 + candidate))) return s;
  }
  p.w.freeze_between_requests();  // none of its threads runs while another worker is timed
  pool.push_back(std::move(p));
  return std::nullopt;
}

// Host trials check the device's draws against the host's (device trials did, through the
// oracle, before the checks): on the baseline's process, which runs trusted code only.
std::optional<stop> evaluator::check_device_draws(const window_draws& wd) {
  timing_proc& p = bases_.front();
  const trial_spec probe = trial_for(t_, seed_base_ + 8'000'000, 0);
  worker_result r = p.w.request(refill_command(1, probe.seed), cfg_.call_timeout_s);
  if (!r.ok()) return stop{outcome::crash, "the baseline failed while its inputs were drawn", r.detail};
  if (auto s = download(p.w, 0, 1)) return s;
  auto d = make_inputs(t_, wd.l, ref_, probe);
  if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
  if (!window_inputs_intact(wd.l, wd.win, d->inputs, p.region.data()))
    return stop{outcome::crash, "lathe: the inputs drawn on the device differ from the host's (the shared generator disagrees)", {}};
  return std::nullopt;
}

// Slot k of candidate process j, whose last call read window `window`, against its reference.
std::optional<stop> evaluator::check_timed_window(const window_draws& wd, size_t j, uint32_t k, uint32_t window,
                                                  const std::string& where) {
  const slot_layout& l = wd.l;
  timing_proc& p = cands_[j];
  const trial_spec spec = wd.redraw ? trial_for(t_, wd.seeds[j] + k, 0) : wd.draws[k].spec;
  if (dev_trials_) {
    worker_result r = oracle_->prepare(0, spec, window);
    if (!r.ok()) return oracle_failed(r, "a timed call's reference");
    if (ipc_) {
      r = oracle_->compare(0, static_cast<uint32_t>(2 + j), k, window);
    } else {
      if (auto s = download(p.w, k, 1)) return s;
      r = oracle_->stage(p.region.data() + k * wd.win.slot_bytes, wd.win.slot_bytes);
      if (!r.ok()) return oracle_failed(r, "staging a kernel's slot");
      r = oracle_->compare(0, 0, 0, window);
    }
    if (!r.ok()) return oracle_failed(r, "comparing");
    return apply_verdict(l, judge(t_, l, r.reply, spec.seed), spec.seed, where, nullptr);
  }
  trial_data d;
  if (wd.redraw) {
    auto got = make_inputs(t_, l, ref_, spec);
    if (!got) return stop{outcome::crash, "lathe: " + got.error().message, {}};
    d = std::move(*got);
  } else {
    d = wd.draws[k];
  }
  if (auto s = download(p.w, k, 1)) return s;
  const uint8_t* slot = p.region.data() + k * wd.win.slot_bytes;
  if (!window_inputs_intact(l, wd.win, d.inputs, slot))
    return stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
  d.inputs = window_inputs(l, wd.win, d.inputs, window);
  if (auto r = compute_reference(t_, l, ref_, d); !r)
    return stop{outcome::crash, "lathe: the reference of a timed call: " + r.error().message, {}};
  const std::vector<uint8_t> as_checked = standard_slot(l, wd.win, slot, window);
  return check_slot_outputs(l, d, as_checked.data(), where);
}

// A sample of the outputs of every candidate process's last block, each against the reference
// of the window its last call on that slot read, computed now.
std::optional<stop> evaluator::check_timed_windows(const window_draws& wd, const std::vector<timed_worker>& a,
                                                   const std::string& when) {
  const uint32_t S = wd.S;
  const std::string where = ", a timed call of the last block" + when;
  if (dev_trials_) {
    wire::command one = wd.setup;
    one.num_slots = 1;
    if (worker_result r = oracle_->setup(one); !r.ok()) return oracle_failed(r, "timing setup");
  }
  const size_t per = (sampled_slots + cands_.size() - 1) / cands_.size();
  for (size_t j = 0; j < cands_.size(); ++j) {
    const timed_worker& tw = a[j];
    std::vector<uint32_t> written;
    for (uint32_t k = 0; k < S; ++k)
      if (last_call_on(k, S, tw.last_calls)) written.push_back(k);
    std::shuffle(written.begin(), written.end(), rng_);
    written.resize(std::min(written.size(), per));
    for (uint32_t k : written) {
      const uint32_t window = window_of(*last_call_on(k, S, tw.last_calls), S, tw.last_window);
      if (auto s = check_timed_window(wd, j, k, window, where)) return s;
    }
  }
  return check_timed_candidates(true);
}

std::optional<stop> evaluator::time_all_cuda() {
  auto t0 = clock_type::now();
  auto lay = timing_layout();
  if (!lay) return lay.error();
  // A Python worker draws nothing on the device: its slots hold host draws, as a problem's do.
  window_draws wd(t_, *lay, timing_slots_, ref_.problem() == nullptr && !python_timed_);
  const slot_layout& l = wd.l;
  const uint32_t S = wd.S;
  e_.policy.processes = timing_processes_;
  // Draws, starts and uploads under both locks shared (as a check), none beside another's series.
  using mode = device_lock::mode;
  auto staging = device_lock::acquire_all({{"cpu", mode::shared}, {"cuda0", mode::shared}});
  if (!staging) return stop{outcome::infra_error, staging.error().message, {}};
  if (!wd.redraw)
    if (auto s = wd.draw_once(t_, ref_, seed_base_)) return s;

  // Several fresh processes per side (docs/gate.md); the checks' worker is not timed.
  link_.reset();  // closed in the problem's worker before the buffer's owner ends
  cand_worker_ = worker{};
  // Python workers (torch, CUDA: seconds each) start at once, C-ABI ones in turn (docs/gate.md).
  if (auto s = start_timing_sides([&](const build_output& obj, const std::string& who, int candidate,
                                      std::vector<timing_proc>& pool) {
        return start_timing_proc(obj, wd.setup, wd.region_bytes, who, candidate, wd.staged, pool);
      }, python_timed_ && cfg_.policy.starts_at_once))
    return s;
  if (wd.redraw && !dev_trials_)
    if (auto s = check_device_draws(wd)) return s;

  staging->clear();  // the series: the GPU held, CPU timings (their load jitters launches) away
  auto held = device_lock::acquire_all({{"cpu", mode::shared}, {"cuda0", mode::exclusive}});
  if (!held) return stop{outcome::unstable, held.error().message, {}};
  const double timeout = cfg_.call_timeout_s + cfg_.policy.block_seconds * 20;
  wd.seeds.assign(cands_.size() + bases_.size() + copies_.size(), 0);
  wd.next_seed = seed_base_ + (uint64_t{1} << 40);  // apart from every check's seeds
  std::vector<timed_worker> A, B, B2;
  for (auto& p : cands_) A.push_back(wd.timed(p, "candidate", cfg_.call_timeout_s));  // seeds[j]: candidate j
  for (auto& p : bases_) B.push_back(wd.timed(p, "baseline", cfg_.call_timeout_s));
  for (auto& p : copies_) B2.push_back(wd.timed(p, "baseline", cfg_.call_timeout_s));
  if (auto s = calibrate_sides(A, B, B2, timeout, {})) return s;
  // Short kernels replay their blocks from a graph, each side by its own calibrated time (a long
  // kernel's launches cost nothing next to it, and what it enqueues outside its stream stays in
  // its blocks, where the cross-check sees it). Calibration takes the faster of two blocks: on
  // the H200 one A/A run of 10 read 2.29 when a hiccup during one side's calibration sent it to
  // launch timing while the other replayed graphs.
  bool graph_a = A.front().per_call < graph_below_seconds;
  bool graph_b = B.front().per_call < graph_below_seconds;
  // A replay skips a Python call's interpreter work: both sides replay or neither (python_timed_).
  if (python_timed_) graph_a = graph_b = graph_a && graph_b;
  for (auto* side : {&A, &B, &B2})
    for (auto& tw : *side) tw.graph = side == &A ? graph_a : graph_b;
  if (!wd.redraw && (graph_a || graph_b))
    e_.diagnostics += "timed calls replayed from a CUDA graph read the same windows block after block: " +
                      std::string(ref_.problem() ? "a problem's inputs cannot be drawn again on the device\n"
                                                 : "a Python worker draws no inputs on the device\n");

  // Poisoned right before the series: a kernel that stops writing once it is being timed leaves
  // its outputs unwritten (one that writes stale results fails on the references).
  auto poison_all = [&]() -> std::optional<stop> {
    for (auto& p : cands_) {
      worker_result r = p.w.request(poison_command(0, S), cfg_.call_timeout_s);
      if (!r.ok()) return from_worker(r, "poisoning outputs on the device");
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
  if (auto s = series_stop(main, false)) return s;
  if (auto s = check_timed_windows(wd, A, "")) return s;
  if (auto s = outside(main)) return s;
  record(main.series);

  // Roofline floor for the working set's level of memory. Below it: timed once more (every block
  // on inputs drawn again), checked again, and refused if it stays below.
  const double floor = roofline_floor(l, l.slot_bytes * S);
  if (floor > 0 && *e_.median_seconds > 0) {
    if (*e_.median_seconds < floor * cfg_.policy.roofline_slack) {
      progress("re-check (below the roofline floor)");
      if (auto s = poison_all()) return s;
      base_meter_.reset();  // the slowed-baseline check weighs the series it compares
      series_result again = run_paired(A, B, cfg_.policy, rng_, timeout);
      if (auto s = series_stop(again, true)) return s;
      if (auto s = check_timed_windows(wd, A, ", in the re-check")) return s;
      if (auto s = outside(again)) return s;
      record(again.series);
    }
    e_.roofline_fraction = floor / *e_.median_seconds;
    // The GPU's ceilings come from the probe (lathe-probe-cuda, cached, ratcheted up at context
    // open), not measurable again here: the rule weighs the host's load over the re-check's
    // baseline blocks (machine_load.h judge_floor), as on the CPU.
    const floor_judgement j = judge_floor(*e_.median_seconds, floor, 0, cfg_.policy.roofline_slack,
                                          base_meter_.total());
    if (auto s = floor_stop(j)) return s;
  }
  return end_timing(B, B2, t0);
}

}  // namespace lathe::gate::detail
