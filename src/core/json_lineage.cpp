// JSON of the lineage-side vocabulary: features, provenance, transitions, lineages, skill cards,
// budgets and runs.
#include "core/json.h"
#include "core/expert.h"
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

void to_json(json& j, const forward_result& f) {
  j = json{{"status", to_string(f.status)},
           {"kernel", f.kernel},
           {"evaluations", f.evaluations},
           {"provenance", f.prov},
           {"reason", f.reason}};
  put_opt(j, "ratio", f.ratio);
}

void from_json(const json& j, forward_result& f) {
  f = forward_result{};
  get_enum(j, "status", f.status, forward_status::undecided);
  get(j, "kernel", f.kernel);
  get_opt(j, "ratio", f.ratio);
  get(j, "evaluations", f.evaluations);
  get(j, "provenance", f.prov);
  get(j, "reason", f.reason);
}

void to_json(json& j, const transition& t) {
  j = json{{"from", t.from_kernel},  {"to", t.to_kernel},
           {"action", t.action},     {"locus", t.locus},
           {"edit", t.edit},         {"invocation", t.invocation},
           {"removed", t.removed},   {"added", t.added},
           {"evaluations", t.evaluations},
           {"rejected", t.rejected}, {"provenance", t.prov},
           {"forward", t.forward}};
  put_opt(j, "speedup", t.speedup);
}

void from_json(const json& j, transition& t) {
  t = transition{};
  get(j, "from", t.from_kernel);
  get(j, "to", t.to_kernel);
  get(j, "action", t.action);
  get(j, "locus", t.locus);
  get(j, "edit", t.edit);
  get(j, "invocation", t.invocation);
  get(j, "removed", t.removed);
  get(j, "added", t.added);
  get_opt(j, "speedup", t.speedup);
  get(j, "evaluations", t.evaluations);
  get(j, "rejected", t.rejected);
  get(j, "provenance", t.prov);
  get(j, "forward", t.forward);
}

void to_json(json& j, const lineage& l) {
  j = json{{"id", l.id},
           {"task", l.task},
           {"operator", l.op},
           {"expert", l.expert},
           {"target", l.target},
           {"run", l.run_id},
           {"kernels", l.kernels},
           {"features", l.features},
           {"steps", l.steps},
           {"termination", to_string(l.term)},
           {"reason", l.reason},
           {"remaining_features", l.remaining_features}};
}

void from_json(const json& j, lineage& l) {
  l = lineage{};
  get(j, "id", l.id);
  get(j, "task", l.task);
  get(j, "operator", l.op);
  get(j, "expert", l.expert);
  get(j, "target", l.target);
  get(j, "run", l.run_id);
  get(j, "kernels", l.kernels);
  get(j, "features", l.features);
  get(j, "steps", l.steps);
  get_enum(j, "termination", l.term, termination::unknown);
  get(j, "reason", l.reason);
  get(j, "remaining_features", l.remaining_features);
}

void to_json(json& j, const constraint& k) { j = json{{"what", k.what}, {"value", k.value}}; }

void from_json(const json& j, constraint& k) {
  k = constraint{};
  get(j, "what", k.what);
  get(j, "value", k.value);
}

void to_json(json& j, const card_trial& t) {
  j = json{{"task", t.task},
           {"kernel_before", t.kernel_before},
           {"kernel_after", t.kernel_after},
           {"outcome", t.outcome},
           {"evaluations", t.evaluations},
           {"verdict", to_string(t.verdict)},
           {"reason", t.reason},
           {"provenance", t.prov},
           {"created_at", t.created_at}};
  put_opt(j, "ratio", t.ratio);
}

void from_json(const json& j, card_trial& t) {
  t = card_trial{};
  get(j, "task", t.task);
  get(j, "kernel_before", t.kernel_before);
  get(j, "kernel_after", t.kernel_after);
  get(j, "outcome", t.outcome);
  get_opt(j, "ratio", t.ratio);
  get(j, "evaluations", t.evaluations);
  get_enum(j, "verdict", t.verdict, trial_verdict::not_applicable);
  get(j, "reason", t.reason);
  get(j, "provenance", t.prov);
  get(j, "created_at", t.created_at);
}

void to_json(json& j, const skill_card& c) {
  j = json{{"id", c.id},
           {"name", c.name},
           {"intent", c.intent},
           {"anchor", c.anchor},
           {"action", c.action},
           {"operator", c.op},
           {"carriers", c.carriers},
           {"preconditions", c.preconditions},
           {"constraints", c.constraints},
           {"effect", c.effect},
           {"risk", c.risk},
           {"scope", c.scope},
           {"evidence", c.evidence},
           {"verification_log", c.verification_log},
           {"trials", c.trials},
           {"requires", c.requires_features},
           {"provides", c.provides_features},
           {"conflicts", c.conflicts_features},
           {"sources", c.sources},
           {"source_tasks", c.source_tasks},
           {"target", c.target},
           {"shape", c.shape},
           {"status", to_string(c.status)},
           {"status_reason", c.status_reason},
           {"provenance", c.prov},
           {"admitted", c.admitted()}};
  put_opt(j, "declared_ratio", c.declared_ratio);
}

void from_json(const json& j, skill_card& c) {
  c = skill_card{};
  get(j, "id", c.id);
  get(j, "name", c.name);
  get(j, "intent", c.intent);
  get(j, "anchor", c.anchor);
  get(j, "action", c.action);
  get(j, "operator", c.op);
  get(j, "carriers", c.carriers);
  get(j, "preconditions", c.preconditions);
  get(j, "constraints", c.constraints);
  get(j, "effect", c.effect);
  get(j, "risk", c.risk);
  get(j, "scope", c.scope);
  get_opt(j, "declared_ratio", c.declared_ratio);
  get(j, "evidence", c.evidence);
  get(j, "verification_log", c.verification_log);
  get(j, "trials", c.trials);
  get(j, "requires", c.requires_features);
  get(j, "provides", c.provides_features);
  get(j, "conflicts", c.conflicts_features);
  get(j, "sources", c.sources);
  get(j, "source_tasks", c.source_tasks);
  get(j, "target", c.target);
  get(j, "shape", c.shape);
  get_enum(j, "status", c.status, card_status::refused);
  get(j, "status_reason", c.status_reason);
  get(j, "provenance", c.prov);
  // "admitted" is derived from status on output; a record without a status (written before
  // there was one) is read by its flag.
  if (!j.contains("status")) {
    bool admitted = false;
    get(j, "admitted", admitted);
    if (admitted) c.status = card_status::admitted;
  }
}

void to_json(json& j, const delegation_finding& f) {
  j = json{{"what", f.what}, {"name", f.name}, {"where", f.where}, {"allowed", f.allowed}};
}

void from_json(const json& j, delegation_finding& f) {
  f = delegation_finding{};
  get(j, "what", f.what);
  get(j, "name", f.name);
  get(j, "where", f.where);
  get(j, "allowed", f.allowed);
}

void to_json(json& j, const expert_check& c) {
  j = json{{"id", c.id},
           {"created_at", c.created_at},
           {"task", c.task},
           {"kernel", c.kernel},
           {"kernel_name", c.kernel_name},
           {"target", c.target},
           {"accepted", c.accepted},
           {"reason", c.reason},
           {"evaluations", c.evaluations},
           {"findings", c.findings},
           {"features", c.features},
           {"unknown_features", c.unknown_features},
           {"repo", c.repo}};
  j["measured_against"] = c.measured_against;
  put_opt(j, "ratio", c.ratio);
  put_opt(j, "remeasured_ratio", c.remeasured_ratio);
  put_opt(j, "library_ratio", c.library_ratio);
}

void from_json(const json& j, expert_check& c) {
  c = expert_check{};
  get(j, "id", c.id);
  get(j, "created_at", c.created_at);
  get(j, "task", c.task);
  get(j, "kernel", c.kernel);
  get(j, "kernel_name", c.kernel_name);
  get(j, "target", c.target);
  get(j, "accepted", c.accepted);
  get(j, "reason", c.reason);
  get(j, "evaluations", c.evaluations);
  get_opt(j, "ratio", c.ratio);
  get_opt(j, "remeasured_ratio", c.remeasured_ratio);
  get(j, "measured_against", c.measured_against);
  get_opt(j, "library_ratio", c.library_ratio);
  get(j, "findings", c.findings);
  get(j, "features", c.features);
  get(j, "unknown_features", c.unknown_features);
  get(j, "repo", c.repo);
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
  j = json{{"id", r.id},
           {"kind", to_string(r.kind)},
           {"task", r.task},
           {"state", to_string(r.state)},
           {"budget", r.limits},
           {"created_at", r.created_at},
           {"updated_at", r.updated_at},
           {"args", r.args},
           {"summary", r.summary},
           {"message", r.message}};
}

void from_json(const json& j, run& r) {
  r = run{};
  get(j, "id", r.id);
  get_enum(j, "kind", r.kind, run_kind::bench);
  get(j, "task", r.task);
  get_enum(j, "state", r.state, run_state::interrupted);
  get(j, "budget", r.limits);
  get(j, "created_at", r.created_at);
  get(j, "updated_at", r.updated_at);
  get(j, "args", r.args);
  get(j, "summary", r.summary);
  get(j, "message", r.message);
}

}  // namespace lathe
