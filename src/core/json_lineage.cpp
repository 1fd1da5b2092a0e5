// JSON of the lineage side: features, provenance, transitions, lineages and lathe init's
// verdicts on experts.
#include "core/json_lineage.h"
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

}  // namespace lathe
