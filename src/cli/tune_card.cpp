#include "cli/tune_card.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "core/json_card.h"
#include "core/run.h"
#include "core/text.h"
#include "spec/tune.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace lathe::cli {

namespace {

// Why a tune run's result crowned no winner (the default stood), or empty when it did.
std::string no_winner(const json& j) {
  if (j.is_object() && j.value("improved", false)) return "";
  std::string why = "it crowned no winner: no configuration was decided faster than the default";
  if (j.is_object() && j.contains("crown") && j["crown"].is_object()) {
    const json& c = j["crown"];
    why += cat(" (the best re-timed against it: ", c.value("outcome", std::string("-")),
               c.contains("decision") ? ", " + c.value("decision", std::string()) : "", ")");
  }
  return why + "; the default stood";
}

}  // namespace

result<skills::tune_win> win_of_tune(const json& j, const task& t, const target& tgt,
                                     language lang) {
  if (const std::string why = no_winner(j); !why.empty()) return fail(errc::invalid_argument, why);
  const json crown = j.value("crown", json());
  if (!crown.is_object() || !crown.contains("speedup") || !crown.contains("interval") ||
      !crown["interval"].is_array() || crown["interval"].size() != 2 ||
      crown.value("evaluation", int64_t{0}) <= 0)
    return fail(errc::invalid_argument,
                "its crown has no paired ratio and interval from a stored evaluation");
  if (!j.contains("best") || !j["best"].is_object())
    return fail(errc::invalid_argument, "its result names no best configuration");
  skills::tune_win w;
  w.t = &t;
  w.tgt = tgt;
  w.kernel = j.value("kernel", std::string());
  w.lang = lang;
  w.default_hash = j.value("default_hash", std::string());
  w.defaults = j.value("default", tune_config{});
  w.winner = j.value("winner", tune_config{});
  w.ratio = crown["speedup"].get<double>();
  w.lo = crown["interval"][0].get<double>();
  w.hi = crown["interval"][1].get<double>();
  w.evidence = {crown["evaluation"].get<int64_t>()};
  // The search's own measurement of the winner, after the crown (when it is another evaluation).
  if (const int64_t e = j["best"].value("evaluation", int64_t{0}); e > 0 && e != w.evidence.front())
    w.evidence.push_back(e);
  w.run = j.value("run", std::string());
  if (w.default_hash.empty() || w.winner.empty())
    return fail(errc::invalid_argument,
                "its result names no default hash or winning configuration");
  return w;
}

result<json> store_tune_card(const skills::tune_win& w, store& db) {
  skill_card c = skills::card_from_tune(w);
  auto name = skills::store_tuned_card(db, c);
  if (!name) return tl::unexpected(name.error());
  return json{{"id", c.id}, {"name", *name}, {"evidence", c.evidence}};
}

namespace {

struct from_tune_cli {
  std::string run;
  bool json_out = false;
};

// Why a stored run has no result to read a winner from: it is still running (or was killed:
// the store cannot tell), was interrupted, or failed. Empty for a finished run.
std::string unfinished(const run& r) {
  const std::string on = cat("tune run ", r.id, " (", r.task, ", begun ", r.created_at,
                             ", last written ", r.updated_at, ")");
  const std::string resume = cat("; `lathe tune --resume ", r.id,
                                 "` finishes it (what it measured comes back from the cache) ",
                                 "and makes the card if it crowns a winner");
  switch (r.state) {
    case run_state::running:
      return on +
             " has not finished: it is still measuring, or was killed; it has no result and no "
             "winner yet" +
             resume;
    case run_state::interrupted:
      return on + " was interrupted" + (r.message.empty() ? "" : " (" + r.message + ")") +
             ": it has no result and no winner" + resume;
    case run_state::failed:
      return on + " failed" + (r.message.empty() ? "" : ": " + r.message) +
             "; it has no winner to make a card of";
    case run_state::finished:
      break;
  }
  return "";
}

// What the card needs beside the run's result: the task (its operator, name and shapes, read again
// from the path the run stored), the target and the kernel's language (the crowning evaluation's:
// where the crown was measured, and the bundle it measured).
struct run_ground {
  task t;
  target tgt;
  language lang = language::cpp;
};

result<run_ground> ground_of(context& ctx, const run& r, const json& result) {
  const json args = json::parse(r.args, nullptr, false);
  const std::string path = args.is_object() ? args.value("task", std::string()) : std::string();
  if (path.empty()) return fail(errc::parse_error, "tune run " + r.id + " stored no task argument");
  auto t = find_task(path, ctx.where);
  if (!t)
    return fail(errc::not_found, cat("tune run ", r.id, "'s task ", path,
                                     " cannot be read (the card takes its operator and ",
                                     "shapes from it): ", t.error().message));
  if (t->name != result.value("task", t->name))
    return fail(errc::invalid_argument,
                cat("tune run ", r.id, " tuned task ", result.value("task", std::string()), "; ",
                    path, " is task ", t->name, " now"));
  const int64_t crown =
      result.contains("crown") ? result["crown"].value("evaluation", int64_t{0}) : 0;
  auto e = ctx.db->get_evaluation(crown);
  if (!e)
    return fail(errc::not_found,
                cat("tune run ", r.id, "'s crowning evaluation ", std::to_string(crown),
                    " is not in the store: ", e.error().message));
  auto k = ctx.db->get_kernel(e->kernel_hash);
  if (!k)
    return fail(errc::not_found,
                cat("the kernel the crown measured (", e->kernel_hash.substr(0, 12),
                    ") is not in the store: ", k.error().message));
  return run_ground{std::move(*t), e->tgt, k->manifest.lang};
}

int run_from_tune(const common_options& common, const from_tune_cli& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, false);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto got = ctx->db->get_run(o.run);
  if (!got) return fail_with(got.error(), 1);
  if (!*got)
    return fail_with("no tune run '" + o.run + "' in " + ctx->ws.db().string() +
                         " (`lathe runs list --kind tune` lists them)",
                     2);
  const run& r = **got;
  if (r.kind != run_kind::tune)
    return fail_with(cat("run '", r.id, "' is ", a_run(r.kind),
                         ", not a tune run (`lathe runs list --kind tune` lists them)"),
                     2);
  if (const std::string why = unfinished(r); !why.empty()) return fail_with(why, 1);
  const json result = json::parse(r.summary, nullptr, false);
  if (!result.is_object())
    return fail_with("tune run " + r.id + " finished with no readable result", 1);
  if (const std::string why = no_winner(result); !why.empty())
    return fail_with(cat("tune run ", r.id, ": ", why, " (no card to make)"), 1);
  auto g = ground_of(*ctx, r, result);
  if (!g) return fail_with(g.error(), 1);
  auto w = win_of_tune(result, g->t, g->tgt, g->lang);
  if (!w)
    return fail_with(cat("tune run ", r.id, ": ", w.error().message, " (no card to make)"), 1);
  const std::string id = skills::card_from_tune(*w).id;
  auto before = ctx->db->get_card(id);
  if (!before) return fail_with(before.error(), 1);
  auto made = store_tune_card(*w, *ctx->db);
  if (!made) return fail_with("the winner was not stored as a card: " + made.error().message, 1);
  auto card = ctx->db->get_card(id);
  if (!card || !*card)
    return fail_with("the card " + id + " was stored but cannot be read back", 1);
  if (o.json_out) {
    std::printf("%s\n", json{{"schema", "lathe.tune-card/1"},
                             {"run", r.id},
                             {"again", before->has_value()},
                             {"card", **card}}
                            .dump(2)
                            .c_str());
    return 0;
  }
  const skill_card& c = **card;
  std::printf("card      %s (lathe skills show %s)%s\n", c.name.c_str(), c.name.c_str(),
              before->has_value() ? cat(": made again, keeps its status ", to_string(c.status),
                                        " and ", std::to_string(c.trials.size()), " trial(s)")
                                        .c_str()
                                  : ": new");
  std::printf("tuned     %s over the default %s: %.3fx [%.3f, %.3f] on %s\n",
              config_label(w->winner).c_str(), config_label(w->defaults).c_str(), w->ratio,
              w->lo.value_or(0), w->hi.value_or(0), c.target.c_str());
  std::vector<std::string> ids;
  for (int64_t e : c.evidence) ids.push_back(std::to_string(e));
  std::printf("from      tune run %s (%s %s), evidence evaluation(s) %s\n", r.id.c_str(),
              g->t.name.c_str(), w->kernel.c_str(), join(ids, ", ").c_str());
  return 0;
}

}  // namespace

void add_skills_from_tune(CLI::App* skills, const common_options& common, int& exit_code) {
  auto o = std::make_shared<from_tune_cli>();
  CLI::App* cmd =
      skills->add_subcommand("from-tune",
                             "the card of a stored tune run's winner (made again, or for a run "
                             "stored before tune made cards)");
  cmd->add_option("run", o->run, "a tune run's id (`lathe runs list --kind tune`)")->required();
  cmd->add_flag("--json", o->json_out, "print the stored card as JSON (schema lathe.tune-card/1)");
  cmd->footer(
      "Reads the run's stored result and makes the tuned-knobs card lathe tune makes at the end of "
      "a run that\n"
      "crowns a winner (docs/tune.md \"The winner as a card\"): the same card from the same run. A "
      "card already\n"
      "stored for the same values keeps its status and trials. Nothing is measured.\n"
      "Exit code 0: the card was stored; 1: the run has no winner (the default stood, it failed, "
      "or it has not\n"
      "finished: `lathe tune --resume RUN`); 2: no such tune run.");
  cmd->callback([o, &common, &exit_code] { exit_code = run_from_tune(common, *o); });
}

}  // namespace lathe::cli
