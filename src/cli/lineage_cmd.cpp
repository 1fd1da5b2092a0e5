// lathe init TASK EXPERT and lathe decompose TASK [EXPERT] [--resume RUN] (DESIGN.md "Command
// line"; docs/lineage.md). The verbs only wire the context, the gate (lineages::gate_verifier),
// the proposer and the store together and print; lineage/ decides, skills/ induces.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/lineage_view.h"
#include "cli/proposer_session.h"
#include "cli/resume.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/json_card.h"
#include "core/json_lineage.h"
#include "lineage/decompose.h"
#include "lineage/init.h"
#include "skills/induce.h"

namespace lathe::cli {
namespace {

struct lineage_options {
  std::string task, expert = "expert", repo, resume, proposer = "auto";
  bool json = false, quiet = false, no_forward = false, no_induce = false, no_time = false;
  int32_t max_steps = 16, max_rejections = 4;
  int32_t cpu_slots = 0;  // decompose --cpu-slots N (cli/cpu_slots.h); 0: none, the whole machine unpinned
  std::vector<std::string> prior;  // decompose: mechanisms to take out first
  // --max-time and --quick, bound into the gate's settings (1 s per series: a walk times many
  // kernels). init always times; decompose asks for timing only when --no-time is off
  // (decompose_options).
  gate_settings gate = gate_settings_with(1.0);
};

// --resume: the run's own task and expert, unless the user named them (then they must agree).
result<void> fill_from_run(context& ctx, lineage_options& o) {
  auto r = run_to_resume(ctx, o.resume, run_kind::decompose);
  if (!r) return tl::unexpected(r.error());
  if (o.task.empty()) o.task = r->task;
  json args = json::accept(r->args) ? json::parse(r->args) : json::object();
  // The run names its expert by kernel name and hash; decompose checks the hash on resume.
  if (auto it = args.find("expert"); it != args.end() && it->is_object() && o.expert == "expert")
    o.expert = it->value("name", o.expert);
  // The run goes on with the slots it started with (decompose_options::cpu_slots, stored).
  if (auto it = args.find("options"); it != args.end() && it->is_object()) o.cpu_slots = it->value("cpu_slots", 0);
  return {};
}

int run_init(const common_options& common, const lineage_options& o) {
  std::optional<std::filesystem::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto t = find_task(o.task, ctx->where);
  if (!t) return fail_with(t.error(), 2);
  auto k = find_task_kernel(*t, o.expert);
  if (!k) return fail_with(k.error(), 2);
  auto session = open_proposer(*ctx, *t, o.proposer, std::nullopt);
  if (!session) return fail_with(session.error(), 2);
  lineages::gate_verifier v(make_gate_hooks(*ctx, o.gate));
  lineages::init_options io;
  if (!o.repo.empty()) io.repo = o.repo;
  if (!o.quiet && !o.json) std::fprintf(stderr, "… init %s %s: gate, screening, re-measure\n", t->name.c_str(), k->name.c_str());
  auto check = lineages::init_expert(*t, *k, v, *(*session)->proposer, *ctx->db, io);
  if (!check) return fail_with(check.error(), 2);
  if (o.json) {
    json j{{"schema", "lathe.init/1"}, {"check", *check}, {"proposer", (*session)->label()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_expert_check(*check);
  }
  return check->accepted ? 0 : 1;
}

int run_decompose(const common_options& common, lineage_options o) {
  std::optional<std::filesystem::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, !o.no_time);
  if (!ctx) return fail_with(ctx.error(), 2);
  if (!o.resume.empty())
    if (auto r = fill_from_run(*ctx, o); !r) return fail_with(r.error(), 2);
  if (o.task.empty()) {
    std::fprintf(stderr, "lathe: decompose needs a TASK (or --resume RUN)\n");
    return 2;
  }
  auto t = find_task(o.task, ctx->where);
  if (!t) return fail_with(t.error(), 2);
  auto k = find_task_kernel(*t, o.expert);
  if (!k) return fail_with(k.error(), 2);
  const std::string run_id = o.resume.empty() ? lineages::new_run_id() : o.resume;
  // --cpu-slots: every evaluation on a free slot; the forward phase's checks on the slots at once.
  auto pool = cpu_slot_pool_for(*t, o.cpu_slots);
  if (!pool) return fail_with(pool.error(), 2);
  auto session = open_proposer(*ctx, *t, o.proposer, run_id, {}, {}, !o.resume.empty());
  if (!session) return fail_with(session.error(), 2);
  // Gate evaluations counted as they are stored, whichever slot made them.
  auto evaluations = std::make_shared<std::atomic<int64_t>>(0);
  lineages::gate_hooks hooks = make_gate_hooks(*ctx, o.gate);
  hooks.record = [inner = hooks.record, evaluations](const kernel_bundle& kb, evaluation& e) {
    ++*evaluations;
    return inner(kb, e);
  };
  const auto v = pooled_verifier(std::move(hooks), pool->get());

  lineages::decompose_options d;
  d.cpu_slots = o.cpu_slots;
  d.max_steps = o.max_steps;
  d.max_rejections = o.max_rejections;
  d.forward = !o.no_forward;
  d.time = !o.no_time;
  d.action_prior = o.prior;
  d.proposer_label = (*session)->label();
  d.config_source = (*session)->decision.config_source;
  if (!o.resume.empty()) d.resume_run = o.resume;
  else d.run_id = run_id;
  if (!o.repo.empty()) d.init.repo = o.repo;
  if (!o.quiet && !o.json)
    d.progress = [](const lineages::decompose_progress& p) { std::fprintf(stderr, "… %s\n", p.message.c_str()); };
  if (!o.quiet && !o.json)
    std::fprintf(stderr, "… decompose %s %s with the %s\n", t->name.c_str(), k->name.c_str(),
                 (*session)->decision.why.c_str());
  auto res = lineages::decompose(*t, *k, *v, *(*session)->proposer, *ctx->db, d);
  if (!res) return fail_with(res.error(), 1);

  std::vector<skill_card> cards;
  std::string induce_note;
  if (!o.no_induce) {
    skills::induce_options io;
    io.tasks = {*t};
    auto got = skills::induce({res->l}, *ctx->db, *(*session)->proposer, io);
    if (got) cards = std::move(*got);
    else induce_note = got.error().message;
  }
  if (o.json) {
    json j{{"schema", "lathe.decompose/1"},
           {"run", res->r.id},
           {"lineage", res->l},
           {"check", res->check},
           {"ran_init", res->ran_init},
           {"resumed", res->resumed},
           {"cards", cards},
           {"induction_error", induce_note.empty() ? json(nullptr) : json(induce_note)},
           {"proposer", (*session)->label()},
           {"evaluations", evaluations->load()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_lineage(res->l, *ctx->db);
    std::printf("\nproposer  %s\n", (*session)->label().c_str());
    if (!o.no_induce) {
      if (!induce_note.empty()) std::printf("cards     none induced: %s\n", induce_note.c_str());
      else print_cards_brief(cards);
    }
    std::printf("run       %s (%lld gate evaluations; `lathe runs show %s`)\n", res->r.id.c_str(),
                static_cast<long long>(evaluations->load()), res->r.id.c_str());
  }
  return res->r.state == run_state::finished ? 0 : 1;
}

void common_lineage_flags(CLI::App* sub, lineage_options& o) {
  sub->add_option("--proposer", o.proposer, "rules | llm | auto (auto: the model in lathe.toml, else the rule engine)")
      ->capture_default_str();
  sub->add_option("--max-time", o.gate.max_time, "longest paired timing series per evaluation, seconds")->capture_default_str();
  sub->add_flag("--quick", o.gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series (wider intervals, larger margins)");
  sub->add_option("--repo", o.repo, "the expert's repository: read-only context for the proposer");
  sub->add_flag("--json", o.json, "print the result as JSON");
  sub->add_flag("--quiet", o.quiet, "no progress lines on stderr");
}

}  // namespace

void add_lineage(CLI::App& app, const common_options& common, int& exit_code) {
  auto io = std::make_shared<lineage_options>();
  CLI::App* init = app.add_subcommand("init", "accept an expert kernel as a lineage end point (gate, library screening, re-measure, features)");
  init->add_option("task", io->task, "task directory, task.toml, or the name of a shipped task")->required();
  init->add_option("expert", io->expert, "the expert kernel: a bundle path or a kernel name of the task")->required();
  common_lineage_flags(init, *io);
  init->footer("Exit code 0: accepted; 1: refused (the reason is printed and stored); 2: usage or setup.");
  init->callback([io, &common, &exit_code] { exit_code = run_init(common, *io); });

  auto d = std::make_shared<lineage_options>();
  CLI::App* dec = app.add_subcommand("decompose", "walk an expert backward through verified de-optimizations, re-derive each step forward, induce cards");
  dec->add_option("task", d->task, "task directory, task.toml, or the name of a shipped task");
  dec->add_option("expert", d->expert, "the expert kernel (default: the task's kernels/expert)");
  dec->add_option("--resume", d->resume, "continue this decompose run (`lathe runs list --kind decompose`)");
  dec->add_option("--max-steps", d->max_steps, "accepted backward steps at most")->capture_default_str();
  dec->add_option("--max-rejections", d->max_rejections, "consecutive rejected attempts at one step")->capture_default_str();
  dec->add_flag("--no-forward", d->no_forward, "skip the forward re-derivation");
  dec->add_flag("--no-induce", d->no_induce, "do not induce skill cards from the lineage");
  dec->add_flag("--no-time", d->no_time, "check correctness only: steps get no measured speedup");
  add_cpu_slots_option(dec, d->cpu_slots,
                       "each evaluation on a free slot; the forward re-derivations' checks N at a time (decided and "
                       "recorded in order; stored with the run; CPU tasks)");
  dec->add_option("--prior", d->prior,
                  "mechanisms to take out first, in order (feature names, remove_<feature> or rule "
                  "names, comma-separated: --prior cp_async_pipeline,fast_math); the proposer tries "
                  "them before the kernel's other features. Kept by --resume")
      ->delimiter(',');
  common_lineage_flags(dec, *d);
  dec->footer("Runs init first when the expert has no accepted check. Kill it at any time: "
              "`--resume RUN` goes on without repeating an accepted step.\n"
              "Exit code 0: the run finished; 1: it failed or the expert was refused; 2: usage or setup.");
  dec->callback([d, &common, &exit_code] { exit_code = run_decompose(common, *d); });
}

}  // namespace lathe::cli
