// The CPU's decision timing (PROTOCOL.md "Timing"; timing_arena.h says what each call reads and
// writes, and why). The stage, in order:
//   1. pools of fresh inputs (no references yet) and one arena per process, three processes per
//      pair as before (candidate, baseline, baseline's copy for the A/A control); before each
//      block of a process, outside the clock, the pools its last block read drawn again
//      (pool_refresher), the baseline's as the candidate's;
//   2. every timing worker frozen between its requests (worker.h freeze_between_requests);
//   3. the paired series over call tables, a uniform sample of the candidate's calls kept;
//   4. the candidate's pools checked intact, the sampled calls checked against the references
//      of their own inputs, its mappings and its idle threads looked at;
//   5. below the roofline floor: fresh pools and the series again, once;
//   6. the candidate's processes end, then the A/A control and the decision (gate.cpp).
#include <algorithm>
#include <cstring>
#include <future>
#include <memory>

#include "gate/device_lock.h"
#include "spec/task_file.h"
#include "gate/evaluator.h"
#include "gate/host_target.h"
#include "gate/machine_load.h"
#include "gate/timing_arena.h"

namespace lathe::gate::detail {
namespace {

// Per process, the arena's pools (up to 256 MiB) and output areas (32 MiB: a block has as many
// calls as areas, 8 calls of axpy's 4 MiB output or 128 of mm's 256 KiB). Every page is mapped in
// before the first timed call: a first touch cost 4 us a page on the 2-core VM, and 12 processes
// with 256 MiB of areas each spent 3 s on them and timed the rest of their first blocks 10x slow.
constexpr uint64_t pool_budget = uint64_t{256} << 20;
constexpr uint64_t output_budget = uint64_t{32} << 20;
// Calls checked after a series: as many fp64 references as the four timing slots had before.
constexpr size_t sampled_calls = 4;

struct arena_run {
  std::vector<arena_call> calls;  // the last block's
  uint32_t next_pool = 0;
  std::unique_ptr<pool_refresher> pools;
  std::optional<stop> failed;  // a pool the kernel wrote, or a draw that failed
};

}  // namespace

std::optional<stop> evaluator::time_all_cpu() {
  auto t0 = clock_type::now();
  progress("time");
  const shape_set& ts = timing_shape(t_);
  e_.timing_shape = ts.name;
  auto lay = make_layout(t_, ts);
  if (!lay) return stop{outcome::resource_limit, lay.error().message, {}};
  const slot_layout& l = *lay;
  const uint64_t llc = cfg_.tgt.llc_bytes ? cfg_.tgt.llc_bytes : (uint64_t{32} << 20);
  uint32_t pools = 1, entries = 1;
  size_arena(l, llc, pool_budget, output_budget, pools, entries);
  const arena_layout a = make_arena(l, pools, entries);
  const uint32_t processes = timing_processes_;
  e_.policy.processes = processes;

  std::vector<trial_data> data;
  std::vector<std::vector<uint8_t>> pool_data;
  auto draw = [&](uint64_t base) -> std::optional<stop> {
    data.clear();
    for (uint32_t p = 0; p < pools; ++p) {
      auto d = make_inputs(t_, l, ref_, trial_for(t_, seed_base_ + base + 100ull * p, 0));
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      data.push_back(std::move(*d));
    }
    pool_data = pool_contents(a, l, data);
    return std::nullopt;
  };
  std::vector<trial_spec> specs;  // the base draw's, per pool
  auto base_specs = [&] {
    specs.clear();
    for (const trial_data& d : data) specs.push_back(d.spec);
  };
  if (auto s = draw(7'000'000)) return s;
  base_specs();
  // A pool drawn again between blocks (timing_arena.h, pool_refresher): a task's as a permutation
  // of its base draw; a problem's by its Python worker from a seed no other draw used.
  const bool problem = ref_.problem() != nullptr;
  uint64_t next_seed = seed_base_ + 11'000'000;
  auto redraw = [&](uint32_t pool, uint8_t* region, std::mt19937_64& rng) -> result<trial_spec> {
    if (!problem) {
      permute_pool(t_, a, l, pool_data[pool], pool, region, rng);
      return specs[pool % specs.size()];
    }
    auto d = make_inputs(t_, l, ref_, trial_for(t_, next_seed++, 0));
    if (!d) return tl::unexpected(d.error());
    write_pool(a, l, d->inputs, pool, region);
    return d->spec;
  };

  // Where the stage's time goes, for the diagnostics (its cost is most of an evaluation's).
  std::string laps;
  auto lap_t = t0;
  auto lap = [&](const char* what) {
    const auto now = clock_type::now();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.2f s", laps.empty() ? "" : ", ", what,
                  std::chrono::duration<double>(now - lap_t).count());
    laps += buf;
    lap_t = now;
  };
  lap("inputs drawn");
  link_.reset();
  cand_worker_ = worker{};
  wire::command setup = setup_command(t_, l, 1);
  setup.table_offset = a.table_offset;
  setup.table_entries = a.entries;
  setup.populate_bytes = a.bytes;
  setup.written_from = a.areas_begin;
  // A process of one side, started: nullopt, else the stop (the region's memory is the
  // machine's, a worker that cannot start is lathe's trouble, a kernel that fails its load its own).
  auto start = [&](const build_output& obj, const char* who, std::vector<timing_proc>& pool) -> std::optional<stop> {
    timing_proc p;
    auto region = shared_region::create(a.bytes);
    if (!region) return stop{outcome::resource_limit, region.error().message, {}};
    p.region = std::move(*region);
    std::optional<stop> failed;
    auto w = start_worker(obj, p.region, failed, who);
    if (!w) return stop{outcome::infra_error, std::string("a timing worker (") + who + ") could not start: " + w.error().message, {}};
    p.w = std::move(*w);
    if (failed) return failed;
    pool.push_back(std::move(p));
    return std::nullopt;
  };
  // Creation order rotates with the pair, as in gate.cpp: memory mapped earlier ran slower here.
  for (uint32_t j = 0; j < processes; ++j)
    for (uint32_t k = 0; k < 3; ++k) {
      const uint32_t side = (j + k) % 3;
      if (side == 0) {
        if (auto s = start(cand_, "kernel", cands_)) return s;
      } else if (auto s = start(base_, "baseline", side == 1 ? bases_ : copies_)) {
        if (s->o == outcome::infra_error || s->o == outcome::resource_limit) return s;
        return stop{outcome::crash, "the baseline failed to start (a task problem)", s->message};
      }
    }
  lap("workers started");
  // Every arena staged and every worker set up (its pages mapped and touched: kernel_host.cpp),
  // all processes at once: the pages are most of the stage's cost on the 2-core VM.
  {
    std::vector<std::pair<timing_proc*, bool>> all;  // (process, is the candidate's)
    for (auto& p : cands_) all.push_back({&p, true});
    for (auto* pool : {&bases_, &copies_})
      for (auto& p : *pool) all.push_back({&p, false});
    std::vector<std::future<worker_result>> jobs;
    for (auto& [p, cand] : all)
      jobs.push_back(std::async(std::launch::async, [&, p = p] {
        p->region.populate();
        stage_pools(a, pool_data, p->region.data());
        poison_areas(t_, a, l, 0, a.entries, p->region.data());
        return p->w.setup(setup, cfg_.call_timeout_s);
      }));
    std::optional<stop> failed;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const worker_result r = jobs[i].get();
      if (r.ok() || failed) continue;
      failed = all[i].second ? from_worker(r, "timing setup of the kernel")
                             : stop{outcome::crash, "the baseline failed its timing setup (a task problem)", r.detail};
    }
    if (failed) return failed;
    for (auto& [p, cand] : all) p->w.freeze_between_requests();
  }

  lap("arenas staged and set up");
  auto lock = device_lock::acquire("cpu", device_lock::mode::exclusive);
  if (!lock) return stop{outcome::unstable, lock.error().message, {}};
  const double timeout = cfg_.call_timeout_s + cfg_.policy.block_seconds * 20;
  std::vector<arena_run> runs(cands_.size() + bases_.size() + copies_.size());
  call_reservoir samples(sampled_calls);
  size_t next_run = 0;
  auto timed = [&](timing_proc& p, const char* label, int pair) {
    timed_worker tw;
    tw.w = &p.w;
    tw.label = label;
    tw.table = true;
    tw.max_calls = a.entries;
    uint8_t* region = p.region.data();
    arena_run* run = &runs[next_run++];
    run->pools = std::make_unique<pool_refresher>(a, rng_());
    run->pools->staged(region, specs);
    const bool cand = pair >= 0;
    // Before every block, outside the clock (the worker is frozen): the pools the last block read
    // drawn again, then the table. A failure ends the block, and the series, as a failed request.
    tw.refill = [&redraw, region, run, cand]() {
      worker_result r;
      auto fresh = run->failed ? result<bool>(true) : run->pools->refresh(region, redraw);
      if (!fresh)
        run->failed = stop{outcome::crash, "lathe: drawing the timing pools again: " + fresh.error().message, {}};
      else if (!*fresh)
        run->failed = cand ? stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}}
                           : stop{outcome::crash, "the baseline wrote into its inputs while timed (a task problem)", {}};
      if (run->failed) {
        r.reply.st = wire::status::bad_command;
        r.detail = run->failed->message;
      }
      return r;
    };
    tw.before_block = [this, &a, &l, region, run](uint64_t calls) {
      run->calls = plan_block(a, static_cast<uint32_t>(calls), run->next_pool, rng_);
      run->pools->read(run->calls);
      write_table(a, l, run->calls, region);
      return static_cast<uint64_t>(run->calls.size());
    };
    if (cand)
      tw.after_block = [this, &a, &l, &samples, region, run, pair] {
        if (!samples.offer(a, l, run->calls, static_cast<uint32_t>(pair), region, *run->pools, rng_))
          run->failed = stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
      };
    return tw;
  };
  // The stop a failed refill or sample left, if any (it outranks the failed request it caused).
  auto pool_failure = [&]() -> std::optional<stop> {
    for (const arena_run& r : runs)
      if (r.failed) return r.failed;
    return std::nullopt;
  };
  std::vector<timed_worker> A, B, B2;
  for (size_t j = 0; j < cands_.size(); ++j) A.push_back(timed(cands_[j], "candidate", static_cast<int>(j)));
  for (auto& p : bases_) B.push_back(timed(p, "baseline", -1));
  for (auto& p : copies_) B2.push_back(timed(p, "baseline", -1));
  worker_result cal_fail;
  auto na = calibrate(A.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (auto f = pool_failure()) return f;
  if (!na) return from_worker(cal_fail, "timing");
  auto nb = calibrate(B.front(), cfg_.policy.block_seconds, timeout, cal_fail);
  if (auto f = pool_failure()) return f;
  if (!nb) return stop{outcome::crash, "the baseline failed while timed", cal_fail.detail};
  for (auto& tw : A) tw.calls = *na, tw.per_call = A.front().per_call;
  for (auto& tw : B) tw.calls = *nb, tw.per_call = B.front().per_call;
  for (auto& tw : B2) tw.calls = *nb, tw.per_call = B.front().per_call;
  timing_eta(static_cast<double>(*na) * A.front().per_call, static_cast<double>(*nb) * B.front().per_call,
             std::min(A.size(), B.size()));

  // Everything the candidate did while timed, checked while its workers are still frozen.
  auto verify = [&](const std::string& when) -> std::optional<stop> {
    if (auto f = pool_failure()) return f;
    for (size_t j = 0; j < cands_.size(); ++j)
      if (!runs[j].pools->all_intact(cands_[j].region.data()))
        return stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
    trial_data d;  // one for every sample: its buffers are reused (a fresh 128 MiB reference
                   // cost more in page faults than in computing it on the 2-core VM)
    for (const call_sample* s : samples.samples(rng_)) {
      d.spec = s->spec;  // a problem's tensors are shaped by its draw
      d.inputs.assign(s->inputs.begin(), s->inputs.end());
      if (auto r = compute_reference(t_, l, ref_, d); !r)
        return stop{outcome::crash, "lathe: the reference of a timed call: " + r.error().message, {}};
      if (s->outputs.size() < l.output_bytes)
        return stop{outcome::crash, "lathe: a sampled call's output area is shorter than its outputs", {}};
      const std::string where = ", timed call of block " + std::to_string(s->block) + " of " +
                                std::to_string(samples.blocks()) + when;
      if (auto st = check_outputs(l, d, s->outputs.data(), where)) return st;
    }
    for (auto& p : cands_) {
      if (auto s = mappings_check(p.w, "while timed")) return s;
      p.w.thaw();
      if (auto s = idle_check(p.w, "after timing")) return s;
    }
    return std::nullopt;
  };

  lap("calibrated");
  meter_baseline(B);
  series_result main = run_paired(A, B, cfg_.policy, rng_, timeout);
  if (auto f = pool_failure()) return f;
  if (!main.ok)
    return main.failed_a ? from_worker(main.failure, "timing")
                         : stop{outcome::crash, "the baseline failed while timed", main.failure.detail};
  lap("series");
  if (auto s = verify("")) return s;
  record(main.series);
  lap("timed calls checked");

  // Roofline floor for the level of memory a block's data lives in. Below it the result is not
  // trusted: fresh pools and the series again, checked again, and refused if it stays below.
  const uint64_t working_set = uint64_t{a.pools} * l.input_bytes + A.front().calls * l.output_bytes;
  const double floor = roofline_floor(l, working_set);
  if (floor > 0 && *e_.median_seconds > 0 && *e_.median_seconds < floor * cfg_.policy.roofline_slack) {
    progress("re-check (below the roofline floor)");
    if (auto s = draw(9'000'000)) return s;
    base_specs();
    size_t r = 0;
    for (auto* pool : {&cands_, &bases_, &copies_})
      for (auto& p : *pool) {
        p.w.freeze_between_requests();
        stage_pools(a, pool_data, p.region.data());
        runs[r++].pools->staged(p.region.data(), specs);
      }
    samples = call_reservoir(sampled_calls);
    base_meter_.reset();  // the slowed-baseline check weighs the series it compares
    series_result again = run_paired(A, B, cfg_.policy, rng_, timeout);
    if (auto f = pool_failure()) return f;
    if (!again.ok) return from_worker(again.failure, "re-timing");
    if (auto s = verify(", in the re-check")) return s;
    record(again.series);
  }
  if (floor > 0 && *e_.median_seconds > 0) {
    e_.roofline_fraction = floor / *e_.median_seconds;
    if (*e_.median_seconds < floor * cfg_.policy.roofline_slack) {
      // Below it twice: the ceilings measured again now, on the threads a worker gets, with the
      // machine's load counted while they are (the workers are frozen; the candidate's processes
      // count as lathe's, so that a load of its own does not read as the machine's). A stored
      // ceiling taken on a loaded machine put honest kernels below the floor (a two-thread row
      // sum at 75.6 GB/s against 49-54 GB/s ceilings, issue 42); a floor that stays above the
      // kernel on a loaded machine is not decided either way.
      progress("re-check (the ceilings measured again)");
      std::vector<pid_t> ours = lathe_pids();
      for (const auto& p : cands_) ours.push_back(p.w.pid());
      load_meter m;
      m.set_pids(ours, {});
      double fresh_floor = 0;
      if (cfg_.remeasure_ceilings) {
        m.begin();
        const cpu_ceilings c = measure_cpu_ceilings(cfg_.tgt);
        m.end();
        target fresh = cfg_.tgt;
        fresh.copy_bytes_per_s = std::max(fresh.copy_bytes_per_s, c.dram_bytes_per_s);
        fresh.cache_bytes_per_s = std::max(fresh.cache_bytes_per_s, c.llc_bytes_per_s);
        fresh.l2_bytes_per_s = std::max(fresh.l2_bytes_per_s, c.l2_bytes_per_s);
        fresh.flops_per_s = std::max(fresh.flops_per_s, c.flops_per_s);
        fresh_floor = roofline_floor(l, working_set, &fresh);
      }
      const floor_judgement j =
          judge_floor(*e_.median_seconds, floor, fresh_floor, cfg_.policy.roofline_slack, m.total());
      e_.roofline_fraction = j.floor_s / *e_.median_seconds;
      if (j.verdict == floor_verdict::suspicious) return stop{outcome::suspicious_speed, j.message, {}};
      if (j.verdict == floor_verdict::machine) return stop{outcome::unstable, j.message, {}};
      char buf[240];
      std::snprintf(buf, sizeof buf, "roofline: below the floor of the stored ceilings (%.3g us), above the "
                    "floor of ceilings measured again (%.3g us)\n", floor * 1e6, j.floor_s * 1e6);
      e_.diagnostics += buf;
    }
  }
  lap("floor");
  e_.diagnostics += "time stage: " + laps + "\n";
  stage_done("time", t0);
  const paired_series measured = *e_.paired;
  cands_.clear();  // the candidate's processes end: none of its work runs during the control
  return control_and_decide(B, B2, measured);
}

}  // namespace lathe::gate::detail
