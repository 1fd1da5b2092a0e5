// The verdict a report opens with: what the run achieved, in one line and a few figures, with
// who did the work, before the graph, the curve and the evaluations.
#include <string>

#include "core/text.h"
#include "report/model_detail.h"

namespace lathe::report::detail {
namespace {

std::string ratio_words(double r) { return number_text("%.3gx", r); }

json kernel_ref(const json& k) {
  if (!k.is_object()) return nullptr;
  return {{"name", k.value("name", "")}, {"hash", k.value("hash", "")}};
}

// The figures of one paired evaluation (candidate against its baseline), read from the store:
// the report's evaluation list is capped, and the final comparison comes last.
void add_evaluation(builder& b, int64_t id, json& v) {
  auto e = b.db.get_evaluation(id);
  if (!e) return;
  v["evaluation"] = id;
  v["outcome"] = to_string(e->result);
  if (e->median_seconds) v["best_seconds"] = *e->median_seconds;
  if (e->baseline_median_seconds) v["start_seconds"] = *e->baseline_median_seconds;
  if (e->paired && e->paired->ratio > 0) {
    v["speedup"] = e->paired->ratio;
    v["ci_low"] = e->paired->ci_low;
    v["ci_high"] = e->paired->ci_high;
  }
}

void optimize_verdict(builder& b, const json& s, json& v) {
  v["start"] = kernel_ref(s.value("start", json()));
  v["best"] = kernel_ref(s.value("best", json()));
  const json finals = s.value("final_evaluations", json::array());
  const bool moved = v["best"].is_object() && v["start"].is_object() &&
                     v["best"].value("hash", "") != v["start"].value("hash", "");
  if (moved && !finals.empty() && finals.front().is_number_integer()) add_evaluation(b, finals.front().get<int64_t>(), v);
  const std::string start = v["start"].is_object() ? v["start"].value("name", "") : "";
  if (!moved) {
    v["headline"] = "no verified improvement over the start kernel " + start + " (stopped: " +
                    s.value("stop", std::string("?")) + ")";
  } else if (v.contains("speedup") && v.value("outcome", "") == "ok") {
    v["headline"] = cat("best kernel ", ratio_words(v["speedup"].get<double>()), " faster than ", start,
                        " (95% CI [", ratio_words(v["ci_low"].get<double>()), ", ",
                        ratio_words(v["ci_high"].get<double>()), "], fresh paired re-measure)");
  } else {
    v["headline"] = "the best kernel's final re-measure did not decide (" + s.value("final_best_outcome", std::string("?")) +
                    "): its accepted steps stand, its figure against " + start + " is unknown";
  }
}

void evolve_verdict(builder& b, const json& s, json& v) {
  v["best"] = {{"hash", s.value("best", "")}, {"name", b.kernels.name(s.value("best", ""))}};
  const json& sp = s.contains("best_speedup") ? s.at("best_speedup") : json(nullptr);
  if (sp.is_number()) v["speedup"] = sp;
  v["headline"] = cat(std::to_string(s.value("placed", 0)), " of ", std::to_string(s.value("children", 0)),
                      " children placed in the archive; best elite ",
                      sp.is_number() ? ratio_words(sp.get<double>()) + " over its start" : std::string("without a speedup"));
}

void decompose_verdict(const json& s, json& v) {
  v["headline"] = cat("lineage ", s.value("lineage", ""), ": ", std::to_string(s.value("steps", 0)),
                      " verified backward step(s), ", std::to_string(s.value("rejected", 0)),
                      " rejected; ended: ", s.value("termination", ""),
                      s.value("reason", "").empty() ? "" : " (" + s.value("reason", "") + ")");
}

void bench_verdict(const json& s, json& v) {
  const json a = s.value("aggregates", json::object());
  if (a.empty()) {
    v["headline"] = cat("suite ", s.value("suite", ""), " (", s.value("protocol", ""), " protocol): ",
                        std::to_string(s.value("tasks", json::array()).size()), " run(s)");
    return;
  }
  std::string fast;
  for (const auto& f : a.value("fast_p", json::array()))
    if (f.value("p", 0.0) == 1.0) fast = cat(", fast_1 ", std::to_string(f.value("count", 0)));
  const json& g = a.contains("geomean") ? a.at("geomean") : json(nullptr);
  if (g.is_number()) v["speedup"] = g;
  v["headline"] = cat("suite ", s.value("suite", ""), ": ", std::to_string(a.value("correct", 0)), " of ",
                      std::to_string(a.value("tasks", 0)), " tasks correct", fast,
                      g.is_number() ? ", geometric mean " + ratio_words(g.get<double>()) + " over correct ones" : "");
}

// lathe tune (cli/tune_cmd.cpp's lathe.tune/1): the winner and what decided it.
void tune_verdict(const json& s, json& v) {
  const std::string winner = config_text(s.value("winner", json::object()));
  const json crown = s.value("crown", json::object());
  const json& sp = crown.contains("speedup") ? crown.at("speedup") : json(nullptr);
  if (s.value("improved", false) && sp.is_number()) v["speedup"] = sp;
  v["headline"] = cat("kernel ", s.value("kernel", ""), ", ", std::to_string(s.value("points", json::array()).size()),
                      " of ", std::to_string(s.value("admitted", 0)), " configurations measured (", s.value("strategy", ""),
                      "): ",
                      s.value("improved", false)
                          ? cat("winner ", winner, sp.is_number() ? ", " + ratio_words(sp.get<double>()) + " over the default" : "",
                                " (re-timed: ", crown.value("decision", ""), ")")
                          : "the default kept (no configuration was decided faster)");
}

}  // namespace

json verdict_view(builder& b, const run& r, const json& provenance) {
  json v{{"kind", to_string(r.kind)}, {"state", to_string(r.state)}};
  const json s = json::accept(r.summary) ? json::parse(r.summary) : json::object();
  if (!s.is_object() || s.empty()) {
    v["headline"] = std::string("the run has no summary yet (") + to_string(r.state) +
                    (r.message.empty() ? "" : ": " + r.message) + ")";
  } else {
    switch (r.kind) {
      case run_kind::optimize: optimize_verdict(b, s, v); break;
      case run_kind::evolve: evolve_verdict(b, s, v); break;
      case run_kind::decompose: decompose_verdict(s, v); break;
      case run_kind::bench: bench_verdict(s, v); break;
      case run_kind::tune: tune_verdict(s, v); break;
    }
  }
  if (v.contains("start_seconds") && v.contains("best_seconds"))
    v["times"] = seconds_text(v["start_seconds"].get<double>()) + " \u2192 " + seconds_text(v["best_seconds"].get<double>());
  v["provenance"] = provenance.value("proposer", "");
  v["machinery_only"] = provenance.value("machinery_only", false);
  return v;
}

}  // namespace lathe::report::detail
