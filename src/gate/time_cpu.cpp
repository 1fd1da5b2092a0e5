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
// Calls checked after a series: as many fp64 references as the four timing slots had before, and
// the latest call of the longest-running process besides (call_reservoir).
constexpr size_t sampled_calls = 4;

struct arena_run {
  std::vector<arena_call> calls;  // the last block's
  uint32_t next_pool = 0;
  std::unique_ptr<pool_refresher> pools;
  std::optional<stop> failed;  // a pool the kernel wrote, or a draw that failed
};

// Where the stage's time goes, for the diagnostics (its cost is most of an evaluation's).
struct stage_laps {
  explicit stage_laps(clock_type::time_point t0) : last(t0) {}
  void lap(const char* what) {
    const auto now = clock_type::now();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.2f s", text.empty() ? "" : ", ", what,
                  std::chrono::duration<double>(now - last).count());
    text += buf;
    last = now;
  }
  std::string text;
  clock_type::time_point last;
};

}  // namespace

// The pools of fresh inputs every process's arena is staged from (no references yet), and how a
// pool is drawn again between blocks (timing_arena.h, pool_refresher): a task's as a permutation
// of its base draw; a problem's by its Python worker from a seed no other draw used.
struct timing_pools {
  timing_pools(const task& t, const reference& ref, const slot_layout& l, uint64_t llc, uint64_t seed_base)
      : t(t), ref(ref), l(l), seed_base(seed_base), next_seed(seed_base + 11'000'000) {
    size_arena(l, llc, pool_budget, output_budget, count, entries);
    a = make_arena(l, count, entries);
  }
  // Every pool drawn from `base` on: the data, the staged contents and the specs.
  std::optional<stop> draw(uint64_t base) {
    data.clear();
    for (uint32_t p = 0; p < count; ++p) {
      auto d = make_inputs(t, l, ref, trial_for(t, seed_base + base + 100ull * p, 0));
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      data.push_back(std::move(*d));
    }
    contents = pool_contents(a, l, data);
    specs.clear();
    for (const trial_data& d : data) specs.push_back(d.spec);
    return std::nullopt;
  }
  result<trial_spec> redraw(uint32_t pool, uint8_t* region, std::mt19937_64& rng) {
    if (ref.problem() == nullptr) {
      permute_pool(t, a, l, contents[pool], pool, region, rng);
      return specs[pool % specs.size()];
    }
    auto d = make_inputs(t, l, ref, trial_for(t, next_seed++, 0));
    if (!d) return tl::unexpected(d.error());
    write_pool(a, l, d->inputs, pool, region);
    return d->spec;
  }

  const task& t;
  const reference& ref;
  const slot_layout l;
  const uint64_t seed_base;
  uint32_t count = 1, entries = 1;
  arena_layout a;
  std::vector<trial_data> data;
  std::vector<std::vector<uint8_t>> contents;
  std::vector<trial_spec> specs;  // the base draw's, per pool
  uint64_t next_seed;
};

// Every timed process's run over its arena (its pools' refresher, its last block's calls, the
// failure a refill or a sample left) and the candidate's sampled calls.
struct timed_arenas {
  timed_arenas(timing_pools& pools, size_t processes, std::mt19937_64& rng)
      : pools(pools), runs(processes), samples(sampled_calls), rng(rng) {}
  timed_arenas(const timed_arenas&) = delete;  // its workers' hooks point into it

  // The timed worker of process `p`; `pair` >= 0 for the candidate's (whose calls are sampled).
  timed_worker timed(timing_proc& p, const char* label, int pair) {
    timed_worker tw;
    tw.w = &p.w;
    tw.label = label;
    tw.table = true;
    tw.max_calls = pools.a.entries;
    uint8_t* region = p.region.data();
    arena_run* run = &runs[next_run++];
    run->pools = std::make_unique<pool_refresher>(pools.a, rng());
    run->pools->staged(region, pools.specs);
    const bool cand = pair >= 0;
    timing_pools* pl = &pools;
    // Before every block, outside the clock (the worker is frozen): the pools the last block read
    // drawn again, then the table. A failure ends the block, and the series, as a failed request.
    tw.refill = [pl, region, run, cand]() {
      worker_result r;
      auto redraw = [pl](uint32_t pool, uint8_t* at, std::mt19937_64& g) { return pl->redraw(pool, at, g); };
      auto fresh = run->failed ? result<bool>(true) : run->pools->refresh(region, redraw);
      if (!fresh)
        run->failed = stop{outcome::crash, "lathe: drawing the timing pools again: " + fresh.error().message, {}};
      else if (!*fresh)
        run->failed = cand ? stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}}
                           : stop{outcome::infra_error, "the baseline wrote into its inputs while timed (a task problem)", {}};
      if (run->failed) {
        r.reply.st = wire::status::bad_command;
        r.detail = run->failed->message;
      }
      return r;
    };
    tw.before_block = [this, region, run](uint64_t calls) {
      run->calls = plan_block(pools.a, static_cast<uint32_t>(calls), run->next_pool, rng);
      run->pools->read(run->calls);
      write_table(pools.a, pools.l, run->calls, region);
      return static_cast<uint64_t>(run->calls.size());
    };
    if (cand)
      tw.after_block = [this, region, run, pair] {
        if (!samples.offer(pools.a, pools.l, run->calls, static_cast<uint32_t>(pair), region, *run->pools, rng))
          run->failed = stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
      };
    return tw;
  }
  // The stop a failed refill or sample left, if any (it outranks the failed request it caused).
  std::optional<stop> failure() const {
    for (const arena_run& r : runs)
      if (r.failed) return r.failed;
    return std::nullopt;
  }

  timing_pools& pools;
  std::vector<arena_run> runs;
  call_reservoir samples;
  std::mt19937_64& rng;
  size_t next_run = 0;
};

// A process of one side, started: nullopt, else the stop (the region's memory is the machine's,
// a worker that cannot start is lathe's trouble, a kernel that fails its load its own).
std::optional<stop> evaluator::start_arena_proc(const build_output& obj, const std::string& who, uint64_t bytes,
                                                std::vector<timing_proc>& pool) {
  timing_proc p;
  auto region = shared_region::create(bytes);
  if (!region) return stop{outcome::resource_limit, region.error().message, {}};
  p.region = std::move(*region);
  std::optional<stop> failed;
  auto w = start_worker(obj, p.region, failed, who);
  if (!w) return stop{outcome::infra_error, "a timing worker (" + who + ") could not start: " + w.error().message, {}};
  p.w = std::move(*w);
  if (failed) return failed;
  pool.push_back(std::move(p));
  return std::nullopt;
}

// Every arena staged and every worker set up (its pages mapped and touched: kernel_host.cpp),
// all processes at once: the pages are most of the stage's cost on the 2-core VM.
std::optional<stop> evaluator::stage_arenas(const timing_pools& pools, const wire::command& setup) {
  const arena_layout& a = pools.a;
  std::vector<std::pair<timing_proc*, bool>> all;  // (process, is the candidate's)
  for (auto& p : cands_) all.push_back({&p, true});
  for (auto* pool : {&bases_, &copies_})
    for (auto& p : *pool) all.push_back({&p, false});
  std::vector<std::future<worker_result>> jobs;
  for (auto& [p, cand] : all)
    jobs.push_back(std::async(std::launch::async, [&, p = p] {
      p->region.populate();
      stage_pools(a, pools.contents, p->region.data());
      poison_areas(t_, a, pools.l, 0, a.entries, p->region.data());
      return p->w.setup(setup, cfg_.call_timeout_s);
    }));
  std::optional<stop> failed;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const worker_result r = jobs[i].get();
    if (r.ok() || failed) continue;
    failed = all[i].second ? from_worker(r, "timing setup of the kernel")
                           : stop{outcome::infra_error, "the baseline failed its timing setup (a task problem)", r.detail};
  }
  if (failed) return failed;
  for (auto& [p, cand] : all) p->w.freeze_between_requests();
  return std::nullopt;
}

// Everything the candidate did while timed, checked while its workers are still frozen.
std::optional<stop> evaluator::check_timed_calls(const timing_pools& pools, timed_arenas& ta,
                                                 const std::string& when) {
  const slot_layout& l = pools.l;
  if (auto f = ta.failure()) return f;
  for (size_t j = 0; j < cands_.size(); ++j)
    if (!ta.runs[j].pools->all_intact(cands_[j].region.data()))
      return stop{outcome::input_mutated, "the kernel wrote into its inputs while timed", {}};
  trial_data d;  // one for every sample: its buffers are reused (a fresh 128 MiB reference
                 // cost more in page faults than in computing it on the 2-core VM)
  for (const call_sample* s : ta.samples.samples(rng_)) {
    d.spec = s->spec;  // a problem's tensors are shaped by its draw
    d.inputs.assign(s->inputs.begin(), s->inputs.end());
    if (auto r = compute_reference(t_, l, ref_, d); !r)
      return stop{outcome::crash, "lathe: the reference of a timed call: " + r.error().message, {}};
    if (s->outputs.size() < l.output_bytes)
      return stop{outcome::crash, "lathe: a sampled call's output area is shorter than its outputs", {}};
    const std::string where = ", timed call " + std::to_string(s->ordinal) + " of its process, in block " +
                              std::to_string(s->block) + " of " + std::to_string(ta.samples.blocks()) + when;
    if (auto st = check_outputs(l, d, s->outputs.data(), where)) return st;
  }
  return check_timed_candidates(false);
}

// Roofline floor for the level of memory a block's data lives in. Below it the result is not
// trusted: fresh pools and the series again, checked again, and refused if it stays below.
std::optional<stop> evaluator::cpu_floor(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                                         timing_pools& pools, timed_arenas& ta, double timeout) {
  const slot_layout& l = pools.l;
  const uint64_t working_set = uint64_t{pools.a.pools} * l.input_bytes + a.front().calls * l.output_bytes;
  const double floor = roofline_floor(l, working_set);
  if (floor <= 0 || *e_.median_seconds <= 0) return std::nullopt;
  if (*e_.median_seconds < floor * cfg_.policy.roofline_slack) {
    progress("re-check (below the roofline floor)");
    if (auto s = pools.draw(9'000'000)) return s;
    size_t r = 0;
    for (auto* pool : {&cands_, &bases_, &copies_})
      for (auto& p : *pool) {
        p.w.freeze_between_requests();
        stage_pools(pools.a, pools.contents, p.region.data());
        ta.runs[r++].pools->staged(p.region.data(), pools.specs);
      }
    ta.samples = call_reservoir(sampled_calls);
    base_meter_.reset();  // the slowed-baseline check weighs the series it compares
    series_result again = run_paired(a, b, cfg_.policy, rng_, timeout);
    if (auto f = ta.failure()) return f;
    if (auto s = series_stop(again, true)) return s;
    if (auto s = check_timed_calls(pools, ta, ", in the re-check")) return s;
    record(again.series);
    if (*e_.median_seconds <= 0) return std::nullopt;
  }
  e_.roofline_fraction = floor / *e_.median_seconds;
  if (*e_.median_seconds < floor * cfg_.policy.roofline_slack) return judge_cpu_floor(l, working_set, floor);
  return std::nullopt;
}

// Below the floor twice: the ceilings measured again now, on the threads a worker gets, with the
// machine's load counted while they are (the workers are frozen; the candidate's processes count
// as lathe's, so that a load of its own does not read as the machine's). A stored ceiling taken
// on a loaded machine put honest kernels below the floor (a two-thread row sum at 75.6 GB/s
// against 49-54 GB/s ceilings, issue 42); a floor that stays above the kernel on a loaded machine
// is not decided either way.
std::optional<stop> evaluator::judge_cpu_floor(const slot_layout& l, uint64_t working_set, double floor) {
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
    // The ceilings' passes run on threads of lathe's own; other threads of this process (other
    // evaluations of a batch) load the machine as another process would.
    m.count_as_lathes(c.thread_cpu_s);
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
  if (auto s = floor_stop(j)) return s;
  char buf[240];
  std::snprintf(buf, sizeof buf, "roofline: below the floor of the stored ceilings (%.3g us), above the "
                "floor of ceilings measured again (%.3g us)\n", floor * 1e6, j.floor_s * 1e6);
  e_.diagnostics += buf;
  return std::nullopt;
}

std::optional<stop> evaluator::time_all_cpu() {
  auto t0 = clock_type::now();
  auto lay = timing_layout();
  if (!lay) return lay.error();
  const uint64_t llc = cfg_.tgt.llc_bytes ? cfg_.tgt.llc_bytes : (uint64_t{32} << 20);
  timing_pools pools(t_, ref_, *lay, llc, seed_base_);
  const arena_layout& a = pools.a;
  e_.policy.processes = timing_processes_;
  // Drawing the pools and staging them into every process is CPU work, done under the CPU's lock
  // shared (as a check is) and released before the series takes it exclusive.
  device_lock staging;
  if (auto l = device_lock::acquire("cpu", device_lock::mode::shared)) staging = std::move(*l);
  else return stop{outcome::infra_error, l.error().message, {}};
  if (auto s = pools.draw(7'000'000)) return s;
  stage_laps laps(t0);
  laps.lap("inputs drawn");
  link_.reset();
  cand_worker_ = worker{};
  if (auto s = start_timing_sides([&](const build_output& obj, const std::string& who, int, std::vector<timing_proc>& pool) {
        return start_arena_proc(obj, who, a.bytes, pool);
      }, cfg_.policy.starts_at_once))
    return s;
  laps.lap("workers started");
  wire::command setup = setup_command(t_, pools.l, 1);
  setup.table_offset = a.table_offset;
  setup.table_entries = a.entries;
  setup.populate_bytes = a.bytes;
  setup.written_from = a.areas_begin;
  if (auto s = stage_arenas(pools, setup)) return s;
  laps.lap("arenas staged and set up");

  staging = device_lock{};
  auto lock = device_lock::acquire("cpu", device_lock::mode::exclusive);
  if (!lock) return stop{outcome::unstable, lock.error().message, {}};
  const double timeout = cfg_.call_timeout_s + cfg_.policy.block_seconds * 20;
  timed_arenas ta(pools, cands_.size() + bases_.size() + copies_.size(), rng_);
  std::vector<timed_worker> A, B, B2;
  for (size_t j = 0; j < cands_.size(); ++j) A.push_back(ta.timed(cands_[j], "candidate", static_cast<int>(j)));
  for (auto& p : bases_) B.push_back(ta.timed(p, "baseline", -1));
  for (auto& p : copies_) B2.push_back(ta.timed(p, "baseline", -1));
  if (auto s = calibrate_sides(A, B, B2, timeout, [&ta] { return ta.failure(); })) return s;
  laps.lap("calibrated");

  meter_baseline(B);
  series_result main = run_paired(A, B, cfg_.policy, rng_, timeout);
  if (auto f = ta.failure()) return f;
  if (auto s = series_stop(main, false)) return s;
  laps.lap("series");
  if (auto s = check_timed_calls(pools, ta, "")) return s;
  record(main.series);
  laps.lap("timed calls checked");
  if (auto s = cpu_floor(A, B, pools, ta, timeout)) return s;
  laps.lap("floor");
  e_.diagnostics += "time stage: " + laps.text + "\n";
  return end_timing(B, B2, t0);
}

}  // namespace lathe::gate::detail
