#include "search/verdict.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "core/json.h"
#include "search/optimize.h"

namespace lathe::search::detail {

using nlohmann::json;

json verdict_json(const verdict& v) {
  json j{{"id", v.id},           {"outcome", outcome_text(v.outcome)}, {"message", v.message},
         {"diagnostics", v.diagnostics}, {"margin", v.margin},   {"passed", v.passed},
         {"inspection", v.inspection}};
  j["ratio"] = v.ratio ? json(*v.ratio) : json(nullptr);
  if (v.seconds) j["seconds"] = *v.seconds;
  if (v.against_seconds) j["against_seconds"] = *v.against_seconds;
  if (v.floor) j["floor"] = *v.floor;
  if (v.decision) j["decision"] = to_string(*v.decision);
  if (v.ci_low && v.ci_high) j["interval"] = {*v.ci_low, *v.ci_high};
  if (v.aa_low && v.aa_high) j["aa_interval"] = {*v.aa_low, *v.aa_high};
  if (v.aa_unstable) j["aa_unstable"] = *v.aa_unstable;
  return j;
}

verdict verdict_from(const json& j) {
  verdict v;
  v.id = j.value("id", int64_t{0});
  v.outcome = outcome_field(j, "outcome");
  v.message = j.value("message", std::string());
  v.diagnostics = j.value("diagnostics", std::string());
  v.inspection = j.value("inspection", std::string());
  v.margin = j.value("margin", 0.0);
  v.passed = j.value("passed", false);
  if (j.contains("ratio") && j.at("ratio").is_number()) v.ratio = j.at("ratio").get<double>();
  for (auto [key, to] : {std::pair{"seconds", &v.seconds}, {"against_seconds", &v.against_seconds}, {"floor", &v.floor}})
    if (j.contains(key) && j.at(key).is_number()) *to = j.at(key).get<double>();
  v.decision = parse_decision(j.value("decision", std::string()));
  if (j.contains("interval") && j.at("interval").is_array() && j.at("interval").size() == 2 &&
      j.at("interval")[0].is_number() && j.at("interval")[1].is_number()) {
    v.ci_low = j.at("interval")[0].get<double>();
    v.ci_high = j.at("interval")[1].get<double>();
  }
  if (j.contains("aa_interval") && j.at("aa_interval").is_array() && j.at("aa_interval").size() == 2 &&
      j.at("aa_interval")[0].is_number() && j.at("aa_interval")[1].is_number()) {
    v.aa_low = j.at("aa_interval")[0].get<double>();
    v.aa_high = j.at("aa_interval")[1].get<double>();
  }
  if (j.contains("aa_unstable") && j.at("aa_unstable").is_number()) v.aa_unstable = j.at("aa_unstable").get<double>();
  return v;
}

bool verdict::faster() const {
  if (decision) return passed && *decision == lathe::decision::faster;
  return passed && ratio && *ratio >= 1.0 + margin;  // a record from before the decision was kept
}

std::string verdict::reading() const {
  if (!ratio) return "";
  if (decision && ci_low && ci_high) return speed_reading(*ratio, margin, *decision, *ci_low, *ci_high);
  return speed_reading(*ratio, margin);
}

}  // namespace lathe::search::detail
