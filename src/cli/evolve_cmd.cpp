// lathe evolve TASK [START] (issue 9; docs/evolve.md) and lathe score TASK PARENT CANDIDATE…
// (the reward service): the verbs find the task, its kernels and the proposer; search/evolve.h
// runs the search, the gate scores.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/kernel_text.h"
#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/enum_option.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/proposer_session.h"
#include "cli/resume.h"
#include "cli/search_language.h"
#include "cli/stored_options.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "features/feature_audit.h"
#include "llm/budget.h"
#include "search/evolve.h"
#include "search/export.h"
#include "search/optimize.h"
#include "search/reward.h"
#include "skills/retrieve.h"
#include "spec/bundle.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct evolve_cli {
  std::string task, start, language, descriptors, sampling, proposer = "auto", budget = "evals=60", resume;
  std::string platform_word;  // --platform: where a bare problem file runs ("": what the start implies, cpu)
  // The gate's cascade by default: a child's first timing is cheap, contests for elites are full
  // (on one H200 this is what reaches 600+ gated evaluations per hour: bench/results/evolve-*).
  std::string child_timing = "quick";  // as given and stored with the run
  search::child_timing timing = search::child_timing::quick;  // child_timing, read once (settle_options)
  int32_t generations = 3, islands = 2, population = 2, children = 2, migrate_every = 2, in_flight = 1;
  int32_t cpu_slots = 0;  // --cpu-slots N (cli/cpu_slots.h); 0: none, the whole machine unpinned
  uint64_t seed = 1;
  bool library = false, json = false, quiet = false;
  bool no_time = false;  // --no-time: every evaluation checks only (gate_settings::time)
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick
  std::string propose_only, gate_batch;  // batch mode (llm/batch_dir.h)
  bool budget_given = false;             // --budget on the command line (a resume may widen it)
};

// The options a run stores and a resumed one reads back, over the command line's: the search
// must go on as it started (the seed and --in-flight are checked again by search::evolve).
// Besides them: the proposer, and the budget, which a --budget given now replaces, so that a
// resume can widen it.
const stored_options<evolve_cli> stored = {
    {"task", &evolve_cli::task},
    {"start", &evolve_cli::start},
    {"language", &evolve_cli::language},
    {"platform", &evolve_cli::platform_word},
    {"generations", &evolve_cli::generations},
    {"islands", &evolve_cli::islands},
    {"population", &evolve_cli::population},
    {"children", &evolve_cli::children},
    {"migrate_every", &evolve_cli::migrate_every},
    {"descriptors", &evolve_cli::descriptors},
    {"sampling", &evolve_cli::sampling},
    {"seed", &evolve_cli::seed},
    {"in_flight", &evolve_cli::in_flight},
    {"cpu_slots", &evolve_cli::cpu_slots},
    {"no_time", &evolve_cli::no_time},
    {"library", &evolve_cli::library},
    {"child_timing", &evolve_cli::child_timing},
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --resume: the run's stored options over the command line's. Then batch mode's --in-flight.
// Returns the exit code of a failure, or nothing.
std::optional<int> settle_options(context& ctx, evolve_cli& o, const std::optional<fs::path>& batch) {
  if (!o.resume.empty()) {
    const std::string platform_given = o.platform_word;
    auto a = resume_options(ctx, run_kind::evolve, "evolves", o, stored);
    if (!a) return fail_with(a.error().message, 2);
    if (std::string why = platform_on_resume(platform_given, o.platform_word, o.resume); !why.empty())
      return fail_with(why, 2);
    read_stored(*a, o.gate, stored_timing);
    if (!o.budget_given) o.budget = a->value("budget", o.budget);
  }
  if (o.task.empty()) return fail_with("evolve needs a TASK (or --resume RUN, or --gate-batch DIR)", 2);
  // The command line's word was checked by CLI11; a stored one is read here, the one place.
  const auto timing = parse_enum(o.child_timing, search::child_timing::quick);
  if (!timing) return fail_with("child timing '" + o.child_timing + "' (stored with the run): not full | quick", 2);
  o.timing = *timing;
  // A generation's prompts at once: each island's children in one batch, so that an island's
  // parents never wait on answers of its own generation (search/evolve.cpp ask).
  if (batch && o.in_flight < o.children) {
    if (o.resume.empty() && !o.quiet)
      std::fprintf(stderr, "… batch mode: --in-flight %d (every child of an island's generation in one batch)\n", o.children);
    if (o.resume.empty()) o.in_flight = o.children;
  }
  // --cpu-slots N: a batch's children gated on N slots at once, so at least N in flight; a batch
  // holds one island's children of a generation, so fewer children than slots leave slots idle
  // (with one child, every evaluation runs one at a time). A resume keeps the stored values.
  if (o.cpu_slots > 0 && o.resume.empty()) {
    if (o.children < o.cpu_slots)
      return fail_with(cat("--cpu-slots ", std::to_string(o.cpu_slots), " gates one island's children of a generation at "
                           "once, and --children ", std::to_string(o.children), " leaves slots idle: give --children ",
                           std::to_string(o.cpu_slots), " or more, or fewer slots"),
                       2);
    o.in_flight = std::max(o.in_flight, o.cpu_slots);
  }
  o.gate.time = !o.no_time;
  return std::nullopt;
}

// The search's shape, as the options give it.
search::evolve_options shape_options(const evolve_cli& o, std::vector<search::descriptor> desc,
                                     search::sampling samp) {
  search::evolve_options eo;
  eo.generations = o.generations;
  eo.islands = o.islands;
  eo.population = o.population;
  eo.children = o.children;
  eo.migrate_every = o.migrate_every;
  eo.descriptors = std::move(desc);
  eo.samp = std::move(samp);
  eo.seed = o.seed;
  eo.in_flight = o.in_flight;
  return eo;
}

// Library-guided evolution: a parent's three best admitted cards of `library` (which must
// outlive the search), for a parent written in `lang` (a ModelNew takes C++/CUDA carriers).
std::function<std::vector<skill_card>(const task&, const std::vector<feature>&)> library_cards(
    const std::vector<skill_card>& library, const target& tgt, candidate_language lang) {
  return [&library, tgt, lang](const task& tk, const std::vector<feature>& fs) {
    skills::retrieve_query q;
    q.lang = tk.plat == platform::cuda ? language::cuda : language::cpp;
    q.cand = lang;
    q.tgt = tgt;
    q.t = &tk;
    for (const auto& f : fs) q.features.push_back(f.name);
    skills::retrieve_options ro;
    ro.admitted_only = true;
    std::vector<skill_card> out;
    for (const auto& r : skills::retrieve(library, q, ro).ranked) {
      if (out.size() >= 3) break;
      out.push_back(r.card);
    }
    return out;
  };
}

// The arguments the run stores, which a resume reads back.
std::string stored_args(const evolve_cli& o, const proposer_session& session) {
  nlohmann::json args = stored_json(o, stored);
  args.update(stored_json(o.gate, stored_timing));
  args["proposer"] = o.proposer;
  args["budget"] = o.budget;
  args["config"] = session.decision.config_source;
  return args.dump();
}

void print_evolve(const search::evolve_result& res, const proposer_session& session, const task& t) {
  std::printf("run       %s (%s)\n", res.r.id.c_str(), session.label().c_str());
  std::printf("children  %zu, %lld gate evaluations, %zu elites in the archive\n", res.children.size(),
              static_cast<long long>(res.evaluations), res.archive_size);
  const nlohmann::json summary = nlohmann::json::parse(res.r.summary);
  std::string why;
  for (const auto& [reason, n] : summary["failures"].items())
    why += cat(why.empty() ? " (" : ", ", reason, " ", std::to_string(n.get<int>()));
  std::printf("failed    %d%s%s\n", summary["failed"].get<int>(), why.c_str(), why.empty() ? "" : ")");
  std::printf("best      %s%s\n", res.best.substr(0, 12).c_str(),
              res.best_speedup ? cat(": ", std::to_string(*res.best_speedup), "x over ", t.baseline.empty() ? std::string("eager") : t.baseline).c_str() : "");
  std::printf("by generation (best score):");
  for (double s : res.best_per_generation) std::printf(" %.3f", s);
  std::printf("\n");
}

// The kernels a run scores against and starts from. A ModelNew search is scored against the
// problem's own Model (eager PyTorch) and starts there; a C-ABI one against the task's baseline,
// from the given start (empty: the proposer's translations of the reference).
struct evolve_kernels {
  kernel_bundle baseline, start;
};

result<evolve_kernels> run_kernels(const task& t, const evolve_cli& o, const search_language& sl) {
  evolve_kernels k;
  if (sl.eager) {
    k.baseline = *sl.eager;
  } else {
    auto b = find_task_kernel(t, t.baseline);
    if (!b) return tl::unexpected(b.error());
    k.baseline = std::move(*b);
  }
  if (!o.start.empty()) {
    auto given = find_task_kernel(t, o.start);
    if (!given) return tl::unexpected(given.error());
    if (auto same = check_start_language(*given, sl); !same) return tl::unexpected(same.error());
    k.start = std::move(*given);
  } else if (sl.eager) {
    k.start = *sl.eager;
  }
  return k;
}

int run_evolve(const common_options& common, evolve_cli o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  // Batch mode (llm/batch_dir.h): the folder names its run.
  auto folder = batch_folder(o.propose_only, o.gate_batch, o.resume);
  if (!folder) return fail_with(folder.error(), 2);
  const std::optional<fs::path> batch = *folder;
  if (auto failed = settle_options(*ctx, o, batch)) return *failed;
  auto t = find_task(o.task, ctx->where, problem_platform_for(o.platform_word, o.start));
  if (!t) return fail_with(t.error().message, 2);
  o.platform_word = std::string(to_string(t->plat));  // stored as decided: a resume goes on there
  // --cpu-slots: the verifiers below on one pool, each evaluation on a free slot.
  auto pool = cpu_slot_pool_for(*t, o.cpu_slots);
  if (!pool) return fail_with(pool.error().message, 2);
  if (t->plat == platform::cuda && !ctx->gpu) return fail_with("task " + t->name + " runs on CUDA and there is no usable GPU here", 2);
  auto sl = pick_search_language(*t, o.language);
  if (!sl) return fail_with(sl.error().message, 2);
  o.language = std::string(to_string(sl->lang));  // stored as decided, so the run says what it writes
  if (t->baseline.empty() && !sl->eager)
    return fail_with("task " + t->name + " has no baseline kernel to score children against" +
                         (t->problem.empty() ? std::string() : " (--language modelnew pairs a KernelBench problem's "
                                                               "ModelNew children against its own Model)"),
                     2);
  auto desc = search::parse_descriptors(o.descriptors);
  if (!desc) return fail_with("--descriptors: " + desc.error().message, 2);
  auto samp = search::parse_sampling(o.sampling);
  if (!samp) return fail_with("--sampling: " + samp.error().message, 2);
  auto limits = llm::parse_budget(o.budget);
  if (!limits) return fail_with("--budget: " + limits.error(), 2);
  auto kernels = run_kernels(*t, o, *sl);
  if (!kernels) return fail_with(kernels.error().message, 2);
  const kernel_bundle* baseline = &kernels->baseline;
  kernel_bundle& start = kernels->start;
  const std::string run_id = o.resume.empty() ? search::new_evolve_id() : o.resume;
  llm::amounts spent;
  if (!o.resume.empty()) {
    auto secs = search::resume_seconds(*ctx->db, o.resume);
    if (!secs) return fail_with(secs.error().message, 2);
    spent.seconds = *secs;
  }
  auto session = open_proposer(*ctx, *t, o.proposer, run_id, *limits, spent, !o.resume.empty(), batch);
  if (!session) return fail_with(session.error().message, 2);
  const bool rules = (*session)->decision.choice == proposer_choice::rules;
  if (start.sources.empty() && rules) {
    // The rule engine cannot translate a reference: start from the task's baseline, and say so.
    start = *baseline;
    if (!o.quiet) std::fprintf(stderr, "… the rule engine cannot translate the reference: evolving from %s\n", t->baseline.c_str());
  }
  const auto v = pooled_verifier(make_gate_hooks(*ctx, o.gate), pool->get());
  // The cascade: children first timed with half the effort, contests for elites in full.
  gate_settings quick_gs = o.gate;
  quick_gs.quick = true;
  const auto quick_v = pooled_verifier(make_gate_hooks(*ctx, quick_gs), pool->get());

  search::evolve_options eo = shape_options(o, std::move(*desc), std::move(*samp));
  if (o.timing == search::child_timing::quick && !o.gate.quick) {
    eo.screen = quick_v.get();
    eo.screen_timing = search::child_timing::quick;
  }
  const target tgt = t->plat == platform::cuda ? *ctx->gpu : ctx->tgt;
  eo.target_text = agent::target_text(tgt);
  // The label export reads: "rules:…" marks the rule engine's runs as not training-grade.
  eo.proposer_label = rules ? "rules: " + (*session)->label() : (*session)->label();
  eo.reference_source = read_text(t->problem.empty() ? t->dir / t->reference : t->problem);
  std::vector<skill_card> library;
  if (o.library) {
    auto cards = ctx->db->list_cards("");
    if (!cards) return fail_with(cards.error().message, 2);
    library = std::move(*cards);
    eo.cards = library_cards(library, tgt, sl->lang);
  }
  if (!o.resume.empty()) eo.resume_run = o.resume;
  else eo.run_id = run_id;
  eo.args_json = stored_args(o, **session);
  if (!o.quiet && !o.json)
    eo.progress = [](const search::evolve_progress& p) {
      std::fprintf(stderr, "… [%.0fs, %lld evals, best score %.3f] %s\n", p.seconds,
                   static_cast<long long>(p.evaluations), p.best_score, p.message.c_str());
    };
  if (!o.propose_only.empty()) write_batch_run(*batch, run_id);
  auto res = search::evolve(*t, start, *baseline, *v, *(*session)->proposer, *ctx->db, *(*session)->budget, eo);
  if (!res) return fail_with(res.error().message, 1);
  if (res->waiting) {
    const auto waiting = (*session)->batch ? (*session)->batch->waiting() : std::vector<fs::path>{};
    print_waiting("evolve", res->r.id, *batch, waiting, o.json);
    return 0;
  }
  if (o.json) {
    nlohmann::json j = nlohmann::json::parse(res->r.summary);
    j["schema"] = "lathe.evolve/1";
    j["run"] = res->r.id;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  print_evolve(*res, **session, *t);
  return 0;
}

// The reward service: each candidate against one parent, rewards as an RL trainer reads them.
struct score_cli {
  std::string task, parent;
  std::vector<std::string> candidates;
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick
};

int run_score(const common_options& common, const score_cli& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error().message, 2);
  auto t = find_task(o.task, ctx->where, problem_platform_of(o.parent));
  if (!t) return fail_with(t.error().message, 2);
  auto parent = find_task_kernel(*t, o.parent);
  if (!parent) return fail_with("parent: " + parent.error().message, 2);
  std::vector<kernel_bundle> cands;
  for (const auto& c : o.candidates) {
    auto k = find_task_kernel(*t, c);
    if (!k) return fail_with(c + ": " + k.error().message, 2);
    cands.push_back(std::move(*k));
  }
  gate_settings gs = o.gate;
  gs.progress = false;
  lineages::gate_verifier v(make_gate_hooks(*ctx, gs));
  const evaluation pe = v.check(*t, *parent, *parent, {"human", "score parent", false});
  if (!lineages::passed(pe))
    return fail_with("the parent fails the gate (" + std::string(to_string(pe.result)) + "): " + pe.message, 1);
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> rewards;
  for (size_t i = 0; i < cands.size(); ++i) {
    const evaluation e = v.compare(*t, cands[i], *parent, {"human", "score", false});
    const bool correct = lathe::correct(e.result);
    const auto r = lineages::ratio(e);
    // An undecided ratio earns no gain (search/reward.h): `reward_basis` says which rule gave it.
    const search::candidate_reward cr = search::reward_of(e);
    const double reward = cr.reward;
    rewards.push_back(reward);
    // `faster`: what an elite replacement asks, the gate deciding faster (the interval clears 1 + ε).
    const bool faster = lineages::faster(e);
    rows.push_back({{"candidate", o.candidates[i]}, {"hash", cands[i].hash}, {"outcome", to_string(e.result)},
                    {"correct", correct}, {"decided", lineages::passed(e)}, {"reward", reward},
                    {"reward_basis", search::to_string(cr.basis)},
                    {"ratio", r ? nlohmann::json(*r) : nlohmann::json(nullptr)},
                    {"ratio_decided", cr.basis == search::reward_basis::decided},
                    {"faster", faster}, {"margin", lineages::margin(e, t->plat)},
                    {"ci", e.paired ? nlohmann::json{e.paired->ci_low, e.paired->ci_high} : nlohmann::json(nullptr)},
                    {"message", e.message.substr(0, e.message.find('\n'))}, {"evaluation", e.id}});
  }
  double mean = 0, var = 0;
  for (double x : rewards) mean += x;
  mean /= std::max<size_t>(1, rewards.size());
  for (double x : rewards) var += (x - mean) * (x - mean);
  const double sd = rewards.size() > 1 ? std::sqrt(var / rewards.size()) : 0.0;
  for (size_t i = 0; i < rows.size(); ++i) rows[i]["advantage"] = sd > 0 ? (rewards[i] - mean) / sd : 0.0;
  nlohmann::json j{{"schema", "lathe.score/1"}, {"task", t->name}, {"parent", parent->hash},
                   {"candidates", rows}, {"group", {{"size", rows.size()}, {"mean_reward", mean}, {"std_reward", sd}}}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

void add_evolve(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<evolve_cli>();
  CLI::App* e = app.add_subcommand("evolve", "Kernel-Smith evolutionary search: MAP-Elites islands over the gate");
  e->add_option("task", o->task, "task directory, task.toml, shipped task name, or a wrapped problem "
                                 "(not needed with --resume or --gate-batch)");
  e->add_option("start", o->start,
                "the start kernel (default: the proposer's translations of the reference; the rule engine "
                "cannot translate and starts from the task's baseline; on a bare KernelBench problem: its own "
                "Model as a ModelNew)");
  e->add_option("--language", o->language,
                "c-abi | modelnew: what the search writes (default: modelnew for a bare KernelBench problem, whose "
                "children are scored against its own Model, eager PyTorch; c-abi otherwise)");
  add_platform_option(e, o->platform_word, "cpu, or cuda when the start kernel is CUDA");
  e->add_option("--generations", o->generations, "generations")->capture_default_str();
  e->add_option("--islands", o->islands, "islands")->capture_default_str();
  e->add_option("--population", o->population, "initial members per island")->capture_default_str();
  e->add_option("--children", o->children, "children per island per generation")->capture_default_str();
  e->add_option("--migrate-every", o->migrate_every, "generations between ring migrations (0: never)")->capture_default_str();
  e->add_option("--descriptors", o->descriptors,
                "archive dimensions, e.g. \"complexity:40,80,160;features:2,4\" (complexity, score, "
                "features, feature:<name>; default complexity and features)");
  e->add_option("--sampling", o->sampling,
                "parent sampling, e.g. \"exploration=0.2,exploitation=0.5,elite=0.3,top=3,inspirations=2\"");
  e->add_option("--seed", o->seed, "the sampling's random seed (stored with the run)")->capture_default_str();
  e->add_option("--in-flight", o->in_flight,
                "children proposed, then gated together, per batch (builds and checks overlap; timing is "
                "serialized per device)")
      ->capture_default_str();
  add_cpu_slots_option(e, o->cpu_slots, "a batch's children, each on a free slot (--in-flight raised to N; CPU tasks)");
  e->add_flag("--no-time", o->no_time,
              "check correctness only: children are scored by their checks (no paired series, no contest; stored "
              "with the run)");
  e->add_flag("--library", o->library, "library-guided: the skill cards retrieved for a parent go into its prompt");
  e->add_option("--proposer", o->proposer, "rules | llm | auto")->capture_default_str();
  CLI::Option* budget_opt =
      e->add_option("--budget", o->budget, "limits: steps=N (children),evals=N,tokens=N,usd=X,time=S (on resume: "
                                           "the run's own unless given)")
          ->capture_default_str();
  e->add_option("--resume", o->resume, "continue this evolve run with its own arguments (`lathe runs list --kind evolve`)");
  e->add_option("--propose-only", o->propose_only,
                "batch mode: write a generation's prompts (every island's, each with its parent kernel) to this "
                "folder and stop; the model answers elsewhere (docs/evolve.md \"Batch mode\")");
  e->add_option("--gate-batch", o->gate_batch,
                "batch mode: continue the run of this folder with the answers written there: gate them, place the "
                "children and write the next generation's prompts");
  e->add_option("--max-time", o->gate.max_time, "longest paired timing series per evaluation, seconds")->capture_default_str();
  e->add_flag("--quick", o->gate.quick, "half the timing effort per evaluation");
  e->add_option("--child-timing", o->child_timing,
                "quick | full: how a child is first timed against the baseline (quick: half the effort, "
                "wider intervals; full: as --max-time says); a contest for an elite's cell is always "
                "timed in full")
      ->check(CLI::IsMember(enum_words(search::child_timing::quick)))
      ->capture_default_str();
  e->add_flag("--json", o->json, "print the summary as JSON (schema lathe.evolve/1)");
  e->add_flag("--quiet", o->quiet, "no progress lines");
  e->footer("An elite is replaced only after a paired re-measure of the child against it in fresh worker\n"
            "processes is decided faster by the gate (its interval clears 1 + margin). Every child is a run event: --resume goes on without\n"
            "repeating one. Exit code 0: the run finished; 1: it failed; 2: usage.");
  e->callback([o, budget_opt, &common, &exit_code] {
    o->budget_given = budget_opt->count() > 0;
    exit_code = run_evolve(common, *o);
  });

  auto s = std::make_shared<score_cli>();
  CLI::App* sc = app.add_subcommand("score", "rewards for a group of candidates against one parent (JSON, for RL trainers)");
  sc->add_option("task", s->task, "the task")->required();
  sc->add_option("parent", s->parent, "the parent kernel (bundle path or kernel name)")->required();
  sc->add_option("candidates", s->candidates, "candidate kernels (a GRPO group: 8)")->required();
  sc->add_option("--max-time", s->gate.max_time, "longest paired timing series per candidate, seconds")->capture_default_str();
  sc->add_flag("--quick", s->gate.quick, "half the timing effort per candidate");
  sc->footer("Per candidate: reward = paired speedup over the parent when correct and the gate decided it\n"
             "(faster or slower past its margin), 1 when correct but undecided (no gain credited; reward_basis\n"
             "says which), 0 when it fails; advantage = (reward - group mean) / group std. Prints lathe.score/1.\n"
             "Exit code 0: scored (whatever the rewards); 1: the parent fails; 2: usage.");
  sc->callback([s, &common, &exit_code] { exit_code = run_score(common, *s); });
}

}  // namespace lathe::cli
