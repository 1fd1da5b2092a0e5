// The kind-specific part of lathe.report/1: the graph (kernels as nodes, transitions as edges,
// rejected attempts), the progress curve and, for evolve, the archive. Read from the run's own
// records: the lineage (decompose) and the run events (docs/lineage.md, docs/optimize.md,
// docs/evolve.md "Run events").
#include <algorithm>
#include <cmath>

#include "core/card.h"
#include "core/json.h"
#include "core/lineage.h"
#include "core/text.h"
#include "report/model_detail.h"

namespace lathe::report::detail {

std::string config_text(const json& config) {
  std::string out;
  for (const auto& [name, value] : config.items()) out += cat(out.empty() ? "" : ",", name, "=", value.dump());
  return out;
}

namespace {

// Time against configuration: each configuration measured, its paired speedup over the default
// with the interval (the default 1 exactly), the best first; those that did not pass, with their
// outcome, after them. Replayed points count as measured (their evaluation is the cached one).
// [lo, hi], both finite numbers: JSON keeps a non-finite bound as null.
bool finite_pair(const json& v) {
  return v.is_array() && v.size() == 2 && v[0].is_number() && v[1].is_number() &&
         std::isfinite(v[0].get<double>()) && std::isfinite(v[1].get<double>());
}

json tune_configurations(const json& s) {
  const std::string winner = config_text(s.value("winner", json::object()));
  const std::string deflt = config_text(s.value("default", json::object()));
  json rows = json::array();
  const json measured = s.value("points", json::array());
  for (const auto& p : measured) {
    const std::string label = config_text(p.value("config", json::object()));
    const bool timed = p.contains("speedup") && p["speedup"].is_number();
    json row = {{"label", label},
                {"outcome", p.value("outcome", "")},
                {"speedup", timed ? p["speedup"] : json(nullptr)},
                {"interval", finite_pair(p.value("interval", json())) ? p["interval"] : json(nullptr)},
                {"evaluation", p.value("evaluation", json(nullptr))},
                {"quick", p.value("quick", false)},
                {"cached", p.value("cached", false)},
                {"default", label == deflt},
                {"winner", label == winner}};
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    const bool ta = a["speedup"].is_number(), tb = b["speedup"].is_number();
    if (ta != tb) return ta;
    return ta && a["speedup"].get<double>() > b["speedup"].get<double>();
  });
  return {{"title", "Each configuration against the default"},
          {"x_label", "paired speedup over the default configuration (time(default) / time(configuration))"},
          {"default", deflt},
          {"winner", winner},
          {"improved", s.value("improved", false)},
          {"configurations", rows}};
}

}  // namespace

void build_tune(builder& b, const run& r) {
  const json s = json::accept(r.summary) ? json::parse(r.summary) : json::object();
  b.cite(s);  // every configuration's evaluation, and the crown's
  b.notes.push_back("a tune run has no lineage graph: its configurations, in the order measured, are the curve's points "
                    "and their evaluations are below");
  json points = json::array();
  double best = 1.0;
  int64_t n = 0;
  const json measured = s.value("points", json::array());  // kept: a loop must not view a temporary
  for (const auto& p : measured) {
    ++n;  // the default counts: it is the first configuration measured (checked, not timed)
    const std::string label = config_text(p.value("config", json::object()));
    const bool counted = !p.value("quick", false) && (p.value("outcome", "") == "ok" || p.value("outcome", "") == "unstable") &&
                         p.contains("speedup") && p["speedup"].is_number();
    if (counted) best = std::max(best, p["speedup"].get<double>());
    points.push_back({{"x", n}, {"y", best}, {"label", cat(label, ": ", p.value("outcome", ""),
                                                               counted ? cat(" ", number_text("%.3fx", p["speedup"].get<double>())) : "",
                                                               p.value("quick", false) ? " (quick)" : "",
                                                               p.value("cached", false) ? " (cached)" : "")},
                      {"measured", counted}});
  }
  b.progress = {{"title", "Best speedup over the default configuration"},
                {"x_label", "configurations measured"},
                {"y_label", "best paired speedup over the default so far (full measurements that passed their checks)"},
                {"x_max", std::max<int64_t>(n, 1)},
                {"budget", nullptr},
                {"origin", nullptr},
                {"points", points}};
  b.evolve = nullptr;
  b.tune = tune_configurations(s);
}

namespace {

json edge_of(const std::string& from, const std::string& to, const std::string& action, const std::string& locus,
             const json& speedup, const json& prov, const json& evaluations) {
  return {{"from", from},
          {"to", to},
          {"action", action},
          {"locus", locus},
          {"speedup", speedup},
          {"provenance", provenance_text(prov)},
          {"provenance_json", prov},
          {"mechanical", prov.is_object() && prov.value("mechanical", false)},
          {"evaluations", evaluations.is_array() ? evaluations : json::array()}};
}

json number_or_null(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key] : json(nullptr);
}

const json* first_event(const std::vector<event>& events, const std::string& kind) {
  for (const auto& e : events)
    if (e.kind == kind && e.body.is_object()) return &e.body;
  return nullptr;
}

json summary_of(const run& r) {
  return json::accept(r.summary) ? json::parse(r.summary) : json::object();
}

}  // namespace

// decompose: the lineage K0 (naive end) -> ... -> Kn (the expert), each step with its paired
// ratio; the backward walk's rejected attempts hang off the kernel the walk stood on.
void build_decompose(builder& b, const run& r, const std::vector<event>& events) {
  const json summary = summary_of(r);
  std::string lineage_id = summary.is_object() ? summary.value("lineage", std::string()) : std::string();
  const json* started = first_event(events, "started");
  if (lineage_id.empty() && started) lineage_id = started->value("lineage", std::string());
  for (const auto& e : events) b.cite(e.body);
  // The expert check the walk started from: its evaluations (init's gate and re-measure).
  if (started && started->contains("expert")) {
    auto c = b.db.latest_expert_check(r.task, (*started)["expert"].value("hash", std::string()));
    if (c && *c && (*c)->id == started->value("check", int64_t{-1}))
      for (int64_t id : (*c)->evaluations) b.evaluations.insert(id);
  }
  std::optional<lineage> l;
  if (!lineage_id.empty())
    if (auto got = b.db.get_lineage(lineage_id); got && *got) l = **got;
  if (!l) {
    b.notes.push_back(lineage_id.empty() ? "the run recorded no lineage" : "lineage " + lineage_id + " is not in this store");
    return;
  }
  const size_t n = l->steps.size();
  for (size_t i = 0; i < l->kernels.size(); ++i) {
    const std::string role = i == 0 ? (l->kernels.size() == 1 ? "expert" : "naive end") : i + 1 == l->kernels.size() ? "expert" : "step";
    json& node = b.add_node(l->kernels[i], cat("K", std::to_string(i)), role);
    if (i < l->features.size())
      for (const auto& f : l->features[i]) node["features"].push_back(feature_text(f));
  }
  json points = json::array();
  double cumulative = 1.0;
  for (size_t i = 0; i < n; ++i) {
    const transition& s = l->steps[i];
    json prov = s.prov;
    json e = edge_of(s.from_kernel, s.to_kernel, s.action, s.locus, optional_number(s.speedup), prov, s.evaluations);
    json added = json::array();
    for (const auto& f : s.added) added.push_back(feature_text(f));
    e["features_added"] = added;
    e["forward"] = to_string(s.forward.status);
    e["forward_reason"] = s.forward.reason;
    e["forward_provenance"] = to_string(s.forward.prov);
    e["step"] = i + 1;
    for (int64_t id : s.evaluations) b.evaluations.insert(id);
    for (int64_t id : s.forward.evaluations) b.evaluations.insert(id);
    b.edges.push_back(std::move(e));
    const bool measured = s.speedup.has_value();
    if (measured) cumulative *= *s.speedup;
    points.push_back({{"x", i + 1}, {"y", cumulative}, {"kernel", s.to_kernel}, {"label", cat("K", std::to_string(i + 1))},
                      {"measured", measured}});
  }
  // Rejected attempts: step s of the walk stood on kernels[n - s + 1] (step 1 on the expert).
  for (const auto& e : events) {
    if (e.kind != "backward_rejected" || !e.body.is_object()) continue;
    const int64_t step = e.body.value("step", int64_t{1});
    const int64_t idx = std::clamp<int64_t>(static_cast<int64_t>(n) - step + 1, 0, static_cast<int64_t>(n));
    b.rejected.push_back({{"from", l->kernels[static_cast<size_t>(idx)]},
                          {"kernel", e.body.value("kernel", std::string())},
                          {"step", step},
                          {"attempt", e.body.value("attempt", 0)},
                          {"stage", e.body.value("stage", std::string())},
                          {"outcome", e.body.value("outcome", std::string())},
                          {"summary", e.body.value("summary", std::string())},
                          {"provenance", provenance_text(e.body.value("provenance", json()))}});
  }
  b.progress = {{"title", "Cumulative speedup over K0 along the lineage"},
                {"x_label", "lineage step (K0 → Kn, the optimizing direction)"},
                {"y_label", "speedup over K0 (product of the steps' paired ratios)"},
                {"x_max", n},
                {"budget", nullptr},
                {"origin", {{"x", 0}, {"y", 1.0}, {"label", "K0"}}},
                {"points", points}};
  b.evolve = nullptr;
  // The cards induced from this lineage.
  if (auto cards = b.db.list_cards(""))
    for (const auto& c : *cards)
      for (const auto& s : c.sources)
        if (s.rfind(l->id + "#", 0) == 0) {
          b.use_card(c.id, "induced from " + s);
          for (int64_t id : c.evidence) b.evaluations.insert(id);
        }
  b.notes.push_back("lineage " + l->id + ": " + to_string(l->term) + (l->reason.empty() ? "" : " (" + l->reason + ")"));
}

// optimize: the start kernel and each accepted step's kernel, edges with the re-measured ratio;
// the curve is the best paired speedup over the start against the gate evaluations used.
void build_optimize(builder& b, const run& r, const std::vector<event>& events) {
  std::string best;
  int64_t evals_used = 0;
  double cumulative = 1.0;
  json points = json::array(), origin = nullptr;
  std::map<std::string, std::string> outcome_of;   // kernel -> its last candidate evaluation's outcome
  std::map<std::string, json> proposed_by;          // kernel -> provenance of its proposal
  for (const auto& e : events) {
    const json& body = e.body;
    if (!body.is_object()) continue;
    b.cite(body, e.kind == "evaluation");
    if (e.kind == "start") {
      best = body.value("kernel", std::string());
      if (!best.empty() && !b.has_node(best)) b.add_node(best, "K0", "start")["how"] = body.value("how", std::string());
      origin = {{"x", evals_used}, {"y", 1.0}, {"label", "K0"}};
    } else if (e.kind == "evaluation") {
      ++evals_used;
      if (body.value("purpose", "") == "candidate") outcome_of[body.value("kernel", std::string())] = body.value("outcome", std::string());
    } else if (e.kind == "proposal") {
      if (!body.value("kernel", std::string()).empty()) proposed_by[body.value("kernel", std::string())] = body.value("provenance", json());
      if (body.contains("cards") && body["cards"].is_array())
        for (const auto& c : body["cards"])
          if (c.is_string()) b.use_card(c.get<std::string>(), "offered to the proposer");
    } else if (e.kind == "accepted") {
      const std::string k = body.value("kernel", std::string());
      const std::string from = body.value("from", best);
      const int64_t step = body.value("step", int64_t{0});
      const json tr = body.value("transition", json::object());
      if (!b.has_node(k)) b.add_node(k, cat("K", std::to_string(step)), "step")["step"] = step;
      json edge = edge_of(from, k, tr.value("action", std::string()), tr.value("locus", std::string()),
                          number_or_null(body, "ratio"), tr.value("provenance", json()), tr.value("evaluations", json()));
      edge["first_ratio"] = number_or_null(body, "first_ratio");
      edge["source"] = body.value("source", std::string());
      edge["step"] = step;
      json added = json::array();
      if (tr.contains("added"))
        for (const auto& f : tr["added"]) {
          const std::string locus = f.value("locus", std::string());
          added.push_back(locus.empty() ? f.value("name", std::string()) : cat(f.value("name", std::string()), "@", locus));
        }
      edge["features_added"] = added;
      b.edges.push_back(std::move(edge));
      if (body.contains("ratio") && body["ratio"].is_number()) cumulative *= body["ratio"].get<double>();
      points.push_back({{"x", evals_used}, {"y", cumulative}, {"kernel", k}, {"label", cat("K", std::to_string(step))},
                        {"measured", true}, {"step", step}, {"elapsed", body.value("elapsed", 0.0)}});
      if (body.contains("cards"))
        for (const auto& c : body["cards"])
          if (c.is_string()) b.use_card(c.get<std::string>(), cat("applied in step ", std::to_string(step)));
      best = k;
    } else if (e.kind == "rejected") {
      const std::string k = body.value("kernel", std::string());
      b.rejected.push_back({{"from", best},
                            {"kernel", k},
                            {"step", body.value("step", 0)},
                            {"attempt", body.value("attempt", 0)},
                            {"stage", body.value("stage", std::string())},
                            {"outcome", outcome_of.count(k) ? outcome_of[k] : std::string()},
                            {"summary", body.value("summary", std::string())},
                            {"provenance", proposed_by.count(k) ? provenance_text(proposed_by[k]) : std::string()}});
    }
  }
  const json summary = summary_of(r);
  if (summary.is_object() && summary.contains("best")) {
    const std::string h = summary["best"].value("hash", std::string());
    for (auto& n : b.nodes)
      if (n.value("id", "") == h && n.value("role", "") != "start") n["role"] = "best";
  }
  json budget = nullptr;
  if (r.limits.evals) budget = *r.limits.evals;
  b.progress = {{"title", "Best paired speedup over the start kernel"},
                {"x_label", "gate evaluations used"},
                {"y_label", "speedup over the start (product of the accepted steps' re-measured ratios)"},
                {"x_max", std::max<int64_t>(evals_used, 1)},
                {"budget", budget},
                {"origin", origin},
                {"points", points}};
  b.evolve = nullptr;
}

namespace {

// evolve's events read in order: the graph into the builder, the curve and the generations here.
struct evolve_walk {
  builder& b;
  double best_score = -1;
  int64_t ordinal = 0;
  json points = json::array(), per_generation = json::array(), origin = nullptr;

  void on_start(const json& body) {
    const std::string k = body.value("kernel", std::string());
    // The start kernel's composite score (search/archive.h): the curve starts from it.
    const json v = body.value("verdict", json::object());
    const json sp = number_or_null(v, "speedup");
    const double score = v.value("correct", false) ? 1 + (sp.is_number() ? sp.get<double>() : 1.0)
                         : v.value("compiles", false) ? 0.25 : 0.0;
    if (!k.empty() && !b.has_node(k)) {
      json& n = b.add_node(k, "S", "start");
      n["score"] = score;
      n["speedup"] = sp;
    }
    if (v.contains("id") && v["id"].is_number_integer() && v["id"].get<int64_t>() > 0) b.evaluations.insert(v["id"].get<int64_t>());
    best_score = score;
    origin = {{"x", 0}, {"y", score >= 1 ? score - 1 : 0.0}, {"score", score}, {"label", "S (start)"}};
  }

  void on_generation(const json& body) {
    per_generation.push_back({{"generation", body.value("generation", 0)}, {"best_score", body.value("best_score", 0.0)},
                              {"elites", body.value("archive", 0)}});
  }

  void on_child(const json& body) {
    ++ordinal;
    const std::string k = body.value("kernel", std::string()), parent = body.value("parent", std::string());
    const bool placed = body.value("placed", false) && !k.empty();
    const std::string label = cat("g", std::to_string(body.value("generation", 0)), ".i",
                                  std::to_string(body.value("island", 0)), ".", std::to_string(body.value("index", 0)));
    if (body.contains("cards"))
      for (const auto& c : body["cards"])
        if (c.is_string()) b.use_card(c.get<std::string>(), "offered for child " + label);
    if (!placed) {
      b.rejected.push_back({{"from", parent.empty() ? std::string() : parent},
                            {"kernel", k},
                            {"step", ordinal},
                            {"stage", body.value("placement", std::string())},
                            {"outcome", body.value("outcome", std::string())},
                            {"summary", label + " " + body.value("kind", std::string()) + ": " + body.value("action", std::string()) +
                                            (body.value("failure", "").empty() ? "" : " — " + body.value("failure", std::string()))},
                            {"provenance", provenance_text(body.value("provenance", json()))}});
      return;
    }
    if (!b.has_node(k)) {
      json& n = b.add_node(k, label, body.value("kind", std::string("child")));
      n["generation"] = body.value("generation", 0);
      n["island"] = body.value("island", 0);
      n["score"] = body.value("score", 0.0);
      n["speedup"] = number_or_null(body, "speedup");
    }
    if (!parent.empty() && parent != k && b.has_node(parent)) add_edge(body, parent, k);
    const double score = body.value("score", 0.0);
    if (score > best_score) {
      best_score = score;
      points.push_back({{"x", ordinal}, {"y", score >= 1 ? score - 1 : 0.0}, {"score", score}, {"kernel", k},
                        {"label", label}, {"measured", body.value("speedup", json()).is_number()}});
    }
  }

  void add_edge(const json& body, const std::string& parent, const std::string& k) {
    // The step's effect: the contest's paired ratio when there was one, else the ratio of the
    // two speedups over the baseline (docs/evolve.md "Training data").
    json effect = number_or_null(body, "contest_ratio");
    if (effect.is_null() && body.value("speedup", json()).is_number() && body.value("parent_speedup", json()).is_number() &&
        body["parent_speedup"].get<double>() > 0)
      effect = body["speedup"].get<double>() / body["parent_speedup"].get<double>();
    json edge = edge_of(parent, k, body.value("action", std::string()), "", effect,
                        body.value("provenance", json()), body.value("evaluations", json()));
    edge["placement"] = body.value("placement", std::string());
    edge["kind"] = body.value("kind", std::string());
    b.edges.push_back(std::move(edge));
  }
};

// The archive: each elite's cell decoded into one bin per descriptor (the first descriptor is
// the most significant digit, as search/archive.cpp numbers cells).
json archive_elites(const json& summary, const json& descriptors) {
  std::vector<int64_t> bins;
  for (const auto& d : descriptors) bins.push_back(static_cast<int64_t>(d.value("edges", json::array()).size()) + 1);
  json elites = json::array();
  if (summary.is_object() && summary.contains("archive"))
    for (const auto& el : summary["archive"]) {
      json x = el;
      int64_t cell = el.value("cell", int64_t{0});
      std::vector<int64_t> coords(bins.size(), 0);
      for (size_t i = bins.size(); i-- > 0;) {
        coords[i] = bins[i] > 0 ? cell % bins[i] : 0;
        cell = bins[i] > 0 ? cell / bins[i] : cell;
      }
      x["coords"] = coords;
      elites.push_back(std::move(x));
    }
  return elites;
}

}  // namespace

// evolve: every kernel placed in the archive (the start kernel first), edges parent -> child with
// the step's measured effect; children that were not placed are the rejected attempts. The curve
// is the best elite's speedup over the task's baseline against the children made.
void build_evolve(builder& b, const run& r, const std::vector<event>& events) {
  const json summary = summary_of(r);
  json options = summary.is_object() && summary.contains("options") ? summary["options"] : json::object();
  if (const json* st = first_event(events, "started"); st && !options.contains("descriptors")) options = *st;
  evolve_walk w{b};
  for (const auto& e : events) {
    const json& body = e.body;
    if (!body.is_object()) continue;
    b.cite(body);
    if (e.kind == "start") w.on_start(body);
    else if (e.kind == "generation") w.on_generation(body);
    else if (e.kind == "child") w.on_child(body);
  }
  json budget = nullptr;
  if (r.limits.steps) budget = *r.limits.steps;
  b.progress = {{"title", "Best elite's paired speedup over the baseline"},
                {"x_label", "children made (the steps budget)"},
                {"y_label", "speedup over the task's baseline (composite score − 1; undecided = parity)"},
                {"x_max", std::max<int64_t>(w.ordinal, 1)},
                {"budget", budget},
                {"origin", w.origin},
                {"points", w.points}};
  json descriptors = options.value("descriptors", json::array());
  json elites = archive_elites(summary, descriptors);
  json& per_generation = w.per_generation;
  if (summary.is_object() && summary.contains("best_per_generation") && per_generation.empty())
    for (size_t g = 0; g < summary["best_per_generation"].size(); ++g)
      per_generation.push_back({{"generation", g + 1}, {"best_score", summary["best_per_generation"][g]}});
  b.evolve = {{"descriptors", descriptors},
              {"islands", options.value("islands", 1)},
              {"archive", elites},
              {"best_per_generation", per_generation},
              {"best", summary.is_object() ? summary.value("best", std::string()) : std::string()},
              {"best_speedup", number_or_null(summary, "best_speedup")},
              {"stopped", summary.is_object() ? summary.value("stopped", std::string()) : std::string()}};
  for (auto& n : b.nodes)
    if (n.value("id", "") == b.evolve.value("best", "") && n.value("role", "") != "start") n["role"] = "best";
}

}  // namespace lathe::report::detail
