// lathe optimize TASK [KERNEL] [--strategy S] [--budget …] [--resume RUN] (DESIGN.md "Command
// line"; docs/optimize.md). The verb wires the context, the gate, the proposer with its ledger and
// the store together, shows progress and prints; search/ decides.
#include <CLI/CLI.hpp>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "agent/kernel_text.h"
#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/enum_option.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/lineage_view.h"
#include "cli/proposer_session.h"
#include "cli/resume.h"
#include "cli/search_language.h"
#include "cli/stored_options.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "search/optimize.h"
#include "spec/bundle.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct optimize_cli {
  std::string task, kernel, language, strategy = "skills", ablate = "none", budget = "steps=12,time=10m", resume,
      proposer = "auto", out_dir, propose_only, gate_batch;
  std::string platform_word;  // --platform: where a bare problem file runs ("": what the kernel implies, cpu)
  int32_t max_repairs = 1, max_stall = 0;
  int32_t cpu_slots = 0;  // --cpu-slots N (cli/cpu_slots.h); 0: none, the whole machine unpinned
  bool no_free = false, no_expert = false, json = false, quiet = false, profile = false, trust_kernel = false;
  bool no_time = false;  // --no-time: every evaluation checks only (gate_settings::time), no step accepted
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick
};

// The options a run stores and a resumed one reads back (besides the proposer, and the start
// kernel's hash, which is checked rather than read).
const stored_options<optimize_cli> stored = {
    {"task", &optimize_cli::task},
    {"kernel", &optimize_cli::kernel},
    {"language", &optimize_cli::language},
    {"platform", &optimize_cli::platform_word},
    {"strategy", &optimize_cli::strategy},
    {"ablate", &optimize_cli::ablate},
    {"budget", &optimize_cli::budget},
    {"max_repairs", &optimize_cli::max_repairs},
    {"max_stall", &optimize_cli::max_stall},
    {"profile", &optimize_cli::profile},
    {"trust_kernel", &optimize_cli::trust_kernel},
    {"no_free", &optimize_cli::no_free},
    {"no_expert", &optimize_cli::no_expert},
    {"no_time", &optimize_cli::no_time},
    {"cpu_slots", &optimize_cli::cpu_slots},
};

// The task's kernels/<name> when it has one (spec/task_file.h find_kernel) and it loads.
std::optional<kernel_bundle> optional_kernel(const task& t, const std::string& name) {
  auto p = find_kernel(t, name);
  if (!p) return std::nullopt;
  auto k = load_bundle(*p);
  return k ? std::optional<kernel_bundle>(std::move(*k)) : std::nullopt;
}

std::string limit_text(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

std::string progress_line(const search::optimize_progress& p) {
  const budget& b = p.limits.run;
  char head[160];
  std::snprintf(head, sizeof head, "[step %d] best %.3fx · steps %lld/%s · evals %lld/%s · %.0f s", p.step,
                p.best_ratio, static_cast<long long>(p.used.steps), limit_text(b.steps).c_str(),
                static_cast<long long>(p.used.evals), limit_text(b.evals).c_str(), p.used.seconds);
  std::string line = head;
  if (b.seconds) line += cat(" of ", std::to_string(static_cast<long long>(*b.seconds)), " s");
  if (p.used.tokens) line += cat(" · ", std::to_string(p.used.tokens), " tokens");
  if (p.eta_seconds) line += cat(" · ETA ", std::to_string(static_cast<long long>(std::ceil(*p.eta_seconds))), " s");
  return line + " · " + p.message;
}

void print_result(const search::optimize_result& r, const task& t, const std::string& label,
                  const search::optimize_options& so) {
  std::printf("optimize  %s: strategy %s, ablation %s\n", t.name.c_str(), to_string(so.strat),
              to_string(so.abl).c_str());
  std::printf("proposer  %s\n", label.c_str());
  std::printf("start     %s %s (%s)\n", r.start.name.empty() ? "-" : r.start.name.c_str(),
              r.start.hash.substr(0, 12).c_str(), search::start_text(r.how, r.naive_because).c_str());
  for (const auto& s : r.steps) {
    std::vector<std::string> added;
    for (const auto& f : s.tr.added) added.push_back("+" + f.name + "@" + f.locus);
    std::printf("step %-4d %-34s %-28s %8s (first %s)  %s\n", s.step, s.source.substr(0, 34).c_str(),
                to_string(s.tr.prov).substr(0, 28).c_str(), ratio_text(s.tr.speedup).c_str(),
                ratio_text(s.first_ratio).c_str(), join(added, " ").c_str());
  }
  if (r.steps.empty()) std::printf("steps     none accepted (%d proposals, %d rejected)\n", r.proposals, r.rejected);
  else std::printf("          %d proposals, %d rejected\n", r.proposals, r.rejected);
  std::printf("stop      %s: %s\n", to_string(r.stop), r.stop_detail.c_str());
  std::printf("best      %s%s\n", r.best.hash.substr(0, 12).c_str(),
              r.best_dir.empty() ? "" : ("  written to " + r.best_dir).c_str());
  std::printf("measured  best vs start %s%s", r.best_vs_start ? ratio_text(r.best_vs_start).c_str() : "-",
              r.steps.empty()                     ? " (no step accepted: the start kernel is the best)"
              : r.final_best_outcome              ? cat(" (the fresh paired series did not decide: ",
                                                        to_string(*r.final_best_outcome),
                                                        "; each accepted step was re-measured)").c_str()
                                                  : " (fresh paired series)");
  if (r.expert_vs_start) std::printf("; expert vs start %s", ratio_text(r.expert_vs_start).c_str());
  if (r.gap_recovered) std::printf("; gap recovered %.0f%% (log space)", 100 * *r.gap_recovered);
  std::printf("\n");
  std::printf("used      %lld steps, %lld evaluations, %lld model calls, %lld tokens, $%.4f, %.1f s\n",
              static_cast<long long>(r.used.steps), static_cast<long long>(r.used.evals),
              static_cast<long long>(r.used.calls), static_cast<long long>(r.used.tokens), r.used.usd, r.used.seconds);
  std::printf("run       %s (`lathe runs show %s`)\n", r.r.id.c_str(), r.r.id.c_str());
}

// --profile: the best kernel's Nsight Compute counters, in words, for the proposer's inspection.
// `lathe profile` runs in its own process on the bundle written under the run's directory (the
// profiler follows that process tree, not this one); one profile per best kernel. When it fails
// (no ncu, no permission to the counters) the reason is the inspection, once, and nothing more
// is tried.
std::function<std::string(const task&, const kernel_bundle&)> profiler(const context& ctx, const fs::path& dir,
                                                                      bool trust_kernel) {
  auto cache = std::make_shared<std::map<std::string, std::string>>();
  auto broken = std::make_shared<std::string>();
  const std::string exe = (ctx.where.exe_dir / "lathe").string();
  const std::string ws = ctx.ws.root.parent_path().string();
  return [=](const task& t, const kernel_bundle& k) -> std::string {
    if (t.plat != platform::cuda) return "";
    if (!broken->empty()) return *broken;
    if (auto it = cache->find(k.hash); it != cache->end()) return it->second;
    const fs::path at = dir / k.hash.substr(0, 12);
    if (auto w = write_bundle(k, at); !w) return "no profile: " + w.error().message;
    const std::string cmd = "'" + exe + "' --workspace '" + ws + "' profile '" + t.dir.string() + "' '" +
                            at.string() + "' --json --launches 2" + (trust_kernel ? " --trust-kernel" : "") +
                            " 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      pclose(p);
    }
    const size_t brace = out.find('{');
    json j = brace == std::string::npos ? json() : json::parse(out.substr(brace), nullptr, false);
    if (!j.is_object() || !j.contains("kernels")) {
      *broken = "no Nsight Compute profile (`lathe profile` said: " + out.substr(0, out.find('\n')).substr(0, 200) + ")";
      return *broken;
    }
    std::vector<std::string> parts;
    auto pct = [](const json& x) { return x.is_number() ? std::to_string(static_cast<int>(x.get<double>() + 0.5)) + "%" : std::string("-"); };
    for (const auto& kern : j["kernels"]) {
      std::string one = kern.value("name", std::string("?")).substr(0, 60);
      if (kern.contains("duration_seconds") && kern["duration_seconds"].is_number()) {
        char b[48];
        std::snprintf(b, sizeof b, " %.3f ms", 1e3 * kern["duration_seconds"].get<double>());
        one += b;
      }
      one += cat(", compute ", pct(kern.value("compute_throughput_pct", json())), ", memory ",
                 pct(kern.value("memory_throughput_pct", json())), " (DRAM ", pct(kern.value("dram_throughput_pct", json())),
                 "), occupancy ", pct(kern.value("achieved_occupancy_pct", json())));
      std::vector<std::string> stalls;
      for (const auto& st : kern.value("stalls", json::array())) {
        if (stalls.size() >= 3) break;
        char b[96];
        std::snprintf(b, sizeof b, "%s %.1f", st.value("reason", std::string("?")).c_str(),
                      st.value("cycles_per_issue", 0.0));
        stalls.push_back(b);
      }
      if (!stalls.empty()) one += ", stalls (cycles per issue) " + join(stalls, ", ");
      parts.push_back(one);
    }
    (*cache)[k.hash] = join(parts, "; ");
    return (*cache)[k.hash];
  };
}

// The arguments the run stores, which a resume reads back.
std::string run_args(const optimize_cli& o, const search::optimize_kernels& ks, const proposer_session& session) {
  json args = stored_json(o, stored);
  args.update(stored_json(o.gate, stored_timing));
  args["start_hash"] = ks.start ? ks.start->hash : std::string();
  args["proposer"] = o.proposer;
  args["config"] = session.decision.config_source;
  return args.dump();
}

// The best kernel's bundle, beside the run's other artifacts.
void write_best(const optimize_cli& o, const context& ctx, search::optimize_result& res) {
  const fs::path dir = o.out_dir.empty() ? ctx.ws.runs() / res.r.id / "best" : fs::path(o.out_dir);
  if (auto w = write_bundle(res.best, dir); w) res.best_dir = dir.string();
  else std::fprintf(stderr, "lathe: the best kernel was not written to %s: %s\n", dir.c_str(), w.error().message.c_str());
}

void print_optimize(const optimize_cli& o, const search::optimize_result& res, const task& t,
                    const proposer_session& session, const search::optimize_options& so, const budget& limits) {
  if (o.json) {
    json j = json::parse(res.r.summary);
    j["schema"] = "lathe.optimize/1";
    j["run"] = res.r.id;
    j["best"]["dir"] = res.best_dir;
    j["budget"] = {{"limits", llm::budget_text(limits)}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_result(res, t, session.label(), so);
  }
}

// The run's kernels: the start (given, or a ModelNew search's own Model), and for a C-ABI search
// the task's naive and expert kernels where it has them.
result<search::optimize_kernels> run_kernels(const task& t, const optimize_cli& o, const search_language& sl) {
  search::optimize_kernels ks;
  if (!o.kernel.empty()) {
    auto k = find_task_kernel(t, o.kernel);
    if (!k) return tl::unexpected(k.error());
    if (auto same = check_start_language(*k, sl); !same) return tl::unexpected(same.error());
    ks.start = std::move(*k);
  } else if (sl.eager) {
    ks.start = *sl.eager;  // a ModelNew search starts from the problem's own Model
  }
  if (sl.lang != candidate_language::modelnew) {  // the task's kernels speak the C ABI
    ks.naive = optional_kernel(t, "naive");
    if (!o.no_expert) ks.expert = optional_kernel(t, "expert");
  }
  return ks;
}

int run_optimize(const common_options& common, optimize_cli o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  json stored_args;
  // Batch mode (llm/batch_dir.h): the folder names its run.
  auto folder = batch_folder(o.propose_only, o.gate_batch, o.resume);
  if (!folder) return fail_with(folder.error(), 2);
  const std::optional<fs::path> batch = *folder;
  if (!o.resume.empty()) {
    // --resume: the run's own arguments (a resumed run goes on as it started).
    const std::string platform_given = o.platform_word;
    auto a = resume_options(*ctx, run_kind::optimize, "optimizes", o, stored);
    if (!a) return fail_with(a.error().message, 2);
    if (std::string why = platform_on_resume(platform_given, o.platform_word, o.resume); !why.empty())
      return fail_with(why, 2);
    read_stored(*a, o.gate, stored_timing);
    stored_args = *a;
  }
  if (o.task.empty()) return fail_with("optimize needs a TASK (or --resume RUN)", 2);
  auto strat = search::parse_strategy(o.strategy);
  if (!strat) return fail_with("unknown strategy '" + o.strategy + "' (" + search::strategy_words + ")", 2);
  auto abl = search::parse_ablation(o.ablate);
  if (!abl) return fail_with(abl.error().message, 2);
  if (abl->any() && *strat != search::strategy::skills)
    return fail_with("--ablate changes the cards the proposer sees: it needs --strategy skills", 2);
  auto limits = llm::parse_budget(o.budget);
  if (!limits) return fail_with("--budget: " + limits.error(), 2);
  auto t = find_task(o.task, ctx->where, problem_platform_for(o.platform_word, o.kernel));
  if (!t) return fail_with(t.error().message, 2);
  o.platform_word = std::string(to_string(t->plat));  // stored as decided: a resume goes on there
  // --cpu-slots: a step gates one candidate at a time (its repairs and re-measure wait on its first
  // verdict), so each evaluation takes whichever slot is free here and in other lathe processes.
  auto pool = cpu_slot_pool_for(*t, o.cpu_slots);
  if (!pool) return fail_with(pool.error().message, 2);
  auto sl = pick_search_language(*t, o.language);
  if (!sl) return fail_with(sl.error().message, 2);
  o.language = std::string(to_string(sl->lang));  // stored as decided, so the run says what it writes
  auto kernels = run_kernels(*t, o, *sl);
  if (!kernels) return fail_with(kernels.error().message, 2);
  const search::optimize_kernels& ks = *kernels;
  if (!o.resume.empty() && ks.start && stored_args.value("start_hash", ks.start->hash) != ks.start->hash)
    return fail_with("the start kernel " + o.kernel + " changed since run " + o.resume +
                         " started: a resumed run must start from the same kernel",
                     2);
  if (t->plat == platform::cuda && !ctx->gpu)
    return fail_with("task " + t->name + " runs on CUDA and there is no usable GPU here" +
                         (ctx->gpu_error.empty() ? "" : " (" + ctx->gpu_error + ")"),
                     2);

  const std::string run_id = o.resume.empty() ? search::new_run_id() : o.resume;
  llm::amounts spent;
  if (!o.resume.empty()) {
    auto secs = search::resume_seconds(*ctx->db, o.resume);
    if (!secs) return fail_with(secs.error().message, 2);
    spent.seconds = *secs;
  }
  auto session = open_proposer(*ctx, *t, o.proposer, run_id, *limits, spent, !o.resume.empty(), batch);
  if (!session) return fail_with(session.error().message, 2);
  o.gate.time = !o.no_time;
  const auto v = pooled_verifier(make_gate_hooks(*ctx, o.gate), pool->get());
  search::optimize_options so;
  so.strat = *strat;
  so.abl = *abl;
  so.max_repairs = o.max_repairs;
  so.max_stall = o.max_stall;
  so.free_after_cards = !o.no_free;
  so.measure_expert = !o.no_expert && !o.no_time;  // a check of the expert would measure nothing
  so.tgt = t->plat == platform::cuda ? *ctx->gpu : ctx->tgt;
  so.target_text = agent::target_text(so.tgt);
  so.proposer_label = (*session)->label();
  if (o.profile) so.inspect = profiler(*ctx, ctx->ws.runs() / run_id / "profiled", o.trust_kernel);
  if (!o.resume.empty()) so.resume_run = o.resume;
  else so.run_id = run_id;
  so.args_json = run_args(o, ks, **session);
  if (!o.quiet && !o.json) {
    so.progress = [](const search::optimize_progress& p) { std::fprintf(stderr, "… %s\n", progress_line(p).c_str()); };
    std::fprintf(stderr, "… optimize %s (strategy %s, budget %s) with the %s\n", t->name.c_str(), o.strategy.c_str(),
                 llm::budget_text(*limits).c_str(), (*session)->decision.why.c_str());
  }
  if (!o.propose_only.empty()) write_batch_run(*batch, run_id);
  auto res = search::optimize(*t, ks, *v, *(*session)->proposer, *ctx->db, *(*session)->budget, so);
  if (!res) return fail_with(res.error().message, 1);
  if (res->stop == search::stop_reason::waiting) {
    const auto waiting = (*session)->batch ? (*session)->batch->waiting() : std::vector<fs::path>{};
    print_waiting("optimize", res->r.id, *batch, waiting, o.json);
    return 0;
  }

  write_best(o, *ctx, *res);
  print_optimize(o, *res, *t, **session, so, *limits);
  return 0;
}

}  // namespace

void add_optimize(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<optimize_cli>();
  CLI::App* opt = app.add_subcommand(
      "optimize", "find the best verified kernel for a task within a budget, guided by the skill library (or another strategy)");
  opt->add_option("task", o->task, "task directory, task.toml, or the name of a shipped task");
  opt->add_option("kernel", o->kernel, "the start kernel: a bundle path or a kernel name of the task "
                                       "(default: the proposer seeds one from the reference; the rule engine "
                                       "cannot, and starts from the task's naive kernel; on a bare KernelBench "
                                       "problem: its own Model as a ModelNew)");
  opt->add_option("--language", o->language,
                  "c-abi | modelnew: what the search writes (default: modelnew for a bare KernelBench problem, "
                  "which starts from and is paired against its own Model, eager PyTorch; c-abi otherwise)");
  opt->add_option("--strategy", o->strategy, "skills | none | forward-memory | expert-source")->capture_default_str();
  add_platform_option(opt, o->platform_word, "cpu, or cuda when the start kernel is CUDA");
  opt->add_option("--budget", o->budget,
                  "limits: steps=N,evals=N,tokens=N[k|M],usd=X,time=S[s|m|h] (the run ends at the first)")
      ->capture_default_str();
  opt->add_option("--ablate", o->ablate,
                  "withhold card fields from the proposer (skills): intent-only, no-preconditions, "
                  "no-admission, no-lineage-order (comma-separated)")
      ->capture_default_str();
  opt->add_option("--proposer", o->proposer, "rules | llm | auto (auto: the model in lathe.toml, else the rule engine)")
      ->capture_default_str();
  opt->add_option("--resume", o->resume, "continue this optimize run (`lathe runs list --kind optimize`)");
  opt->add_option("--max-repairs", o->max_repairs, "repair rounds after a gate failure")->capture_default_str();
  opt->add_option("--max-stall", o->max_stall, "end after this many steps in a row without an accepted one (0: never)")
      ->capture_default_str();
  opt->add_option("--max-time", o->gate.max_time, "longest paired timing series per evaluation, seconds")->capture_default_str();
  opt->add_flag("--profile", o->profile,
                "CUDA: an Nsight Compute profile of each best kernel goes to the proposer with its features (lathe profile)");
  opt->add_flag("--trust-kernel", o->trust_kernel,
                "with --profile: profile the kernel as lathe's own user (where only administrators may read the counters)");
  opt->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series (wider intervals, larger margins)");
  add_cpu_slots_option(opt, o->cpu_slots,
                       "each evaluation on a free slot, one at a time in a run (several runs, or solve --jobs, fill "
                       "the others; CPU tasks)");
  opt->add_flag("--no-free", o->no_free, "skills: end the run when no retrieved card is left, instead of free mutations");
  opt->add_flag("--no-expert", o->no_expert, "do not measure the task's expert at the end (no gap recovered)");
  opt->add_flag("--no-time", o->no_time,
                "check only: every candidate stops after the correctness checks, so none is accepted (a proposer's "
                "candidates built and checked, e.g. a replayed recording; no expert measured)");
  opt->add_option("--propose-only", o->propose_only,
                  "batch mode: write each prompt the run needs (and its kernel) to this folder and stop at the first "
                  "one without an answer; the model answers elsewhere (docs/optimize.md \"Batch mode\")");
  opt->add_option("--gate-batch", o->gate_batch,
                  "batch mode: continue the run of this folder with the answers written there, gating them");
  opt->add_option("--out", o->out_dir, "write the best kernel's bundle here (default: .lathe/runs/RUN/best)");
  opt->add_flag("--json", o->json, "print the result as JSON (schema lathe.optimize/1)");
  opt->add_flag("--quiet", o->quiet, "no progress lines on stderr");
  opt->footer(
      "A candidate replaces the best only when the gate decides it faster than the best twice (the paired ratio's\n"
      "interval clears 1 + margin, as `lathe eval` prints): in the first series and in a fresh re-measure. Kill it at any time: `--resume RUN` goes on without repeating a\n"
      "finished evaluation or model call.\n"
      "Exit code 0: the run finished; 1: it failed; 2: usage or setup.");
  opt->callback([o, &common, &exit_code] { exit_code = run_optimize(common, *o); });
}

}  // namespace lathe::cli
