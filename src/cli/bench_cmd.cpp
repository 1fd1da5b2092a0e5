// lathe bench SUITE (--candidates DIR | --kernel NAME) (issue 8; docs/bench.md): the verb finds
// the suite's tasks and each one's candidate, and prints; search/bench.h gates and aggregates.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <list>
#include <map>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/kernel_text.h"
#include "cli/bench_kernelbench.h"
#include "cli/bench_load.h"
#include "cli/bench_prebuild.h"
#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/enum_option.h"
#include "cli/executor_slurm.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/proposer_session.h"  // make_gate_hooks
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "gate/gate.h"
#include "llm/budget.h"
#include "search/bench.h"
#include "search/optimize.h"
#include "search/strategy.h"
#include "spec/bundle.h"
#include "spec/problem.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

// A suite named by a word instead of a directory: the shipped tasks, all or those of one role.
enum class shipped_suite : uint8_t { all, source, heldout };

const char* to_string(shipped_suite s) {
  switch (s) {
    case shipped_suite::all: return "all";
    case shipped_suite::source: return "source";
    case shipped_suite::heldout: return "heldout";
  }
  return "?";
}

struct bench_cli {
  std::string suite, candidates, kernel, markdown, strategy;
  std::optional<shipped_suite> shipped;  // `suite` as a word, read once (none: a directory)
  std::string budget = "steps=3", proposer = "auto";
  search::bench_protocol protocol = search::bench_protocol::lathe;
  int32_t runs = 0;  // 0: 1 (lathe), 3 (klineage)
  int32_t level = 0;  // KernelBench's layout: the level of the candidates' names (0: from the suite)
  int32_t in_flight = 1;  // given candidates: evaluations at once (search::bench_options::in_flight)
  int32_t cpu_slots = 0;  // --cpu-slots N (gate/cpu_slot.h); 0: none, the whole machine unpinned
  std::string kernelbench_json;  // KernelBench's layout: also write its eval results shape here
  std::string platform_word;     // --platform: where bare problem files run ("": cpu)
  bool json = false, check_only = false;
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick, --refuse-torch-fallback
  executor_cli exec;                             // --executor (cli/executor_slurm.h)
};


// The suite's task directories: `all`, `source` or `heldout` (the shipped tasks of that role), or
// a directory whose subdirectories hold task.toml files. Sorted by name.
result<std::vector<fs::path>> suite_dirs(const std::string& suite, std::optional<shipped_suite> word,
                                         const paths& where) {
  const bool shipped = word.has_value();
  const fs::path root = shipped ? where.tasks_dir : fs::path(suite);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return fail(errc::not_found, "suite '" + suite + "': not a directory, nor all | source | heldout");
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (fs::exists(e.path() / "task.toml", ec) ||
        (!shipped && e.is_regular_file(ec) && gate::is_problem_file(e.path())))
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  if (out.empty())
    return fail(errc::not_found, "suite '" + suite + "' holds no task (no */task.toml, no problem file)");
  return out;
}

// --strategy: each task optimized from its baseline kernel under the budget; the attempt's
// candidate is the run's best and its figure the run's final paired series (best vs start).
search::bench_producer optimizer(context& ctx, const bench_cli& o, search::strategy strat,
                                 const budget& limits, lineages::verifier& v) {
  return [&ctx, &o, strat, limits, &v](const search::bench_entry& e, int32_t attempt) {
    search::bench_attempt a;
    const std::string run_id = search::new_run_id();
    a.run = run_id;
    auto session = open_proposer(ctx, e.t, o.proposer, run_id, limits, {}, false);
    if (!session) {
      a.failure = "no proposer: " + session.error().message;
      return a;
    }
    search::optimize_kernels ks;
    ks.start = e.baseline;
    ks.naive = e.baseline;
    search::optimize_options so;
    so.strat = strat;
    so.measure_expert = false;
    so.tgt = e.t.plat == platform::cuda ? *ctx.gpu : ctx.tgt;
    so.target_text = agent::target_text(so.tgt);
    so.proposer_label = (*session)->label();
    so.run_id = run_id;
    so.args_json = json{{"task", e.t.name}, {"strategy", o.strategy}, {"budget", o.budget},
                        {"bench", o.suite}, {"attempt", attempt},
                        {"config", (*session)->decision.config_source}}.dump();
    auto res = search::optimize(e.t, ks, v, *(*session)->proposer, *ctx.db, *(*session)->budget, so);
    if (!res) {
      a.failure = res.error().message;
      return a;
    }
    a.candidate = res->best;
    if (res->steps.empty()) {
      a.speedup = 1.0;  // nothing accepted: the best found is the baseline itself
      a.outcome = outcome::ok;
      a.message = std::string("no step accepted (") + search::to_string(res->stop) + "): the best is the baseline";
    } else if (res->best_vs_start) {
      a.speedup = res->best_vs_start;
      a.outcome = outcome::ok;
      a.message = std::to_string(res->steps.size()) + " step(s) accepted, re-measured against the baseline";
    } else {
      a.outcome = res->final_best_outcome.value_or(outcome::unstable);
      a.message = cat("the final series against the baseline did not decide (", to_string(*a.outcome), ")");
    }
    if (!res->final_evaluations.empty()) a.evaluation = res->final_evaluations.front();
    return a;
  };
}

// KLineage's timing: the kernel checked on 3 seeds, then timed with Triton's do_bench budgets.
search::bench_timer do_bench_timer(context& ctx, const bench_cli& o) {
  return [&ctx, &o](const task& t, const kernel_bundle& k, bool is_baseline) {
    gate_settings gs;
    gs.mode = gate::timing_mode::do_bench;
    gs.seeds = 3;
    gs.quick = o.gate.quick;
    gs.progress = false;
    gate::gate_config cfg = make_gate_config(ctx, t, gs);
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.prov = {"human", "bench", false};
    if (is_baseline) req.role = gate::screen_role::baseline;
    evaluation e = gate::evaluate(cfg, req);
    search::bench_timing out;
    if (auto id = store_evaluation(ctx, k, e)) out.evaluation = *id;
    out.outcome = e.result;
    out.message = e.message;
    if (e.result == outcome::ok && e.comparability && e.comparability->mean_seconds > 0)
      out.mean_seconds = e.comparability->mean_seconds;
    return out;
  };
}

// KernelBench's eval results file (--kernelbench-json), written under a fresh name and renamed
// over the old one: after every problem, so that a run killed mid-suite leaves what it measured.
bool write_kernelbench_results(const std::string& path, const std::vector<kernelbench_sample_run>& runs,
                               const std::map<std::string, int>& problem_of, const store& db) {
  const std::string fresh = path + ".partial";
  {
    std::ofstream out(fresh, std::ios::trunc);
    out << kernelbench_results_json(runs, problem_of, db).dump(2) << "\n";
    if (!out) return false;
  }
  std::error_code ec;
  fs::rename(fresh, path, ec);
  return !ec;
}

// --kernelbench-json through a suite: written once before anything is evaluated (a path that
// cannot be written is refused then, not after the suite), after every problem (a failure said
// once, the suite going on), and at the end.
struct kernelbench_results_file {
  const std::string& path;
  const std::map<std::string, int>& problem_of;
  const store& db;
  bool warned = false;
  bool write(const std::vector<kernelbench_sample_run>& runs) {
    return path.empty() || write_kernelbench_results(path, runs, problem_of, db);
  }
  void keep(const std::vector<kernelbench_sample_run>& runs) {
    if (write(runs) || warned) return;
    warned = true;
    std::fprintf(stderr, "warning: cannot write %s; the suite goes on\n", path.c_str());
  }
};

// KernelBench's layout (bench_kernelbench.h): one bench run per sample over every problem, then
// the best of samples; the table per sample, or JSON with every run's aggregates.
int run_kernelbench_layout(context& ctx, const bench_cli& o, const std::vector<kernelbench_candidate>& kb,
                           std::vector<search::bench_entry> entries, search::bench_options bo,
                           lineages::verifier& v) {
  std::optional<int> level = o.level > 0 ? std::optional<int>(o.level) : kernelbench_level(o.suite);
  if (!level) {
    level = kb.front().level;
    for (const auto& c : kb)
      if (c.level != *level)
        return fail_with("the candidates name several levels and the suite's folder names none: say --level L", 2);
  }
  std::map<std::string, int> problem_of;
  std::vector<int> samples;
  for (const auto& e : entries)
    if (auto id = kernelbench_problem_id(e.t.name)) problem_of[e.t.name] = *id;
  for (const auto& c : kb)
    if (c.level == *level && std::find(samples.begin(), samples.end(), c.sample) == samples.end())
      samples.push_back(c.sample);
  std::sort(samples.begin(), samples.end());
  if (samples.empty()) return fail_with("no candidate of level " + std::to_string(*level) + " in " + o.candidates, 2);
  // Every sample of every problem built first, on every core: the evaluations find them cached.
  std::vector<std::pair<const task*, kernel_bundle>> ahead;
  for (const auto& e : entries) {
    const auto id = problem_of.find(e.t.name);
    for (const auto& c : kb)
      if (id != problem_of.end() && c.level == *level && c.problem == id->second)
        if (auto got = load_kernelbench_sample(c)) ahead.emplace_back(&e.t, std::move(*got));
  }
  kernelbench_results_file results{o.kernelbench_json, problem_of, *ctx.db};
  if (!results.write({}))
    return fail_with("cannot write " + o.kernelbench_json + " (--kernelbench-json): name a file in a folder you can write", 2);
  const nlohmann::json built = prebuild_suite(ctx, o.gate, ahead, o.json);
  std::vector<kernelbench_sample_run> runs;
  std::string md;
  const std::string from = bo.candidates;
  for (int s : samples) {
    std::vector<search::bench_entry> these = entries;
    // A sample lathe will not read (a link, not a regular file) is that problem's failure,
    // `forbidden` with the reason, not a candidate.
    std::map<std::string, std::string> refused;
    for (auto& e : these) {
      e.candidate.reset();
      const auto id = problem_of.find(e.t.name);
      for (const auto& c : kb)
        if (id != problem_of.end() && c.level == *level && c.problem == id->second && c.sample == s) {
          auto got = load_kernelbench_sample(c);
          if (!got) {
            if (!o.json) std::fprintf(stderr, "refused: %s\n", got.error().message.c_str());
            refused[e.t.name] = "refused: " + got.error().message;
            continue;
          }
          e.candidate = std::move(*got);
        }
    }
    const search::bench_producer given = [&refused](const search::bench_entry& e, int32_t attempt) {
      search::bench_attempt a = search::given_candidates()(e, attempt);
      if (auto r = refused.find(e.t.name); r != refused.end()) {
        a.failure = r->second;
        a.outcome = outcome::forbidden;
      }
      return a;
    };
    bo.candidates = from + " (KernelBench level " + std::to_string(*level) + ", sample " + std::to_string(s) + ")";
    search::bench_options each = bo;  // the results file rewritten as each problem is decided
    std::vector<kernelbench_sample_run> so_far = runs;
    so_far.push_back({s, {}});
    each.progress = [&](const search::bench_row& r) {
      if (bo.progress) bo.progress(r);
      so_far.back().result.rows.push_back(r);
      results.keep(so_far);
    };
    auto res = search::run_bench(these, given, v, *ctx.db, each);
    if (!res) return fail_with(res.error().message, 1);
    md += "## Sample " + std::to_string(s) + "\n\n" + search::bench_markdown(*res, bo) + "\n";
    runs.push_back({s, std::move(*res)});
  }
  const search::bench_summary best = best_of_samples(runs, bo.ps);
  md += "## Best of " + std::to_string(samples.size()) + " samples\n\n";
  md += "correct " + std::to_string(best.correct) + "/" + std::to_string(best.tasks);
  for (const auto& f : best.fast) md += ", fast_" + number_text("%.3g", f.p) + " " + number_text("%.3g", f.fraction);
  md += best.geomean ? ", geomean " + number_text("%.3g", *best.geomean) + "x over the correct\n" : "\n";
  if (!results.write(runs)) return fail_with("cannot write " + o.kernelbench_json, 1);
  if (!o.markdown.empty()) {
    std::ofstream out(o.markdown, std::ios::trunc);
    out << md;
    if (!out) return fail_with("cannot write " + o.markdown, 1);
  }
  if (o.json) {
    nlohmann::json j = {{"schema", "lathe.bench/1"}, {"layout", "kernelbench"}, {"level", *level}, {"prebuild", built}};
    for (const auto& r : runs)
      j["samples"].push_back({{"sample", r.sample}, {"run", r.result.r.id},
                              {"summary", nlohmann::json::parse(r.result.r.summary)}});
    j["best_of_samples"] = search::summary_json(best);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", md.c_str());
  }
  return 0;
}

// Task directory `d`'s entry (`t`: its task as load_suite read it), its baseline and candidate,
// added to `entries`; a task that cannot run here is named in `bo.skipped` instead. Returns the
// exit code of a failure, or nothing.
std::optional<int> add_entry(const fs::path& d, result<task> t, const bench_cli& o, bool klineage, context& ctx,
                             search::bench_options& bo, std::vector<search::bench_entry>& entries) {
  if (!t && gate::is_problem_file(d)) {
    // A problem file that does not import is the problem's failure, not a candidate's.
    std::string why = t.error().message;
    why = why.substr(why.find(": ") + 2);
    bo.skipped.push_back(d.filename().string() + ": cannot be imported (" + why.substr(0, why.find('\n')) + ")");
    return std::nullopt;
  }
  if (!t) return fail_with(t.error().message, 2);
  if (o.shipped == shipped_suite::source && t->role != task_role::source) return std::nullopt;
  if (o.shipped == shipped_suite::heldout && t->role != task_role::heldout) return std::nullopt;
  if (t->plat == platform::cuda && !ctx.gpu) {
    bo.skipped.push_back(t->name + ": CUDA task, no GPU here");
    return std::nullopt;
  }
  // Given candidates on a KernelBench problem without a baseline kernel: the problem's own Model,
  // eager PyTorch, is the baseline they are paired against, on the task's platform (--kernel and
  // --strategy need the task's own kernels; KLineage's protocol times do_bench-style).
  const std::optional<kernel_bundle> eager =
      t->baseline.empty() && !o.candidates.empty() && !klineage ? gate::eager_baseline(*t) : std::nullopt;
  if (t->baseline.empty() && !eager) {
    bo.skipped.push_back(t->name + ": no baseline kernel (a bare problem file: wrap it with a task.toml and "
                                   "kernels/; with --candidates, a KernelBench problem is paired against eager PyTorch)");
    return std::nullopt;
  }
  search::bench_entry e;
  if (eager) {
    e.baseline = *eager;
  } else {
    auto base = find_task_kernel(*t, t->baseline);
    if (!base) return fail_with(base.error().message, 2);
    e.baseline = std::move(*base);
  }
  std::error_code ec;
  if (!o.kernel.empty()) {
    if (auto p = find_kernel(*t, o.kernel)) {
      auto got = load_bundle(*p);
      if (!got) return fail_with(got.error().message, 2);
      e.candidate = std::move(*got);
    }
  } else if (!o.candidates.empty()) {
    for (const fs::path& p : {fs::path(o.candidates) / t->name, fs::path(o.candidates) / (t->name + ".cpp"),
                             fs::path(o.candidates) / (t->name + ".cu"), fs::path(o.candidates) / (t->name + ".py")}) {
      if (!fs::exists(p, ec)) continue;
      auto got = find_task_kernel(*t, p.string());
      if (!got) return fail_with(got.error().message, 2);
      e.candidate = std::move(*got);
      break;
    }
  }
  e.t = std::move(*t);
  entries.push_back(std::move(e));
  return std::nullopt;
}

// The suite's table (and --markdown's file), or its JSON.
int print_bench(const bench_cli& o, const search::bench_result& res, const search::bench_options& bo,
                const nlohmann::json& built) {
  const std::string md = search::bench_markdown(res, bo);
  if (!o.markdown.empty()) {
    std::ofstream out(o.markdown, std::ios::trunc);
    out << md;
    if (!out) return fail_with("cannot write " + o.markdown, 1);
  }
  if (o.json) {
    json j = json::parse(res.r.summary);
    j["schema"] = "lathe.bench/1";
    j["run"] = res.r.id;
    if (!built.is_null()) j["prebuild"] = built;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", md.c_str());
  }
  return 0;
}

// --executor slurm: one verifier whose evaluations are Slurm jobs, serving every lane (nullptr:
// local). Its ledger is named by what decides the suite's evaluations, so that the same command
// run again after a kill resumes (cli/executor_slurm.h).
result<std::unique_ptr<slurm_verifier>> bench_on_slurm(const context& ctx, const bench_cli& o,
                                                      search::bench_options& bo) {
  auto chosen = resolve_executor(ctx.ws, o.exec);
  if (!chosen) return tl::unexpected(chosen.error());
  if (chosen->kind != executor_kind::slurm) return nullptr;
  if (!o.strategy.empty() || o.protocol == search::bench_protocol::klineage)
    return fail(errc::invalid_argument, "--executor slurm gates given candidates (--candidates, --kernel) with the lathe "
                                        "protocol; --strategy and --protocol klineage run locally");
  std::error_code ec;
  const std::string suite = o.shipped ? o.suite : fs::absolute(o.suite, ec).string();
  const std::string from = o.candidates.empty() ? "kernel " + o.kernel : fs::absolute(o.candidates, ec).string();
  auto made = open_slurm_executor(ctx, *chosen, cat("bench\n", suite, "\n", from, "\n", o.check_only ? "check-only" : "timed", "\n",
                                                   join(eval_flags(o.gate), " ")), eval_flags(o.gate));
  if (made) bo.lanes.assign(static_cast<size_t>(std::max(1, o.in_flight)), made->get());
  return made;
}

// --cpu-slots N: the cores split into N slots, each evaluation on a free one with its workers
// pinned there (verify/slot_verifier.h); at least N evaluations in flight, one per slot.
// nullptr without --cpu-slots.
result<std::unique_ptr<gate::cpu_slot_pool>> cpu_slots(const bench_cli& o) {
  if (o.cpu_slots <= 0) return nullptr;
  if (!o.strategy.empty() || o.protocol == search::bench_protocol::klineage)
    return fail(errc::invalid_argument,
                "--cpu-slots gates given candidates on slots; --strategy and --protocol klineage run one at a time");
  return make_cpu_slot_pool(o.cpu_slots);
}

int run_bench_cmd(const common_options& common, const bench_cli& o) {
  const int sources = !o.candidates.empty() + !o.kernel.empty() + !o.strategy.empty();
  if (sources != 1)
    return fail_with("bench needs exactly one of --candidates DIR, --kernel NAME and --strategy S", 2);
  const bool klineage = o.protocol == search::bench_protocol::klineage;
  const int32_t runs = o.runs > 0 ? o.runs : (klineage ? 3 : 1);
  if (!klineage && runs != 1) return fail_with("--runs is for --protocol klineage (N independent runs per task)", 2);
  std::optional<search::strategy> strat;
  if (!o.strategy.empty()) {
    strat = search::parse_strategy(o.strategy);
    if (!strat) return fail_with("unknown strategy '" + o.strategy + "' (" + search::strategy_words + ")", 2);
  }
  auto limits = llm::parse_budget(o.budget);
  if (!limits) return fail_with("--budget: " + limits.error(), 2);
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  auto dirs = suite_dirs(o.suite, o.shipped, ctx->where);
  if (!dirs) return fail_with(dirs.error().message, 2);
  if (!o.candidates.empty() && !fs::is_directory(o.candidates))
    return fail_with("--candidates " + o.candidates + ": not a directory", 2);

  search::bench_options bo;
  bo.suite = o.suite;
  bo.candidates = !o.strategy.empty() ? "optimize --strategy " + o.strategy + " --budget " + o.budget + " from each baseline"
                  : o.candidates.empty() ? "each task's kernels/" + o.kernel
                                         : o.candidates;
  bo.protocol = o.protocol;
  bo.runs = runs;
  bo.check_only = o.check_only;
  if (o.in_flight > 1 && (!o.strategy.empty() || klineage))
    return fail_with("--in-flight gates given candidates at once; --strategy and --protocol klineage run one at a time", 2);
  auto pool = cpu_slots(o);
  if (!pool) return fail_with(pool.error().message, 2);
  const int32_t in_flight = *pool ? std::max(o.in_flight, o.cpu_slots) : o.in_flight;
  bo.in_flight = in_flight;
  std::vector<search::bench_entry> entries;
  // Read --in-flight at a time (bench_load.h: each problem file starts its oracle), then taken in
  // the suite's order: the same entries, skips and first failure as one at a time.
  auto loaded = load_suite(
      *dirs, in_flight,
      [&](const fs::path& d) { return find_task(d.string(), ctx->where, problem_platform_word(o.platform_word)); },
      [](const fs::path& d, const result<task>& t) { return !t && !gate::is_problem_file(d); });
  for (size_t i = 0; i < dirs->size() && loaded[i]; ++i)
    if (auto failed = add_entry((*dirs)[i], std::move(*loaded[i]), o, klineage, *ctx, bo, entries)) return *failed;
  if (entries.empty()) return fail_with("no task of suite '" + o.suite + "' can run here: " + join(bo.skipped, "; "), 2);
  const auto local = pooled_verifier(make_gate_hooks(*ctx, o.gate), pool->get());
  auto slurm = bench_on_slurm(*ctx, o, bo);
  if (!slurm) return fail_with(slurm.error().message, 2);
  if (*slurm && *pool) return fail_with("--cpu-slots splits this host's cores; with --executor slurm, Slurm places the jobs", 2);
  lineages::verifier& v = *slurm ? static_cast<lineages::verifier&>(**slurm) : *local;
  // --in-flight: a context (its own store connection) and a verifier per evaluation at once; this
  // thread keeps `ctx`'s connection for the run's events (search/bench.h bench_options::lanes).
  std::list<context> lane_ctx;
  std::list<std::unique_ptr<lineages::verifier>> lane_v;
  for (int32_t k = 0; in_flight > 1 && !*slurm && k < in_flight; ++k) {
    auto c = open_context(ws, true);
    if (!c) return fail_with(c.error().message, 2);
    lane_ctx.push_back(std::move(*c));
    lane_v.push_back(pooled_verifier(make_gate_hooks(lane_ctx.back(), o.gate), pool->get()));
    bo.lanes.push_back(lane_v.back().get());
  }
  if (!o.json)
    bo.progress = [](const search::bench_row& r) {
      std::fprintf(stderr, "… %s: %s%s\n", r.result.task.c_str(), to_string(r.result.status),
                   r.result.speedup ? (" " + std::to_string(*r.result.speedup) + "x").c_str() : "");
    };
  if (!o.candidates.empty() && !klineage) {
    const auto kb = kernelbench_candidates(o.candidates);
    if (!kb.empty()) return run_kernelbench_layout(*ctx, o, kb, entries, bo, v);
  }
  nlohmann::json built;  // given candidates (not --strategy's, which are written as they go)
  if (!strat && !*slurm) {  // over Slurm, each job builds into the shared cache
    std::vector<std::pair<const task*, kernel_bundle>> ahead;
    for (const auto& e : entries)
      if (e.candidate) ahead.emplace_back(&e.t, *e.candidate);
    built = prebuild_suite(*ctx, o.gate, ahead, o.json);
  }
  const search::bench_producer produce =
      strat ? optimizer(*ctx, o, *strat, *limits, v) : search::given_candidates();
  auto res = klineage ? search::run_bench_klineage(entries, produce, do_bench_timer(*ctx, o), *ctx->db, bo)
                      : search::run_bench(entries, produce, v, *ctx->db, bo);
  if (!res) return fail_with(res.error().message, 1);
  if (*slurm) close_ledger((*slurm)->ledger(), res->r.id);
  return print_bench(o, *res, bo, built);
}

}  // namespace

void add_bench(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<bench_cli>();
  CLI::App* b = app.add_subcommand("bench", "gate a suite's candidates against each task's baseline: per task outcome and paired speedup, and the suite's aggregates");
  b->add_option("suite", o->suite, "all | source | heldout (the shipped tasks), or a directory of task directories and PyTorch problem files")->required();
  b->add_option("--candidates", o->candidates,
                "a directory with one candidate per task: DIR/<task> (bundle), DIR/<task>.cpp, .cu or .py; or "
                "KernelBench's layout: level_<L>_problem_<P>_sample_<S>_kernel.py, several samples per problem");
  b->add_option("--level", o->level, "KernelBench's layout: the level of the candidates (default: the suite folder's levelN)");
  b->add_option("--kernelbench-json", o->kernelbench_json,
                "KernelBench's layout: also write the results in the shape of KernelBench's eval results file");
  b->add_option("--kernel", o->kernel, "instead: each task's own kernels/<NAME> as its candidate (e.g. expert)");
  b->add_option("--strategy", o->strategy,
                "instead: optimize every task from its baseline with this strategy (skills | none | "
                "forward-memory | expert-source); its figure is the run's final paired best vs baseline");
  b->add_option("--budget", o->budget, "with --strategy: each task's optimize budget (as lathe optimize)")
      ->capture_default_str();
  b->add_option("--proposer", o->proposer, "with --strategy: rules | llm | auto")->capture_default_str();
  add_enum_option(b, "--protocol", o->protocol, search::bench_protocol::klineage,
                  "lathe: one paired series per task; klineage: KLineage's Appendix D (--runs independent runs "
                  "per task, 3 correctness seeds, do_bench timing of the kernel and the baseline, the "
                  "success-only geometric mean with the failure count, source and held-out tasks apart)");
  b->add_option("--runs", o->runs, "klineage: independent runs per task (default 3)");
  b->add_option("--max-time", o->gate.max_time, "longest paired timing series per task, seconds")->capture_default_str();
  add_platform_option(b, o->platform_word, "cpu");
  b->add_flag("--refuse-torch-fallback", o->gate.refuse_torch_fallback,
              "a ModelNew calling the reference's own torch ops in forward is forbidden (else reported)");
  b->add_flag("--check-only", o->check_only,
              "correctness only: each candidate checked, never timed (no speedups; nothing is fast)");
  b->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series");
  b->add_option("--in-flight", o->in_flight,
                "given candidates: this many evaluations at once (builds, checks and inputs overlap; timing on a "
                "device stays one at a time); results in the suite's order")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  add_executor_options(b, o->exec);
  add_cpu_slots_option(b, o->cpu_slots, "given candidates, an evaluation on each free slot at once");
  b->add_option("--markdown", o->markdown, "also write the table and the aggregates as Markdown to this file");
  b->add_flag("--json", o->json, "print as JSON (schema lathe.bench/1)");
  b->footer("fast_p counts every task of the suite in its denominator (KernelBench's definition); speedup means, "
            "geometric mean and median are over correct tasks only; tasks without a candidate are listed as such. "
            "docs/bench.md defines every aggregate.\nExit code 0: the suite ran (whatever its results); 1: it failed; 2: usage.");
  b->callback([o, &common, &exit_code] {
    o->shipped = parse_enum(o->suite, shipped_suite::heldout);
    exit_code = run_bench_cmd(common, *o);
  });
}

}  // namespace lathe::cli
