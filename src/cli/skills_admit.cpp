#include "cli/skills_admit.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/cpu_slots.h"
#include "cli/fail.h"
#include "cli/gate_options.h"
#include "cli/lineage_view.h"
#include "cli/proposer_session.h"
#include "core/json.h"
#include "core/json_card.h"
#include "core/text.h"
#include "skills/admit.h"
#include "verify/verifier.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct admit_cli {
  std::vector<std::string> cards, tasks;
  std::string proposer = "auto", kernel;
  gate_settings gate = gate_settings_with(1.0);  // --max-time, --quick
  bool all = false, json = false, keep_going = false;
  int32_t cpu_slots = 0;  // --cpu-slots N (cli/cpu_slots.h); 0: none, the whole machine unpinned
};

// The held-out tasks: the named ones, else every shipped task whose role is heldout.
result<std::vector<task>> heldout_tasks(const context& ctx, const admit_cli& o) {
  std::vector<task> out;
  if (!o.tasks.empty()) {
    for (const auto& n : o.tasks) {
      auto t = find_task(n, ctx.where);
      if (!t) return tl::unexpected(t.error());
      out.push_back(std::move(*t));
    }
    return out;
  }
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(ctx.where.tasks_dir, ec))
    if (fs::exists(e.path() / "task.toml", ec)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    auto t = find_task(d.string(), ctx.where);
    if (t && t->role == task_role::heldout) out.push_back(std::move(*t));
  }
  return out;
}

platform card_platform(const skill_card& c) {
  return c.target.rfind("sm_", 0) == 0 ? platform::cuda : platform::cpu;
}

// --cpu-slots: a card's CPU trials on the slots at once. A CUDA task named as ground is refused
// (its slot is the GPU); the shipped CUDA ground, taken by default, is tried as before.
result<std::unique_ptr<gate::cpu_slot_pool>> admission_slots(const admit_cli& o, const std::vector<task>& tasks) {
  if (o.cpu_slots > 0 && !o.tasks.empty())
    for (const auto& t : tasks)
      if (t.plat == platform::cuda) return cpu_slot_pool_for(t, o.cpu_slots);  // the refusal
  return make_cpu_slot_pool(o.cpu_slots);
}

int run_admit(const common_options& common, const admit_cli& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, true);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto tasks = heldout_tasks(*ctx, o);
  if (!tasks) return fail_with(tasks.error(), 2);
  auto pool = admission_slots(o, *tasks);
  if (!pool) return fail_with(pool.error(), 2);
  auto stored = ctx->db->list_cards("");
  if (!stored) return fail_with(stored.error(), 1);
  std::vector<skill_card> cards;
  for (auto& c : *stored) {
    const bool named = std::find(o.cards.begin(), o.cards.end(), c.name) != o.cards.end() ||
                       std::find(o.cards.begin(), o.cards.end(), c.id) != o.cards.end();
    if (!o.cards.empty() ? named : (o.all || c.status == card_status::candidate)) cards.push_back(std::move(c));
  }
  if (cards.empty()) {
    std::fprintf(stderr, "lathe: no %s cards to try (`lathe skills list`; --all tries admitted and refused ones again)\n",
                 o.cards.empty() ? "candidate" : "such");
    return o.cards.empty() ? 0 : 2;
  }

  json out{{"schema", "lathe.admission/1"}, {"platforms", json::array()}};
  int code = 0;
  for (platform plat : {platform::cpu, platform::cuda}) {
    std::vector<skill_card> mine;
    for (const auto& c : cards)
      if (card_platform(c) == plat) mine.push_back(c);
    std::vector<task> ground;
    for (const auto& t : *tasks)
      if (t.plat == plat) ground.push_back(t);
    if (mine.empty()) continue;
    if (plat == platform::cuda && !ctx->gpu) {
      std::fprintf(stderr, "lathe: %zu CUDA card(s) not tried: no GPU here (%s)\n", mine.size(),
                   ctx->gpu_error.empty() ? "no NVIDIA device" : ctx->gpu_error.c_str());
      continue;
    }
    if (ground.empty()) {
      std::fprintf(stderr, "lathe: %zu %s card(s) not tried: no held-out %s task\n", mine.size(), to_string(plat),
                   to_string(plat));
      continue;
    }
    // The rule engine's options come from a task (fast math only where the tolerance allows it):
    // the first held-out task that does not allow it, so that no card is replayed looser than
    // a task it is tried on accepts.
    const task* opts_task = &ground.front();
    for (const auto& t : ground)
      if (!t.allow_fast_math) opts_task = &t;
    auto session = open_proposer(*ctx, *opts_task, o.proposer, std::nullopt);
    if (!session) return fail_with(session.error(), 2);
    gate::cpu_slot_pool* slots = plat == platform::cpu ? pool->get() : nullptr;
    const auto v = pooled_verifier(make_gate_hooks(*ctx, o.gate), slots);
    skills::admit_options ao;
    ao.in_flight = slots ? static_cast<int32_t>(slots->slots().size()) : 1;
    ao.tgt = plat == platform::cuda ? *ctx->gpu : ctx->tgt;
    ao.start_kernel = o.kernel;
    if (!o.json)
      std::fprintf(stderr, "… admission of %zu %s card(s) on %zu held-out task(s) with the %s\n", mine.size(),
                   to_string(plat), ground.size(), (*session)->decision.why.c_str());
    auto res = skills::admit(mine, ground, *v, *(*session)->proposer, *ctx->db, ao);
    if (!res) return fail_with(res.error(), 1);
    json pj{{"platform", to_string(plat)},
            {"proposer", (*session)->label()},
            {"tasks", json::array()},
            {"cards", json::array()},
            {"refused_ground", json::array()}};
    for (const auto& t : ground) pj["tasks"].push_back(t.name);
    for (const auto& a : res->cards)
      pj["cards"].push_back({{"card", a.card_id}, {"name", a.name}, {"status", to_string(a.status)},
                             {"reason", a.reason}, {"reproduced", a.reproduced}, {"trials", a.trials}});
    for (const auto& g : res->refused)
      pj["refused_ground"].push_back({{"task", g.task}, {"card", g.card}, {"reason", g.reason}});
    const auto rate = res->rates.count(to_string(plat)) ? res->rates.at(to_string(plat)) : skills::platform_rate{};
    pj["admission_rate"] = {{"decided", rate.decided}, {"admitted", rate.admitted}, {"rate", rate.rate()}};
    pj["cost"] = {{"gate_evaluations", res->cost.gate_evaluations}, {"proposer_calls", res->cost.proposer_calls},
                  {"model_calls", res->cost.model_calls}, {"seconds", res->cost.seconds}};
    out["platforms"].push_back(pj);
    if (o.json) continue;
    std::printf("platform  %s: held-out tasks %s\n", to_string(plat), join(pj["tasks"].get<std::vector<std::string>>(), ", ").c_str());
    std::printf("proposer  %s\n", (*session)->label().c_str());
    for (const auto& a : res->cards) {
      std::printf("  %-40s %-15s reproduced on %d task(s)\n", a.name.c_str(), to_string(a.status), a.reproduced);
      for (const auto& t : a.trials)
        std::printf("      %-12s %-15s %8s  %s%s%s\n", t.task.c_str(), to_string(t.verdict), ratio_text(t.ratio).c_str(),
                    t.outcome.empty() ? "" : ("gate " + t.outcome).c_str(), t.reason.empty() ? "" : ": ",
                    t.reason.substr(0, 160).c_str());
      if (!a.reason.empty() && a.status != card_status::admitted) std::printf("      why: %s\n", a.reason.c_str());
    }
    for (const auto& g : res->refused)
      std::printf("  refused ground %s%s%s: %s\n", g.task.c_str(), g.card.empty() ? "" : " for ", g.card.c_str(),
                  g.reason.c_str());
    std::printf("rate      %d of %d decided card(s) admitted (%.0f%%)\n", rate.admitted, rate.decided, 100 * rate.rate());
    std::printf("cost      %lld gate evaluations, %lld proposer calls (%lld model calls), %.1f s\n",
                static_cast<long long>(res->cost.gate_evaluations), static_cast<long long>(res->cost.proposer_calls),
                static_cast<long long>(res->cost.model_calls), res->cost.seconds);
  }
  if (o.json) std::printf("%s\n", out.dump(2).c_str());
  return code;
}

}  // namespace

void add_skills_admit(CLI::App* skills, const common_options& common, int& exit_code) {
  auto o = std::make_shared<admit_cli>();
  CLI::App* admit = skills->add_subcommand(
      "admit", "try candidate cards on held-out tasks' kernels: admitted when the gate passes and the effect is reproduced on >= 2 tasks");
  admit->add_option("--card", o->cards, "only this card (name or id; repeatable)");
  admit->add_option("--task", o->tasks, "only these held-out tasks (repeatable; default: every shipped held-out task); a bare "
                    "KernelBench problem file is ground too, its trials starting from its own Model as a ModelNew");
  admit->add_option("--kernel", o->kernel, "start each held-out task's trials from its kernel of this name (default: the "
                    "task's baseline); a tuned-knobs card is tried only on kernels declaring its tunables");
  admit->add_flag("--all", o->all, "try admitted and refused cards again, not only candidates");
  admit->add_option("--proposer", o->proposer, "rules | llm | auto")->capture_default_str();
  admit->add_option("--max-time", o->gate.max_time, "longest paired timing series per trial, seconds")->capture_default_str();
  admit->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series (wider intervals, larger margins)");
  add_cpu_slots_option(admit, o->cpu_slots,
                       "a card's held-out CPU trials, each on a free slot at once (logged and decided as one at a time; "
                       "CPU tasks)");
  admit->add_flag("--json", o->json, "print as JSON (schema lathe.admission/1)");
  admit->footer("Source tasks are never admission ground. Admissions made by rule replay are labelled replay-admitted.");
  admit->callback([o, &common, &exit_code] { exit_code = run_admit(common, *o); });
}

}  // namespace lathe::cli
