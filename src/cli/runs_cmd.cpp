// lathe runs list | show RUN: the persistent runs (decompose, optimize, evolve, bench, tune) and
// their event history, read from the store; nothing here changes a run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/json_run.h"
#include "spec/tune.h"  // config_label

namespace lathe::cli {
namespace {

struct runs_options {
  std::string kind, id;
  int limit = 20;
  bool json = false;
};

result<context> open_for_reading(const common_options& common) {
  std::optional<std::filesystem::path> ws;
  if (common.workspace) ws = *common.workspace;
  return open_context(ws, false);
}

json run_json(const run& r) {
  json j = r;
  // args and summary are JSON text in the record; shown as JSON, not as strings.
  for (const char* k : {"args", "summary"}) {
    const std::string text = j[k].get<std::string>();
    j[k] = json::accept(text) ? json::parse(text) : json(nullptr);
  }
  return j;
}

// One line of what a finished run found, from its summary (decompose: termination and steps;
// optimize: the re-measured speedup over the start, the gap recovered, who proposed).
std::string result_text(const run& r) {
  if (r.summary.empty() || !json::accept(r.summary)) return r.message.substr(0, 60);
  const json s = json::parse(r.summary);
  char buf[256];
  if (r.kind == run_kind::decompose) {
    std::snprintf(buf, sizeof buf, "%s, %d step(s)", s.value("termination", std::string("?")).c_str(),
                  s.value("steps", 0));
    return buf;
  }
  if (r.kind == run_kind::optimize) {
    std::string out = s.value("strategy", std::string("?")) + ": ";
    const json& b = s.contains("best_vs_start") ? s.at("best_vs_start") : json(nullptr);
    if (b.is_number()) {
      std::snprintf(buf, sizeof buf, "%.2fx over %s", b.get<double>(),
                    (s.contains("start") ? s.at("start").value("name", std::string("start")) : std::string("start")).c_str());
      out += buf;
    } else if (!s.value("steps", json::array()).empty()) {
      out += "best not confirmed: final series " + s.value("final_best_outcome", std::string("missing"));
    } else {
      out += "no step accepted";
    }
    std::snprintf(buf, sizeof buf, " (%zu step(s), stop %s)", s.value("steps", json::array()).size(),
                  s.value("stop", std::string("?")).c_str());
    out += buf;
    if (s.contains("expert_vs_start") && s.at("expert_vs_start").is_number()) {
      std::snprintf(buf, sizeof buf, "; expert %.2fx", s.at("expert_vs_start").get<double>());
      out += buf;
    }
    if (s.contains("gap_recovered") && s.at("gap_recovered").is_number()) {
      std::snprintf(buf, sizeof buf, ", gap recovered %.0f%%", 100 * s.at("gap_recovered").get<double>());
      out += buf;
    }
    const std::string prop = s.value("proposer", std::string());
    out += prop.rfind("rule-engine", 0) == 0 ? " [rules, mechanical]" : (prop.empty() ? "" : " [" + prop.substr(0, 40) + "]");
    return out;
  }
  if (r.kind == run_kind::bench && s.contains("aggregates")) {
    const json& a = s.at("aggregates");
    std::snprintf(buf, sizeof buf, "%d of %d correct", a.value("correct", 0), a.value("tasks", 0));
    std::string out = buf;
    if (a.contains("geomean") && a.at("geomean").is_number()) {
      std::snprintf(buf, sizeof buf, ", geomean %.2fx", a.at("geomean").get<double>());
      out += buf;
    }
    if (a.contains("fast_p") && !a.at("fast_p").empty()) {
      std::snprintf(buf, sizeof buf, ", fast_%.1f %.2f", a.at("fast_p")[0].value("p", 1.0),
                    a.at("fast_p")[0].value("fraction", 0.0));
      out += buf;
    }
    return out;
  }
  if (r.kind == run_kind::bench && s.contains("groups")) {  // KLineage protocol
    std::string out;
    for (const auto& g : s.at("groups")) {
      std::snprintf(buf, sizeof buf, "%s%s: %d/%d runs ok", out.empty() ? "" : "; ", g.value("role", std::string()).c_str(),
                    g.value("successes", 0), g.value("runs", 0));
      out += buf;
      if (g.contains("geomean") && g.at("geomean").is_number()) {
        std::snprintf(buf, sizeof buf, ", geomean %.2fx", g.at("geomean").get<double>());
        out += buf;
      }
    }
    return out;
  }
  if (r.kind == run_kind::tune) {
    const std::string winner = config_label(s.value("winner", json::object()).get<tune_config>());
    std::snprintf(buf, sizeof buf, "%s: %zu measured, ", s.value("strategy", std::string("?")).c_str(),
                  s.value("points", json::array()).size());
    std::string out = buf;
    const json crown = s.value("crown", json::object());
    if (s.value("improved", false) && crown.contains("speedup") && crown.at("speedup").is_number()) {
      std::snprintf(buf, sizeof buf, "winner %s, %.2fx over the default", winner.c_str(), crown.at("speedup").get<double>());
      out += buf;
    } else {
      out += "the default kept";
    }
    return out;
  }
  if (r.kind == run_kind::evolve) {
    std::snprintf(buf, sizeof buf, "%d children, %zu elites", s.value("children", 0),
                  s.contains("archive") ? s.at("archive").size() : size_t{0});
    std::string out = buf;
    if (s.contains("best_speedup") && s.at("best_speedup").is_number()) {
      std::snprintf(buf, sizeof buf, ", best %.2fx over the baseline", s.at("best_speedup").get<double>());
      out += buf;
    }
    const std::string prop = s.value("proposer", std::string());
    if (prop.rfind("rules", 0) == 0) out += " [rules, mechanical]";
    return out;
  }
  return "";
}

int run_list(const common_options& common, const runs_options& o) {
  auto ctx = open_for_reading(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto runs = ctx->db->list_runs(o.kind, o.limit);
  if (!runs) return fail_with(runs.error(), 1);
  if (o.json) {
    json j{{"schema", "lathe.runs/1"}, {"runs", json::array()}};
    for (const auto& r : *runs) j["runs"].push_back(run_json(r));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  if (runs->empty()) {
    std::printf("no runs in %s\n", ctx->ws.db().c_str());
    return 0;
  }
  std::printf("%-36s  %-9s  %-14s  %-11s  %-24s  %s\n", "run", "kind", "task", "state", "updated", "result");
  for (const auto& r : *runs)
    std::printf("%-36s  %-9s  %-14s  %-11s  %-24s  %s\n", r.id.c_str(), to_string(r.kind), r.task.c_str(),
                to_string(r.state), r.updated_at.c_str(), result_text(r).c_str());
  return 0;
}

int run_show(const common_options& common, const runs_options& o) {
  auto ctx = open_for_reading(common);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto r = ctx->db->get_run(o.id);
  if (!r) return fail_with(r.error(), 1);
  if (!*r) {
    std::fprintf(stderr, "lathe: no run '%s' in %s (`lathe runs list` shows them)\n", o.id.c_str(),
                 ctx->ws.db().c_str());
    return 2;
  }
  auto events = ctx->db->run_events(o.id);
  if (!events) return fail_with(events.error(), 1);
  if (o.json) {
    json j{{"schema", "lathe.run/1"}, {"run", run_json(**r)}, {"events", json::array()}};
    for (const auto& e : *events)
      j["events"].push_back({{"seq", e.seq},
                             {"created_at", e.created_at},
                             {"kind", e.kind},
                             {"body", json::accept(e.json) ? json::parse(e.json) : json(e.json)}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const run& x = **r;
  std::printf("run       %s (%s of %s)\n", x.id.c_str(), to_string(x.kind), x.task.c_str());
  std::printf("state     %s%s%s\n", to_string(x.state), x.message.empty() ? "" : ": ", x.message.c_str());
  std::printf("created   %s, updated %s\n", x.created_at.c_str(), x.updated_at.c_str());
  std::printf("events    %zu\n", events->size());
  for (const auto& e : *events) {
    std::string body = e.json;
    if (body.size() > 140) body = body.substr(0, 137) + "...";
    std::printf("  %4lld  %-22s %s\n", static_cast<long long>(e.seq), e.kind.c_str(), body.c_str());
  }
  if (!x.summary.empty()) std::printf("summary   %s\n", x.summary.c_str());
  return 0;
}

}  // namespace

void add_runs(CLI::App& app, const common_options& common, int& exit_code) {
  CLI::App* sub = app.add_subcommand("runs", "persistent runs (decompose, optimize, evolve, bench, tune) and their history");
  sub->require_subcommand(1);
  auto o = std::make_shared<runs_options>();
  CLI::App* list = sub->add_subcommand("list", "the runs of this workspace, newest first");
  list->add_option("--kind", o->kind, "only runs of this kind (decompose, optimize, evolve, bench, tune)");
  list->add_option("--limit", o->limit, "at most this many (0: all)")->capture_default_str();
  list->add_flag("--json", o->json, "print as JSON (schema lathe.runs/1)");
  list->callback([o, &common, &exit_code] { exit_code = run_list(common, *o); });
  CLI::App* show = sub->add_subcommand("show", "one run: its state, arguments, events and summary");
  show->add_option("run", o->id, "the run's id (`lathe runs list`)")->required();
  show->add_flag("--json", o->json, "print as JSON (schema lathe.run/1)");
  show->callback([o, &common, &exit_code] { exit_code = run_show(common, *o); });
}

}  // namespace lathe::cli
