// lathe rules list | apply TASK KERNEL: the offline rule engine on its own (docs/rules.md
// "Verbs"), so that it can be used and judged without a lineage around it. Every result of
// `apply` is gated against the kernel it was made from (the baseline), so the paired ratio is the
// effect of that one step, and stored like any evaluation with provenance rules:<rule>.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/rules/catalog.h"
#include "cli/context.h"
#include "cli/fail.h"
#include "cli/proposer_session.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "features/detect.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

namespace rules = agent::rules;

// Rule results show that the machinery works, not that anything was learned (DESIGN.md).
constexpr const char* kLabel = rules_engine_label;

struct apply_options {
  std::string task, kernel;
  bool backward = false, forward = false, json = false, no_time = false, no_aa = false;
  std::vector<std::string> rules;
  gate_settings gate;  // --max-time, --seeds (the gate's defaults)
};

struct row {
  rules::rule_invocation inv;
  std::string locus, feature;
  std::vector<std::string> removes, adds, assumed;
  std::string note, message;
  std::optional<lathe::outcome> outcome;  // the gate's; none: the rule declined the site
  std::optional<paired_series> paired;
  int64_t evaluation_id = 0;
};

int run_list(bool as_json) {
  if (as_json) {
    json j{{"schema", "lathe.rules_list/1"}, {"rules", json::array()}};
    for (const rules::rule* r : rules::catalog())
      j["rules"].push_back({{"name", r->name()},
                            {"direction", rules::to_string(r->direction())},
                            {"feature", r->feature().empty() ? json(nullptr) : json(r->feature())},
                            {"description", r->description()},
                            {"preconditions", r->preconditions()},
                            {"assumed", r->assumed()}});
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  size_t w = 0;
  for (const rules::rule* r : rules::catalog()) w = std::max(w, r->name().size());
  for (const rules::rule* r : rules::catalog()) {
    const std::string feat = r->feature().empty() ? "(no feature)" : std::string(r->feature());
    std::printf("%-*s  %-8s  %-15s  %s\n", static_cast<int>(w), std::string(r->name()).c_str(),
                rules::to_string(r->direction()), feat.c_str(), std::string(r->description()).c_str());
    std::printf("%*s  requires: %s\n", static_cast<int>(w), "", std::string(r->preconditions()).c_str());
    if (auto a = r->assumed(); !a.empty())
      std::printf("%*s  assumes: %s\n", static_cast<int>(w), "", join(a, "; ").c_str());
  }
  std::printf("\n%zu rules. Forward fast-math rules run only where the task allows approximate math.\n",
              rules::catalog().size());
  return 0;
}

// The anchor as a user tells sites apart: sites one anchor cannot separate carry identity
// parameters (`pointer=x4`, `directive=2`), shown with it; options (allow_fast_math) are not.
std::string site_text(const rules::rule_invocation& inv) {
  std::string s = inv.anchor;
  for (const auto& [k, v] : inv.params)
    if (k != "allow_fast_math") s += " " + k + "=" + v;
  return s;
}

// The outcome as the table and the JSON show it: the gate's, or not_applied.
std::string_view outcome_shown(const row& r) { return r.outcome ? to_string(*r.outcome) : "not_applied"; }

std::string ratio_text(const row& r) {
  if (!r.paired) return "-";
  char b[96];
  std::snprintf(b, sizeof b, "%.3f [%.3f, %.3f]", r.paired->ratio, r.paired->ci_low, r.paired->ci_high);
  return b;
}

void print_table(const std::vector<row>& rows) {
  size_t wr = 4, wa = 6, wo = 7;
  for (const auto& r : rows) {
    wr = std::max(wr, r.inv.rule.size());
    wa = std::max(wa, site_text(r.inv).size());
    wo = std::max(wo, outcome_shown(r).size());
  }
  std::printf("%-*s  %-*s  %-*s  %s\n", int(wr), "rule", int(wa), "anchor", int(wo), "outcome",
              "ratio [95% CI]");
  for (const auto& r : rows) {
    std::printf("%-*s  %-*s  %-*s  %s\n", int(wr), r.inv.rule.c_str(), int(wa), site_text(r.inv).c_str(),
                int(wo), std::string(outcome_shown(r)).c_str(), ratio_text(r).c_str());
    if (r.outcome != outcome::ok && !r.message.empty())
      std::printf("%*s  %s\n", int(wr), "", r.message.substr(0, 200).c_str());
  }
}

json row_json(const row& r) {
  json j{{"rule", r.inv.rule},          {"anchor", r.inv.anchor},   {"locus", r.locus},
         {"feature", r.feature},        {"carrier", r.inv},         {"removes", r.removes},
         {"adds", r.adds},              {"assumed", r.assumed},     {"note", r.note},
         {"provenance", to_string(provenance{"rules", r.inv.rule, true})},
         {"outcome", outcome_shown(r)}, {"message", r.message},
         {"evaluation", r.evaluation_id ? json(r.evaluation_id) : json(nullptr)}};
  j["ratio"] = r.paired ? json(r.paired->ratio) : json(nullptr);
  j["ci"] = r.paired ? json::array({r.paired->ci_low, r.paired->ci_high}) : json(nullptr);
  return j;
}

// The directions to run: the flag's, else those of the named rules, else both.
std::vector<rules::rule_direction> directions(const apply_options& o) {
  using d = rules::rule_direction;
  if (o.backward) return {d::backward};
  if (o.forward) return {d::forward};
  if (o.rules.empty()) return {d::backward, d::forward};
  std::vector<d> out;
  for (const auto& n : o.rules)
    if (auto dir = rules::find_rule(n)->direction(); std::find(out.begin(), out.end(), dir) == out.end())
      out.push_back(dir);
  return out;
}

// Usage first: a misspelt rule is an error before anything is opened or built. False after
// saying what is wrong.
bool rules_usable(const apply_options& o) {
  for (const auto& n : o.rules) {
    const rules::rule* r = rules::find_rule(n);
    if (!r) {
      std::fprintf(stderr, "lathe: no rule named '%s' in the catalog (`lathe rules list` shows them)\n", n.c_str());
      return false;
    }
    if ((o.backward && r->direction() != rules::rule_direction::backward) ||
        (o.forward && r->direction() != rules::rule_direction::forward)) {
      std::fprintf(stderr, "lathe: rule '%s' is a %s rule; it does not run with %s\n", n.c_str(),
                   rules::to_string(r->direction()), o.backward ? "--backward" : "--forward");
      return false;
    }
  }
  return true;
}

// One site: the rule applied to kernel `k` there, and its result gated against `k`.
row gate_site(const rules::applicable_site& s, const apply_options& o, context& ctx, const task& t,
              const kernel_bundle& k, const gate::gate_config& cfg) {
  row r;
  r.inv = s.invocation;
  r.feature = std::string(s.what->feature());
  r.locus = s.site.locus;
  if (!o.json) std::fprintf(stderr, "… %s at %s\n", r.inv.rule.c_str(), site_text(r.inv).c_str());
  auto res = s.what->apply(k, s.invocation);
  if (!res) {
    // The site is listed but the rule declined it on a closer look: no kernel to gate.
    r.message = res.error().message;
    return r;
  }
  r.removes = res->removes;
  r.adds = res->adds;
  r.assumed = res->assumed;
  r.note = res->note;
  r.locus = res->locus;
  gate::gate_request req;
  req.t = &t;
  req.candidate = res->kernel;
  req.baseline = k;  // the original: the paired ratio is this step's effect
  req.prov = {"rules", r.inv.rule, true};
  evaluation e = gate::evaluate(cfg, req);
  r.outcome = e.result;
  r.message = e.message;
  r.paired = e.paired;
  if (auto id = store_evaluation(ctx, res->kernel, e)) r.evaluation_id = *id;
  else std::fprintf(stderr, "lathe: the evaluation was not stored: %s\n", id.error().message.c_str());
  return r;
}

// What the engine could not touch: the kernel's detected features that no gated result moved.
struct untouched_features {
  std::vector<std::string> text;  // "simd @ exp_ps, hmax": one entry per name, its loci
  json as_json = json::array();
};

untouched_features untouched_by(const std::vector<row>& rows, const kernel_bundle& k) {
  std::set<std::string> touched;
  for (const auto& r : rows)
    if (r.outcome && correct(*r.outcome)) {  // unstable too: correct, only the timing undecided
      touched.insert(r.removes.begin(), r.removes.end());
      touched.insert(r.adds.begin(), r.adds.end());
    }
  untouched_features out;
  for (const auto& d : rules::detect_source(k))
    if (!touched.count(d.what.name)) {
      out.as_json.push_back({{"name", d.what.name}, {"locus", d.what.locus}});
      const std::string head = d.what.name + " @ ";
      auto it = std::find_if(out.text.begin(), out.text.end(),
                             [&](const std::string& u) { return u.rfind(head, 0) == 0; });
      if (it == out.text.end()) out.text.push_back(head + d.what.locus);
      else *it += ", " + d.what.locus;
    }
  return out;
}

void print_apply(const apply_options& o, const context& ctx, const task& t, const kernel_bundle& k,
                 const std::vector<row>& rows, const untouched_features& untouched) {
  if (o.json) {
    json j{{"schema", "lathe.rules_apply/1"},
           {"task", t.name},
           {"kernel", {{"name", k.name}, {"hash", k.hash}}},
           {"label", kLabel},
           {"timed", !o.no_time},
           {"results", json::array()},
           {"untouched", untouched.as_json}};
    for (const auto& r : rows) j["results"].push_back(row_json(r));
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("task      %s (%s)\n", t.name.c_str(), to_string(t.plat));
  std::printf("kernel    %s  [%.12s]\n", k.name.c_str(), k.hash.c_str());
  std::printf("engine    %s\n", kLabel);
  std::printf("baseline  each result is gated against this kernel: ratio = its time / the result's "
              "(> 1: the step made it faster)\n\n");
  if (rows.empty()) std::printf("no rule applies here\n");
  else print_table(rows);
  std::printf("\nuntouched %s\n", untouched.text.empty() ? "(none: every detected feature was moved by a rule)"
                                                         : join(untouched.text, "; ").c_str());
  int64_t first = 0, last = 0;
  for (const auto& r : rows)
    if (r.evaluation_id) {
      if (!first) first = r.evaluation_id;
      last = r.evaluation_id;
    }
  if (first)
    std::printf("stored    evaluations #%lld-#%lld in %s (provenance rules:<rule>)\n",
                static_cast<long long>(first), static_cast<long long>(last), ctx.ws.db().c_str());
}

int run_apply(const common_options& common, const apply_options& o) {
  if (!rules_usable(o)) return 2;
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, !o.no_time);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto t = find_task(o.task, ctx->where);
  if (!t) return fail_with(t.error(), 2);
  auto k = find_task_kernel(*t, o.kernel);
  if (!k) return fail_with(k.error(), 2);
  rules::catalog_options copts;
  copts.allow_fast_math = t->allow_fast_math;  // the task's tolerance, never the rule's choice
  std::vector<rules::applicable_site> sites;
  for (auto dir : directions(o))
    for (auto& s : rules::applicable(*k, dir, copts))
      if (o.rules.empty() || std::find(o.rules.begin(), o.rules.end(), s.what->name()) != o.rules.end())
        sites.push_back(std::move(s));

  gate_settings gs = o.gate;
  gs.time = !o.no_time;
  gs.aa_control = !o.no_aa;
  gs.progress = false;
  gate::gate_config cfg = make_gate_config(*ctx, *t, gs);
  std::vector<row> rows;
  for (const auto& s : sites) rows.push_back(gate_site(s, o, *ctx, *t, *k, cfg));
  print_apply(o, *ctx, *t, *k, rows, untouched_by(rows, *k));
  return 0;
}

}  // namespace

void add_rules(CLI::App& app, const common_options& common, int& exit_code) {
  CLI::App* sub = app.add_subcommand("rules", "the offline rule engine: its catalog, and every result on a kernel gated");
  sub->require_subcommand(1);

  auto list_json = std::make_shared<bool>(false);
  CLI::App* list = sub->add_subcommand("list", "the catalog: each rule's direction, feature, preconditions and assumptions");
  list->add_flag("--json", *list_json, "print the catalog as JSON (schema lathe.rules_list/1)");
  list->callback([list_json, &exit_code] { exit_code = run_list(*list_json); });

  auto o = std::make_shared<apply_options>();
  CLI::App* apply = sub->add_subcommand(
      "apply", "every applicable site of the selected rules on a kernel, each result gated against it");
  apply->add_option("task", o->task, "task directory, task.toml, or the name of a shipped task")->required();
  apply->add_option("kernel", o->kernel, "kernel bundle or a kernel name of the task")->required();
  auto* back = apply->add_flag("--backward", o->backward, "only backward rules (remove a mechanism)");
  auto* fwd = apply->add_flag("--forward", o->forward, "only forward rules (add a mechanism)");
  back->excludes(fwd);
  apply->add_option("--rule", o->rules, "only this rule (repeatable; `lathe rules list` names them)");
  apply->add_flag("--json", o->json, "print the results as JSON (schema lathe.rules_apply/1)");
  apply->add_flag("--no-time", o->no_time, "stop each evaluation after the correctness checks");
  apply->add_flag("--no-aa", o->no_aa, "skip the A/A control of each evaluation");
  apply->add_option("--max-time", o->gate.max_time, "longest paired timing series per result, seconds")
      ->capture_default_str();
  apply->add_option("--seeds", o->gate.seeds, "correctness trials per shape set (at least 3)")->capture_default_str();
  apply->footer("Exit code 0 when it ran, whatever the outcomes; 2 for bad usage (an unknown rule).");
  apply->callback([o, &common, &exit_code] { exit_code = run_apply(common, *o); });
}

}  // namespace lathe::cli
