// lathe.card_report/1: one skill card with the lineage steps it was induced from (each source
// "<lineage id>#<step index>" resolved to its transition, and the source lineage drawn as a
// graph with those steps marked), the evaluations behind its evidence and trials, and its
// verification log.
#include "core/json.h"
#include "core/json_card.h"
#include "core/lineage.h"
#include "core/text.h"
#include "report/model_detail.h"

namespace lathe::report {

result<nlohmann::json> card_report(const store& db, const std::string& card_id_or_name, const report_options& o) {
  using detail::json;
  auto c = db.get_card(card_id_or_name);
  if (!c) return tl::unexpected(c.error());
  if (!*c) return fail(errc::not_found, "no card '" + card_id_or_name + "' (`lathe skills list` names them)");
  const skill_card& card = **c;
  detail::builder b(db, o);
  for (int64_t id : card.evidence) b.evaluations.insert(id);
  for (const auto& t : card.trials)
    for (int64_t id : t.evaluations) b.evaluations.insert(id);
  json evidence = json::array();
  std::string drawn;  // the lineage drawn as the graph: the first source's
  for (const auto& src : card.sources) {
    const size_t hash_at = src.rfind('#');
    json ev{{"source", src}, {"lineage", src.substr(0, hash_at)}, {"found", false}};
    if (hash_at == std::string::npos) {
      evidence.push_back(ev);
      continue;
    }
    size_t index = 0;
    try {
      index = std::stoul(src.substr(hash_at + 1));
    } catch (...) {
      evidence.push_back(ev);
      continue;
    }
    auto l = db.get_lineage(src.substr(0, hash_at));
    if (!l || !*l || index >= (*l)->steps.size()) {
      evidence.push_back(ev);
      continue;
    }
    const lineage& lin = **l;
    const transition& s = lin.steps[index];
    ev["found"] = true;
    ev["task"] = lin.task;
    ev["step"] = index + 1;
    ev["from"] = {{"hash", s.from_kernel}, {"name", b.kernels.name(s.from_kernel)}, {"label", cat("K", std::to_string(index))}};
    ev["to"] = {{"hash", s.to_kernel}, {"name", b.kernels.name(s.to_kernel)}, {"label", cat("K", std::to_string(index + 1))}};
    ev["action"] = s.action;
    ev["locus"] = s.locus;
    ev["speedup"] = detail::optional_number(s.speedup);
    ev["provenance"] = to_string(s.prov);
    ev["forward"] = to_string(s.forward.status);
    ev["forward_reason"] = s.forward.reason;
    ev["evaluations"] = s.evaluations;
    for (int64_t id : s.evaluations) b.evaluations.insert(id);
    evidence.push_back(ev);
    if (drawn.empty()) {
      drawn = lin.id;
      for (size_t i = 0; i < lin.kernels.size(); ++i) {
        json& n = b.add_node(lin.kernels[i], cat("K", std::to_string(i)),
                             i == 0 ? "naive end" : i + 1 == lin.kernels.size() ? "expert" : "step");
        if (i < lin.features.size())
          for (const auto& f : lin.features[i]) n["features"].push_back(detail::feature_text(f));
      }
      for (size_t i = 0; i < lin.steps.size(); ++i) {
        const transition& t = lin.steps[i];
        b.edges.push_back({{"from", t.from_kernel}, {"to", t.to_kernel}, {"action", t.action}, {"locus", t.locus},
                           {"speedup", detail::optional_number(t.speedup)}, {"provenance", to_string(t.prov)},
                           {"mechanical", t.prov.mechanical}, {"forward", to_string(t.forward.status)},
                           {"evaluations", t.evaluations}, {"step", i + 1}, {"evidence", false},
                           {"features_added", json::array()}});
        for (const auto& f : t.added) b.edges.back()["features_added"].push_back(detail::feature_text(f));
      }
    }
    if (drawn == lin.id && index < b.edges.size()) b.edges[index]["evidence"] = true;
  }
  json evals = json::array();
  for (int64_t id : b.evaluations) {
    if (evals.size() >= o.max_evaluations) break;
    if (auto e = db.get_evaluation(id)) evals.push_back(detail::evaluation_view(*e));
  }
  detail::fill_node_times(b.nodes, evals);
  json cj = card;
  const bool machinery = card.prov.kind == "rules" || card.prov.kind == "replay" ||
                         card.prov.detail.find("mock") != std::string::npos;
  json out{{"schema", card_report_schema},
           {"kind", "card"},
           {"generated_at", utc_now()},
           {"card", cj},
           {"lineage_evidence", evidence},
           {"graph", {{"lineage", drawn}, {"nodes", b.nodes}, {"edges", b.edges}, {"rejected", json::array()}}},
           {"evaluations", evals},
           {"provenance",
            {{"proposer", to_string(card.prov)},
             {"machinery_only", machinery},
             {"note", machinery ? "This card was abstracted by the rule engine (or a mock or replayed model): it shows "
                                  "that the machinery works, not what a model learned."
                                : ""}}}};
  return out;
}

}  // namespace lathe::report
