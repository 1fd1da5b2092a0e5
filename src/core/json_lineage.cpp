// JSON of the lineage-side vocabulary: features, provenance, transitions, lineages, skill cards,
// budgets and runs.
#include "core/json.h"
#include "core/json_detail.h"

namespace lathe {

using namespace json_detail;

void to_json(json& j, const feature& f) {
  j = json{
      {"locus", f.locus}, {"name", f.name}, {"params", f.params}, {"method", to_string(f.method)}};
}

void from_json(const json& j, feature& f) {
  f = feature{};
  get(j, "locus", f.locus);
  get(j, "name", f.name);
  get(j, "params", f.params);
  get_enum(j, "method", f.method, detection_method::proposer_audit);
}

void to_json(json& j, const provenance& p) {
  j = json{{"kind", p.kind}, {"detail", p.detail}, {"mechanical", p.mechanical}};
}

void from_json(const json& j, provenance& p) {
  p = provenance{};
  get(j, "kind", p.kind);
  get(j, "detail", p.detail);
  get(j, "mechanical", p.mechanical);
}

void to_json(json& j, const transition& t) {
  j = json{{"from", t.from_kernel},  {"to", t.to_kernel},
           {"action", t.action},     {"locus", t.locus},
           {"edit", t.edit},         {"removed", t.removed},
           {"added", t.added},       {"evaluations", t.evaluations},
           {"rejected", t.rejected}, {"provenance", t.prov}};
  put_opt(j, "speedup", t.speedup);
}

void from_json(const json& j, transition& t) {
  t = transition{};
  get(j, "from", t.from_kernel);
  get(j, "to", t.to_kernel);
  get(j, "action", t.action);
  get(j, "locus", t.locus);
  get(j, "edit", t.edit);
  get(j, "removed", t.removed);
  get(j, "added", t.added);
  get_opt(j, "speedup", t.speedup);
  get(j, "evaluations", t.evaluations);
  get(j, "rejected", t.rejected);
  get(j, "provenance", t.prov);
}

void to_json(json& j, const lineage& l) {
  j = json{{"task", l.task},     {"kernels", l.kernels},
           {"steps", l.steps},   {"termination", to_string(l.term)},
           {"reason", l.reason}, {"remaining_features", l.remaining_features}};
}

void from_json(const json& j, lineage& l) {
  l = lineage{};
  get(j, "task", l.task);
  get(j, "kernels", l.kernels);
  get(j, "steps", l.steps);
  get_enum(j, "termination", l.term, termination::unknown);
  get(j, "reason", l.reason);
  get(j, "remaining_features", l.remaining_features);
}

void to_json(json& j, const skill_card& c) {
  json constraints = json::array();
  for (const auto& k : c.constraints) constraints.push_back({{"what", k.what}, {"value", k.value}});
  j = json{{"id", c.id},
           {"intent", c.intent},
           {"anchor", c.anchor},
           {"carriers", c.carriers},
           {"preconditions", c.preconditions},
           {"constraints", std::move(constraints)},
           {"effect", c.effect},
           {"risk", c.risk},
           {"scope", c.scope},
           {"evidence", c.evidence},
           {"verification_log", c.verification_log},
           {"requires", c.requires_features},
           {"provides", c.provides_features},
           {"conflicts", c.conflicts_features},
           {"admitted", c.admitted}};
}

void from_json(const json& j, skill_card& c) {
  c = skill_card{};
  get(j, "id", c.id);
  get(j, "intent", c.intent);
  get(j, "anchor", c.anchor);
  get(j, "carriers", c.carriers);
  get(j, "preconditions", c.preconditions);
  if (auto it = j.find("constraints"); it != j.end() && it->is_array()) {
    for (const auto& k : *it) {
      constraint con;
      get(k, "what", con.what);
      get(k, "value", con.value);
      c.constraints.push_back(std::move(con));
    }
  }
  get(j, "effect", c.effect);
  get(j, "risk", c.risk);
  get(j, "scope", c.scope);
  get(j, "evidence", c.evidence);
  get(j, "verification_log", c.verification_log);
  get(j, "requires", c.requires_features);
  get(j, "provides", c.provides_features);
  get(j, "conflicts", c.conflicts_features);
  get(j, "admitted", c.admitted);
}

// A missing limit is written as null: "no limit", not zero.
void to_json(json& j, const budget& b) {
  j = json::object();
  put_opt(j, "steps", b.steps);
  put_opt(j, "evals", b.evals);
  put_opt(j, "tokens", b.tokens);
  put_opt(j, "usd", b.usd);
  put_opt(j, "seconds", b.seconds);
}

void from_json(const json& j, budget& b) {
  b = budget{};
  get_opt(j, "steps", b.steps);
  get_opt(j, "evals", b.evals);
  get_opt(j, "tokens", b.tokens);
  get_opt(j, "usd", b.usd);
  get_opt(j, "seconds", b.seconds);
}

void to_json(json& j, const run& r) {
  j = json{{"id", r.id},         {"kind", to_string(r.kind)},
           {"task", r.task},     {"state", to_string(r.state)},
           {"budget", r.limits}, {"created_at", r.created_at}};
}

void from_json(const json& j, run& r) {
  r = run{};
  get(j, "id", r.id);
  get_enum(j, "kind", r.kind, run_kind::bench);
  get(j, "task", r.task);
  get_enum(j, "state", r.state, run_state::interrupted);
  get(j, "budget", r.limits);
  get(j, "created_at", r.created_at);
}

}  // namespace lathe
