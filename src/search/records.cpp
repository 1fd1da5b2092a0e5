// The bodies of run events a resumed run reads back (records.h), and evolve's child records
// (evolve.h).
#include "search/records.h"

#include "core/enum_parse.h"
#include "core/json.h"
#include "core/json_lineage.h"
#include "search/evolve.h"
#include "search/journal.h"
#include "verify/verifier.h"

namespace lathe::search {

using nlohmann::json;

namespace detail {

void put_proposal(json& body, const agent::proposal& p) {
  body["kernel"] = p.kernel.hash;
  body["action"] = p.action;
  body["locus"] = p.locus;
  body["adds"] = p.features_added;
  body["removes"] = p.features_removed;
  body["rationale"] = p.rationale;
  body["edits"] = p.edits;
  body["provenance"] = p.prov;
  body["calls"] = p.calls;
}

result<agent::proposal> proposal_from(const json& rec, store& db) {
  auto k = db.get_kernel(rec.value("kernel", std::string()));
  if (!k) return tl::unexpected(k.error());
  agent::proposal pr;
  pr.kernel = std::move(*k);
  pr.action = rec.value("action", std::string());
  pr.locus = rec.value("locus", std::string());
  pr.features_added = rec.value("adds", std::vector<std::string>{});
  pr.features_removed = rec.value("removes", std::vector<std::string>{});
  pr.rationale = rec.value("rationale", std::string());
  pr.edits = rec.value("edits", std::string());
  if (rec.contains("provenance")) pr.prov = rec.at("provenance").get<provenance>();
  pr.calls = rec.value("calls", 0);
  return pr;
}

agent::failure failure_from(const json& rec) {
  const json f = rec.value("failure", json::object());
  agent::failure out;
  // Batch mode's `waiting` is never recorded: such a record, or a kind lathe does not know, reads
  // as `refused`.
  const auto kind = parse_enum(f.value("kind", std::string()), agent::failure_kind::refused);
  out.kind = kind && *kind != agent::failure_kind::waiting ? *kind : agent::failure_kind::refused;
  out.message = f.value("message", std::string());
  return out;
}

json measured_json(const measured& m) {
  return {{"compiles", m.v.compiles}, {"correct", m.v.correct},
          {"speedup", m.v.speedup ? json(*m.v.speedup) : json(nullptr)}, {"outcome", outcome_text(m.outcome)},
          {"message", m.message}, {"diagnostics", m.diagnostics}, {"inspection", m.inspection}, {"id", m.id}};
}

measured measured_from(const json& j) {
  measured m;
  m.v.compiles = j.value("compiles", false);
  m.v.correct = j.value("correct", false);
  if (j.contains("speedup") && j["speedup"].is_number()) m.v.speedup = j["speedup"].get<double>();
  m.outcome = outcome_field(j, "outcome");
  m.message = j.value("message", std::string());
  m.diagnostics = j.value("diagnostics", std::string());
  m.inspection = j.value("inspection", std::string());
  m.id = j.value("id", int64_t{0});
  return m;
}

measured summarize(const evaluation& e, platform plat) {
  measured m;
  m.outcome = e.result;
  m.message = e.message.substr(0, e.message.find('\n'));
  m.diagnostics = e.diagnostics.size() <= 1500 ? e.diagnostics : e.diagnostics.substr(0, 1500) + "…";
  m.inspection = inspection_of(e);
  m.id = e.id;
  m.v.compiles = built(e.result);
  m.v.correct = correct(e.result);
  if (lineages::passed(e)) m.v.speedup = lineages::ratio(e);
  m.ratio = lineages::ratio(e);
  m.margin = lineages::margin(e, plat);
  m.decision = e.decision;
  return m;
}


}  // namespace detail

const char* to_string(child_kind k) {
  switch (k) {
    case child_kind::initial: return "initial";
    case child_kind::child: return "child";
    case child_kind::migrant: return "migrant";
    case child_kind::translation: return "translation";
  }
  return "?";
}

const char* to_string(child_timing t) { return t == child_timing::quick ? "quick" : "full"; }

namespace {

// A closed set's word in a stored record (to_string's): an unknown one is refused, in
// nlohmann's exception type like an unknown outcome; a missing one reads as `absent`.
template <class E>
E stored_word(const json& j, const char* key, E absent, E last) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return absent;
  const auto name = it->get<std::string>();
  auto e = parse_enum(name, last);
  if (!e) throw json::type_error::create(302, std::string("'") + key + "': unknown value '" + name + "'", &j);
  return *e;
}

}  // namespace

json child_json(const child_record& c) {
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(nullptr); };
  return {{"generation", c.generation}, {"island", c.island}, {"index", c.index}, {"kind", to_string(c.kind)},
          {"parent", c.parent}, {"inspirations", c.inspirations}, {"cards", c.cards}, {"kernel", c.kernel},
          {"action", c.action}, {"edits", c.edits}, {"rationale", c.rationale}, {"provenance", c.prov},
          {"failure", c.failure}, {"outcome", outcome_text(c.outcome)}, {"speedup", opt(c.speedup)},
          {"parent_speedup", opt(c.parent_speedup)}, {"score", c.score}, {"placement", to_string(c.placement)},
          {"contest_ratio", opt(c.contest_ratio)}, {"placed", c.placed}, {"duplicate", c.duplicate},
          {"evaluations", c.evaluations},
          {"prompt_context", c.prompt_context}};
}

child_record child_from(const json& j) {
  child_record c;
  auto opt = [&](const char* k) -> std::optional<double> {
    if (j.contains(k) && j[k].is_number()) return j[k].get<double>();
    return std::nullopt;
  };
  c.generation = j.value("generation", 0);
  c.island = j.value("island", 0);
  c.index = j.value("index", 0);
  // Lathe always wrote both; a record without one reads as the word that decides what a missing
  // one did (a proposed child, not placed by a contest).
  c.kind = stored_word(j, "kind", child_kind::child, child_kind::translation);
  c.parent = j.value("parent", std::string());
  c.inspirations = j.value("inspirations", std::vector<std::string>{});
  c.cards = j.value("cards", std::vector<std::string>{});
  c.kernel = j.value("kernel", std::string());
  c.action = j.value("action", std::string());
  c.edits = j.value("edits", std::string());
  c.rationale = j.value("rationale", std::string());
  if (j.contains("provenance")) c.prov = j.at("provenance").get<provenance>();
  c.failure = j.value("failure", std::string());
  c.outcome = outcome_field(j, "outcome");
  c.speedup = opt("speedup");
  c.parent_speedup = opt("parent_speedup");
  c.score = j.value("score", 0.0);
  c.placement = stored_word(j, "placement", placement::kept, placement::failed);
  c.contest_ratio = opt("contest_ratio");
  c.placed = j.value("placed", false);
  c.duplicate = j.value("duplicate", false);
  c.evaluations = j.value("evaluations", std::vector<int64_t>{});
  c.prompt_context = j.value("prompt_context", std::string());
  return c;
}

}  // namespace lathe::search
