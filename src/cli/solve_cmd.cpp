// lathe solve SUITE_DIR --out DIR (issue 44, item 4; docs/solve.md): a folder of KernelBench
// problems, each optimized in language `modelnew` under a per-problem budget, the best verified
// ModelNew per problem written in KernelBench's layout with KernelBench's results JSON and
// lathe's table. The verb wires one optimize run per problem (the proposer session, the gate) and
// prints; search/solve.h keeps the loop, its state (resumable after kill -9) and the aggregates.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "agent/kernel_text.h"
#include "cli/bench_kernelbench.h"
#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/enum_option.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/proposer_session.h"
#include "cli/search_language.h"
#include "cli/stored_options.h"
#include "cli/verbs.h"
#include "core/text.h"
#include "search/optimize.h"
#include "search/solve.h"
#include "spec/safe_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::cli {
namespace {

inline constexpr const char* results_name = "eval_results.json";  // KernelBench's eval results file

struct solve_cli {
  std::string suite, out, strategy = "skills", budget = "steps=2", proposer = "auto";
  std::string platform_word;  // --platform: where the problems run ("": cpu)
  int32_t sample = 0, level = 0, max_repairs = 1, max_stall = 0, jobs = 1;
  int32_t cpu_slots = 0;  // --cpu-slots N (cli/cpu_slots.h); 0: none, the whole machine unpinned
  bool json = false, quiet = false;
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick
};

// What one problem's optimize run needs besides the problem: the context, the parsed options.
struct solve_wiring {
  context& ctx;
  const solve_cli& o;
  search::strategy strat;
  budget limits;
  lineages::verifier& v;
  std::optional<fs::path> workspace;  // --workspace, for a problem's own context (--jobs)
  gate::cpu_slot_pool* pool = nullptr;  // --cpu-slots: every problem's evaluations on its slots
};

// The arguments the run stores (optimize's keys, so that `lathe runs show` reads them alike).
std::string run_args(const solve_cli& o, const fs::path& problem, const kernel_bundle& start,
                     const proposer_session& s) {
  json args = {{"task", problem.string()}, {"kernel", ""}, {"language", "modelnew"},
               {"strategy", o.strategy}, {"ablate", "none"}, {"budget", o.budget}, {"max_repairs", o.max_repairs},
               {"max_stall", o.max_stall}, {"no_expert", true}, {"solve", o.suite}, {"start_hash", start.hash},
               {"proposer", o.proposer}, {"config", s.decision.config_source}, {"cpu_slots", o.cpu_slots}};
  if (!o.platform_word.empty()) args["platform"] = o.platform_word;
  args.update(stored_json(o.gate, stored_timing));
  return args.dump();
}

// The last line of a message that may end a Python traceback: the exception, what a user reads
// first (`lathe task show PROBLEM` prints the whole traceback).
std::string last_line(const std::string& s) {
  size_t end = s.find_last_not_of(" \n");
  if (end == std::string::npos) return s;
  const size_t nl = s.rfind('\n', end);
  const std::string line = s.substr(nl == std::string::npos ? 0 : nl + 1, end - (nl == std::string::npos ? 0 : nl + 1) + 1);
  return nl == std::string::npos ? line : line + " (`lathe task show` prints the traceback)";
}

// One problem: imported as a task, its Model as a ModelNew the start, one optimize run.
search::solve_attempt solve_one(solve_wiring& w, const search::solve_problem& p, const search::solve_run& id) {
  const auto failure = [&](const std::string& why, const std::string& run = "") {
    return search::solve_failure(p, w.o.sample, why, run);
  };
  // --jobs: a context of its own per problem (its own store connection, gate configuration and
  // verifier), so that the problems' threads share nothing but the workspace's files.
  std::optional<context> own;
  std::unique_ptr<lineages::verifier> own_v;
  context* ctx = &w.ctx;
  lineages::verifier* v = &w.v;
  if (w.o.jobs > 1) {
    auto c = open_context(w.workspace, true);
    if (!c) return failure("no context: " + c.error().message);
    own.emplace(std::move(*c));
    own_v = pooled_verifier(make_gate_hooks(*own, w.o.gate), w.pool);  // the one pool of every problem
    ctx = &*own;
    v = own_v.get();
  }
  auto t = find_task(p.file.string(), ctx->where, problem_platform_word(w.o.platform_word));
  if (!t) return failure("the problem does not import: " + last_line(t.error().message));
  auto sl = pick_search_language(*t, "modelnew");
  if (!sl) return failure(sl.error().message);
  if (!sl->eager) return failure("the problem's Model could not be written as a ModelNew");
  if (t->plat == platform::cuda && !ctx->gpu) return failure("the problem runs on CUDA and there is no usable GPU here");
  const std::string& run_id = id.id;
  // A run a kill interrupted goes on where the store has it (its recorded evaluations and model
  // calls answered from the store); one that never reached the store starts under its id.
  auto stored = ctx->db->get_run(run_id);
  const bool resume = id.interrupted && stored && stored->has_value();
  llm::amounts spent;
  if (resume) {
    auto secs = search::resume_seconds(*ctx->db, run_id);
    if (!secs) return failure("run " + run_id + " cannot be resumed: " + secs.error().message, run_id);
    spent.seconds = *secs;
  }
  auto session = open_proposer(*ctx, *t, w.o.proposer, run_id, w.limits, spent, resume);
  if (!session) return failure("no proposer: " + session.error().message);
  search::optimize_kernels ks;
  ks.start = *sl->eager;
  search::optimize_options so;
  so.strat = w.strat;
  so.max_repairs = w.o.max_repairs;
  so.max_stall = w.o.max_stall;
  so.measure_expert = false;
  so.tgt = t->plat == platform::cuda ? *ctx->gpu : ctx->tgt;
  so.target_text = agent::target_text(so.tgt);
  so.proposer_label = (*session)->label();
  if (resume) so.resume_run = run_id;
  else so.run_id = run_id;
  so.args_json = run_args(w.o, p.file, *ks.start, **session);
  if (!w.o.quiet)
    so.progress = [n = p.problem](const search::optimize_progress& pr) {
      std::fprintf(stderr, "      … [problem %d, step %d] %s\n", n, pr.step, pr.message.c_str());
    };
  auto res = search::optimize(*t, ks, *v, *(*session)->proposer, *ctx->db, *(*session)->budget, so);
  if (!res) return failure("the optimize run failed: " + res.error().message, run_id);
  return search::solve_attempt_of(*res, p, w.o.sample, *ctx->db);
}

std::string ratio_or_dash(const std::optional<double>& r) {
  if (!r) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", *r);
  return b;
}

// "1.234x [1.10, 1.35] faster", "1.000x (the eager start)", "-".
std::string best_text(const search::solve_record& r) {
  if (r.status != search::solve_status::solved) return "-";
  if (r.steps == 0) return "1.000x (the eager start)";
  std::string s = ratio_or_dash(r.speedup);
  if (r.ci_low && r.ci_high) {
    char b[48];
    std::snprintf(b, sizeof b, " [%.3f, %.3f]", *r.ci_low, *r.ci_high);
    s += b;
  }
  return s + " " + (r.decided ? std::string(to_string(*r.decided)) : "no decision") + " (" + r.outcome + ")";
}

void print_progress(const search::solve_progress& pr) {
  const search::solve_problem& p = *pr.problem;
  const std::string head = cat("… [", std::to_string(pr.index), "/", std::to_string(pr.total), "] problem ",
                               std::to_string(p.problem), " (", p.file.filename().string(), ")");
  if (pr.what == search::solve_event::started) {
    std::fprintf(stderr, "%s: %s run %s\n", head.c_str(),
                 pr.run->interrupted ? "interrupted before: resuming" : "optimizing in", pr.run->id.c_str());
    return;
  }
  const search::solve_record& r = *pr.record;
  const std::string result = r.status == search::solve_status::solved
                                 ? cat("solved, ", std::to_string(r.steps), " step(s) accepted, best vs eager ",
                                       best_text(r), ", ", std::to_string(r.calls), " model call(s)")
                                 : "failed: " + r.message;
  if (pr.what == search::solve_event::skipped)
    std::fprintf(stderr, "%s: finished before (%s), skipped: %s\n", head.c_str(), search::solve_state_name,
                 result.c_str());
  else
    std::fprintf(stderr, "%s: %s (%.0f s)\n", head.c_str(), result.c_str(), r.seconds);
}

// KernelBench's results file through bench's writer (cli/bench_kernelbench.h): one "sample" run
// whose rows are the problems, each with the final series' evaluation (runtimes from the store).
json results_json(const std::vector<search::solve_record>& records, int32_t sample, const store& db) {
  kernelbench_sample_run run;
  run.sample = sample;
  std::map<std::string, int> problem_of;
  for (const auto& r : records) {
    search::bench_row row;
    row.result.task = r.file;
    problem_of[r.file] = r.problem;
    const bool solved = r.status == search::solve_status::solved;
    row.result.status = solved ? search::task_status::correct : search::task_status::failed;
    // A run that accepted no step submits the eager start: correct, speedup 1 exactly, not timed.
    row.result.outcome = !solved ? "error" : r.steps == 0 ? "ok" : r.outcome;
    row.result.speedup = solved && r.steps == 0 ? std::optional<double>(1.0) : r.speedup;
    row.result.ci_low = r.ci_low;
    row.result.ci_high = r.ci_high;
    row.message = r.message;
    row.evaluation = r.evaluation;
    row.run = r.run;
    run.result.rows.push_back(row);
  }
  return kernelbench_results_json({run}, problem_of, db);
}

// eval_results.json in the out folder, under a fresh name renamed over the old one.
result<void> write_results(const fs::path& out, const std::vector<search::solve_record>& records, int32_t sample,
                           const store& db) {
  const json results = results_json(records, sample, db);
  if (auto wr = gate::write_beneath(out, results_name, results.dump(2) + "\n", gate::write_mode::replace); !wr)
    return fail(errc::io_error, "cannot write " + (out / results_name).string() + ": " + wr.error().message);
  return {};
}

json summary_json(const search::solve_summary& s) {
  json fast = json::array();
  for (const auto& f : s.fast)
    fast.push_back({{"p", f.p}, {"fraction", f.fraction}, {"count", f.count}, {"count_point", f.count_point}});
  return {{"problems", s.problems},
          {"correct", s.correct},
          {"failed", s.failed},
          {"decided_faster", s.decided_faster},
          {"fast_p", fast},
          {"geomean", s.geomean ? json(*s.geomean) : json(nullptr)},
          {"torch_compile", nullptr},
          {"calls", s.calls},
          {"tokens", s.tokens},
          {"usd", s.usd},
          {"seconds", s.seconds}};
}

void print_table(const solve_cli& o, const search::solve_result& res, const search::solve_summary& s) {
  std::printf("solve     %s -> %s (sample %d): %d problems, %d finished before\n", o.suite.c_str(), o.out.c_str(),
              o.sample, s.problems, res.skipped);
  std::printf("%-8s %-28s %-7s %-6s %-44s %s\n", "problem", "file", "status", "steps", "best vs eager", "run");
  for (const auto& r : res.records)
    std::printf("%-8d %-28s %-7s %-6s %-44s %s\n", r.problem, r.file.substr(0, 28).c_str(), to_string(r.status),
                r.status == search::solve_status::solved ? std::to_string(r.steps).c_str() : "-",
                (r.status == search::solve_status::solved ? best_text(r) : r.message.substr(0, 44)).c_str(),
                r.run.empty() ? "-" : r.run.c_str());
  std::printf("correct   %d of %d (%d failed)\n", s.correct, s.problems, s.failed);
  std::string fast;
  for (const auto& f : s.fast) {
    char b[64];
    std::snprintf(b, sizeof b, "  fast_%.1f %d/%d", f.p, f.count, s.problems);
    fast += b;
  }
  std::printf("fast_p  %s   (decided gains only: the final series faster, its interval above p)\n", fast.c_str());
  std::printf("geomean   %s over eager, over the %d correct problems (a speedup not decided counts as 1.0)\n",
              ratio_or_dash(s.geomean).c_str(), s.correct);
  std::printf("compile   torch.compile as a baseline: not measured\n");
  std::printf("used      %lld model calls, %lld tokens, $%.4f, %.0f s\n", static_cast<long long>(s.calls),
              static_cast<long long>(s.tokens), s.usd, s.seconds);
  std::printf("written   %s/level_<L>_problem_<P>_sample_%d_kernel.py, %s, %s\n", o.out.c_str(), o.sample,
              results_name, search::solve_state_name);
}

// The options that shape every problem's run, in words (the state keeps them: a resume gives
// the same, so that one folder's problems were solved alike and the interrupted run goes on as it
// started).
std::string settings_text(const solve_cli& o, const budget& limits) {
  char t[32];
  std::snprintf(t, sizeof t, "%g", o.gate.max_time);
  return cat("strategy ", o.strategy, ", budget ", llm::budget_text(limits), ", proposer ", o.proposer,
             ", max-repairs ", std::to_string(o.max_repairs), ", max-stall ", std::to_string(o.max_stall),
             ", max-time ", t, o.gate.quick ? ", quick" : "",
             o.platform_word == "cuda" ? ", platform cuda" : "",  // cpu, the default, as before it had a name
             // Workers on a slot run with its cores' threads: a folder is solved with one split
             // (none, as before --cpu-slots, says nothing).
             o.cpu_slots > 0 ? ", cpu-slots " + std::to_string(o.cpu_slots) : std::string());
}

int run_solve(const common_options& common, solve_cli o) {
  if (o.out.empty()) return fail_with("solve needs --out DIR (where the ModelNew files and the results go)", 2);
  if (o.sample < 0) return fail_with("--sample must be 0 or more", 2);
  if (o.jobs < 1) return fail_with("--jobs must be 1 or more", 2);
  auto problems = search::solve_problems(o.suite, o.level > 0 ? std::optional<int32_t>(o.level) : std::nullopt);
  if (!problems) return fail_with(problems.error().message, 2);
  auto strat = search::parse_strategy(o.strategy);
  if (!strat) return fail_with("unknown strategy '" + o.strategy + "' (" + search::strategy_words + ")", 2);
  auto limits = llm::parse_budget(o.budget);
  if (!limits) return fail_with("--budget: " + limits.error(), 2);
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  // --cpu-slots N: at least N problems at once, each evaluation on a free slot of one pool.
  if (o.cpu_slots > 0 && o.platform_word == "cuda")
    return fail_with("--cpu-slots splits this host's CPU cores among evaluations; with --platform cuda the GPU is the "
                     "slot (one timing at a time under its device lock): leave --cpu-slots out",
                     2);
  auto pool = make_cpu_slot_pool(o.cpu_slots);
  if (!pool) return fail_with(pool.error().message, 2);
  o.jobs = std::max(o.jobs, o.cpu_slots);
  const auto v = pooled_verifier(make_gate_hooks(*ctx, o.gate), pool->get());
  solve_wiring w{*ctx, o, *strat, *limits, *v, ws, pool->get()};

  std::error_code ec;
  search::solve_options so;
  so.out = fs::absolute(o.out, ec);
  so.suite = fs::weakly_canonical(fs::absolute(o.suite, ec), ec).string();
  so.sample = o.sample;
  so.settings = settings_text(o, *limits);
  so.jobs = o.jobs;
  so.progress = print_progress;
  so.finished = [&](const std::vector<search::solve_record>& done) {
    std::vector<search::solve_record> sorted = done;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.problem < b.problem; });
    if (auto wr = write_results(so.out, sorted, o.sample, *ctx->db); !wr)
      std::fprintf(stderr, "lathe: %s\n", wr.error().message.c_str());
  };
  std::fprintf(stderr, "… solve %s: %zu problems, each optimized in modelnew (strategy %s, budget %s per problem)\n",
               o.suite.c_str(), problems->size(), o.strategy.c_str(), llm::budget_text(*limits).c_str());
  auto res = search::solve(*problems, [&w](const search::solve_problem& p, const search::solve_run& id) { return solve_one(w, p, id); }, so);
  // An out folder of another suite, sample or options is the command line's mistake (2).
  if (!res) return fail_with(res.error().message, res.error().code == errc::invalid_argument ? 2 : 1);

  const search::solve_summary s = search::summarize_solve(res->records);
  if (auto wr = write_results(so.out, res->records, o.sample, *ctx->db); !wr) return fail_with(wr.error().message, 1);
  if (o.json) {
    json j = {{"schema", "lathe.solve/1"},
              {"suite", so.suite},
              {"out", so.out.string()},
              {"level", problems->front().level},
              {"sample", o.sample},
              {"strategy", o.strategy},
              {"budget", llm::budget_text(*limits)},
              {"skipped", res->skipped},
              {"problems", res->records},
              {"aggregates", summary_json(s)},
              {"results", (so.out / results_name).string()},
              {"state", (so.out / search::solve_state_name).string()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(o, *res, s);
  }
  return 0;
}

}  // namespace

void add_solve(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<solve_cli>();
  CLI::App* cmd = app.add_subcommand(
      "solve", "a folder of KernelBench problems: each optimized in modelnew, the best verified ModelNew per problem "
               "written in KernelBench's layout with its results JSON");
  cmd->add_option("suite", o->suite, "a folder of KernelBench problem files (<P>_<Name>.py), named level<L>")->required();
  cmd->add_option("--out", o->out,
                  "where level_<L>_problem_<P>_sample_<S>_kernel.py, eval_results.json and the state go (the same "
                  "folder again resumes)")
      ->required();
  cmd->add_option("--sample", o->sample, "the sample number S in the file names")->capture_default_str();
  cmd->add_option("--level", o->level, "the level L (default: from the folder's name, level1 -> 1)");
  cmd->add_option("--budget", o->budget,
                  "per problem: steps=N,evals=N,tokens=N[k|M],usd=X,time=S[s|m|h] (each run ends at the first)")
      ->capture_default_str();
  cmd->add_option("--strategy", o->strategy, "skills | none | forward-memory | expert-source (as optimize's)")
      ->capture_default_str();
  cmd->add_option("--proposer", o->proposer, "rules | llm | auto (auto: the model in lathe.toml, else the rule engine)")
      ->capture_default_str();
  cmd->add_option("--max-repairs", o->max_repairs, "repair rounds after a gate failure")->capture_default_str();
  cmd->add_option("--max-stall", o->max_stall, "end a problem's run after this many steps in a row without an "
                                               "accepted one (0: never)")
      ->capture_default_str();
  cmd->add_option("--max-time", o->gate.max_time, "longest paired timing series per evaluation, seconds")
      ->capture_default_str();
  cmd->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series");
  add_platform_option(cmd, o->platform_word, "cpu");
  cmd->add_option("--jobs", o->jobs,
                  "problems run at once, each on a thread with its own model calls and builds (timings still take "
                  "turns: one per device at a time)")
      ->capture_default_str();
  add_cpu_slots_option(cmd, o->cpu_slots, "each problem's evaluations on a free slot (--jobs raised to N)");
  cmd->add_flag("--json", o->json, "print the result as JSON (schema lathe.solve/1)");
  cmd->add_flag("--quiet", o->quiet, "only one progress line per problem on stderr, not each run's own");
  cmd->footer(
      "Each problem is one `lathe optimize PROBLEM --language modelnew` run from its own Model as a ModelNew (eager\n"
      "PyTorch), paired against it; a problem where no step is accepted gets that start, so every file is a valid\n"
      "submission. fast_p counts decided gains only; the geomean counts a speedup the gate did not decide as 1.0.\n"
      "Kill it at any time: the same command again skips the problems finished (each written the moment it\n"
      "finished) and resumes the interrupted problem's optimize run (no finished evaluation or model call repeated).\n"
      "Exit code 0: every problem was run (a problem that fails is its own row); 1: the loop failed; 2: usage, or\n"
      "an out folder holding another suite's, sample's or options' solve.");
  cmd->callback([o, &common, &exit_code] { exit_code = run_solve(common, *o); });
}

}  // namespace lathe::cli
