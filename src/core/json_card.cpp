// JSON of skill cards and their trials.
#include "core/json_card.h"
#include "core/json_detail.h"

namespace lathe {

using namespace json_detail;

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
           {"created_at", t.created_at},
           {"language", std::string(to_string(t.lang))}};
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
  get_enum(j, "language", t.lang, candidate_language::modelnew);  // absent (older records): c-abi
}

void to_json(json& j, const card_tuning& t) {
  j = json{{"values", t.values}, {"defaults", t.defaults}, {"kernel", t.kernel}, {"run", t.run}};
  if (t.lo && t.hi) j["interval"] = {*t.lo, *t.hi};
}

void from_json(const json& j, card_tuning& t) {
  t = card_tuning{};
  get(j, "values", t.values);
  get(j, "defaults", t.defaults);
  get(j, "kernel", t.kernel);
  get(j, "run", t.run);
  if (j.contains("interval") && j["interval"].is_array() && j["interval"].size() == 2) {
    t.lo = j["interval"][0].get<double>();
    t.hi = j["interval"][1].get<double>();
  }
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
           {"evidence_language", std::string(to_string(c.evidence_lang))},
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
  if (c.tuned) j["tuned"] = *c.tuned;
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
  get_enum(j, "evidence_language", c.evidence_lang, candidate_language::modelnew);  // absent: c-abi
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
  if (j.contains("tuned") && j["tuned"].is_object()) c.tuned = j["tuned"].get<card_tuning>();
  // "admitted" is derived from status on output; a record without a status (written before
  // there was one) is read by its flag.
  if (!j.contains("status")) {
    bool admitted = false;
    get(j, "admitted", admitted);
    if (admitted) c.status = card_status::admitted;
  }
}

}  // namespace lathe
