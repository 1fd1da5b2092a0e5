// lathe.report/1: a run's header, its graph, curve and archive (model_runs.cpp), and what every
// kind shares: the evaluations it cites, the cards it used, the diffs along its graph's edges and
// who proposed its work.
#include "report/model.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "core/json.h"
#include "core/json_card.h"
#include "core/json_run.h"
#include "core/text.h"
#include "report/diff.h"
#include "report/model_detail.h"

namespace lathe::report {
namespace detail {

const kernel_bundle* kernel_cache::get(const std::string& hash) {
  if (hash.empty()) return nullptr;
  auto it = cache_.find(hash);
  if (it == cache_.end()) {
    auto k = db_.get_kernel(hash);
    it = cache_.emplace(hash, k ? std::optional<kernel_bundle>(std::move(*k)) : std::nullopt).first;
  }
  return it->second ? &*it->second : nullptr;
}

std::string kernel_cache::name(const std::string& hash) {
  const kernel_bundle* k = get(hash);
  return k ? k->name : std::string();
}

bool builder::has_node(const std::string& hash) const {
  return std::any_of(nodes.begin(), nodes.end(), [&](const json& n) { return n.value("id", "") == hash; });
}

json& builder::add_node(const std::string& hash, const std::string& label, const std::string& role) {
  nodes.push_back({{"id", hash},
                   {"label", label},
                   {"name", kernels.name(hash)},
                   {"role", role},
                   {"in_store", kernels.get(hash) != nullptr},
                   {"features", json::array()},
                   {"median_seconds", nullptr},
                   {"time_evaluation", nullptr}});
  return nodes.back();
}

void builder::use_card(const std::string& id, const std::string& how) {
  if (id.empty()) return;
  if (std::find(cards.begin(), cards.end(), id) == cards.end()) cards.push_back(id);
  std::string& u = card_use[id];
  if (u.find(how) == std::string::npos) u += (u.empty() ? "" : "; ") + how;
}

void builder::cite(const json& body, bool is_evaluation_event) {
  if (is_evaluation_event && body.contains("id") && body["id"].is_number_integer() && body["id"].get<int64_t>() > 0)
    evaluations.insert(body["id"].get<int64_t>());
  if (body.is_array()) {
    for (const auto& x : body) cite(x);
    return;
  }
  if (!body.is_object()) return;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if ((k == "evaluations" || k == "final_evaluations") && v.is_array()) {
      for (const auto& id : v)
        if (id.is_number_integer() && id.get<int64_t>() > 0) evaluations.insert(id.get<int64_t>());
    } else if (k == "evaluation" && v.is_number_integer() && v.get<int64_t>() > 0) {
      evaluations.insert(v.get<int64_t>());
    } else if (v.is_object() || v.is_array()) {
      cite(v);
    }
  }
}

std::string feature_text(const feature& f) { return f.locus.empty() ? f.name : f.name + "@" + f.locus; }

std::string provenance_text(const json& p) {
  if (!p.is_object()) return "unknown";
  provenance x;
  from_json(p, x);
  return to_string(x);
}

json optional_number(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

json series_view(const paired_series& s) {
  return {{"a_label", s.a_label}, {"b_label", s.b_label}, {"ratio", s.ratio}, {"ci_low", s.ci_low},
          {"ci_high", s.ci_high}, {"rse", s.rse}, {"stop_reason", s.stop_reason}, {"a_method", s.a_method ? to_string(*s.a_method) : ""},
          {"a_seconds", s.a_seconds}, {"b_seconds", s.b_seconds}};
}

json evaluation_view(const evaluation& e) {
  json checks{{"total", e.checks.size()}, {"passed", 0}, {"max_abs_err", 0.0}, {"max_rel_err", 0.0},
              {"norm_err", 0.0}, {"first_mismatches", json::array()}};
  int64_t passed = 0;
  double abs_err = 0, rel_err = 0, norm_err = 0;
  for (const auto& c : e.checks) {
    passed += c.passed;
    abs_err = std::max(abs_err, c.max_abs_err);
    rel_err = std::max(rel_err, c.max_rel_err);
    norm_err = std::max(norm_err, c.norm_err);
    if (!c.passed && checks["first_mismatches"].empty())
      for (size_t i = 0; i < c.first_mismatches.size() && i < 5; ++i)
        checks["first_mismatches"].push_back(c.shape_set + " " + c.output + " " + c.first_mismatches[i]);
  }
  checks["passed"] = passed;
  checks["max_abs_err"] = abs_err;
  checks["max_rel_err"] = rel_err;
  checks["norm_err"] = norm_err;
  json stages = json::array();
  for (const auto& [stage, s] : e.stage_seconds) stages.push_back({{"stage", stage}, {"seconds", s}});
  return {{"id", e.id},
          {"task", e.task},
          {"kernel_hash", e.kernel_hash},
          {"kernel_name", e.kernel_name},
          {"baseline_hash", e.baseline_hash},
          {"baseline_name", e.baseline_name},
          {"outcome", to_string(e.result)},
          {"message", e.message},
          {"diagnostics", e.diagnostics.substr(0, 2000)},
          {"provenance", e.prov},
          {"target", e.tgt.arch},
          {"checks", checks},
          {"median_seconds", optional_number(e.median_seconds)},
          {"baseline_median_seconds", optional_number(e.baseline_median_seconds)},
          {"dispersion", optional_number(e.dispersion)},
          {"roofline_fraction", optional_number(e.roofline_fraction)},
          {"timing_shape", e.timing_shape},
          {"wall_seconds", e.wall_seconds},
          {"stage_seconds", stages},
          {"paired", e.paired ? series_view(*e.paired) : json(nullptr)},
          {"aa", e.aa ? series_view(*e.aa) : json(nullptr)}};
}

void fill_node_times(json& nodes, const json& evaluations) {
  std::map<std::string, std::pair<double, int64_t>> as_candidate, as_baseline;  // newest wins
  for (const auto& e : evaluations) {
    const int64_t id = e.value("id", int64_t{0});
    if (e["median_seconds"].is_number()) as_candidate[e.value("kernel_hash", "")] = {e["median_seconds"].get<double>(), id};
    if (e["baseline_median_seconds"].is_number())
      as_baseline[e.value("baseline_hash", "")] = {e["baseline_median_seconds"].get<double>(), id};
  }
  for (auto& n : nodes) {
    const std::string h = n.value("id", "");
    const auto* t = as_candidate.count(h) ? &as_candidate[h] : as_baseline.count(h) ? &as_baseline[h] : nullptr;
    if (!t) continue;
    n["median_seconds"] = t->first;
    n["time_evaluation"] = t->second;
  }
}

json kernel_diff(kernel_cache& kernels, const std::string& from, const std::string& to, size_t max_lines) {
  json d{{"from", from}, {"to", to}, {"files", json::array()}, {"added", 0}, {"removed", 0}, {"truncated", false},
         {"missing", json::array()}};
  const kernel_bundle* a = kernels.get(from);
  const kernel_bundle* b = kernels.get(to);
  if (!a) d["missing"].push_back(from);
  if (!b) d["missing"].push_back(to);
  if (!a || !b) return d;
  // The manifest's flags, defines and libraries as pseudo-lines: a step may change only them.
  auto manifest_text = [](const kernel_bundle& k) {
    std::string s;
    for (const auto& f : k.manifest.flags) s += "flag " + f + "\n";
    for (const auto& [key, v] : k.manifest.defines) s += "define " + key + "=" + v + "\n";
    for (const auto& l : k.manifest.libraries) s += "library " + l + "\n";
    return s;
  };
  std::map<std::string, std::pair<std::string, std::string>> files;
  for (const auto& [path, text] : a->sources) files[path].first = text;
  for (const auto& [path, text] : b->sources) files[path].second = text;
  files["(kernel.toml: flags, defines, libraries)"] = {manifest_text(*a), manifest_text(*b)};
  size_t budget = max_lines;
  int64_t added = 0, removed = 0;
  for (const auto& [path, texts] : files) {
    if (texts.first == texts.second) continue;
    const line_diff ld = diff_lines(texts.first, texts.second);
    added += ld.added;
    removed += ld.removed;
    json f{{"path", path},
           {"change", !a->sources.count(path) && path[0] != '(' ? "added"
                      : !b->sources.count(path) && path[0] != '(' ? "removed" : "modified"},
           {"added", ld.added}, {"removed", ld.removed}, {"whole", ld.whole}, {"hunks", json::array()}};
    for (const auto& h : ld.hunks) {
      json lines = json::array();
      for (const auto& l : h.lines) {
        if (budget == 0) break;
        --budget;
        lines.push_back({{"op", to_string(l.op)}, {"text", l.text}, {"old", l.old_no}, {"new", l.new_no}});
      }
      if (!lines.empty()) f["hunks"].push_back({{"lines", lines}});
      if (budget == 0) {
        d["truncated"] = true;
        break;
      }
    }
    d["files"].push_back(std::move(f));
  }
  d["added"] = added;
  d["removed"] = removed;
  return d;
}

}  // namespace detail

namespace {

using detail::json;

json run_header(const run& r) {
  json j = r;
  for (const char* k : {"args", "summary"}) {
    const std::string text = j[k].get<std::string>();
    j[k] = json::accept(text) ? json::parse(text) : json(nullptr);
  }
  return j;
}

// Who proposed the run's work, from the run's own label and the provenance it stored. Rule-engine,
// mock-model and replayed results show the machinery, not what a model would find (DESIGN.md).
json provenance_view(const run& r, const std::vector<detail::event>& events, const json& edges,
                     const json& evaluations) {
  std::string label;
  for (const std::string& text : {r.summary, r.args})
    if (label.empty() && json::accept(text)) {
      const json j = json::parse(text);
      if (j.is_object()) label = j.value("proposer", std::string());
    }
  for (const auto& e : events)
    if (label.empty() && e.kind == "started" && e.body.is_object()) label = e.body.value("proposer", std::string());
  std::set<std::string> kinds;
  bool mock = false;
  auto add = [&](const json& p) {
    if (!p.is_object() || p.value("kind", "").empty()) return;
    kinds.insert(p.value("kind", ""));
    mock = mock || p.value("detail", "").find("mock") != std::string::npos;
  };
  for (const auto& e : edges) add(e.value("provenance_json", json()));
  for (const auto& e : evaluations)
    if (e.contains("provenance") && e["provenance"].value("kind", "") != "human") add(e["provenance"]);
  mock = mock || label.find("mock") != std::string::npos;
  // A run that stored no label of its own (decompose) is labelled by the provenance it stored.
  if (label.empty() && !kinds.empty()) {
    std::vector<std::string> k(kinds.begin(), kinds.end());
    label = "from the stored provenance: " + join(k, ", ");
  }
  const bool rules = kinds.count("rules") || label.rfind("rule", 0) == 0 || label.find("rule-engine") != std::string::npos;
  const bool replay = kinds.count("replay") > 0;
  const bool machinery = (rules || mock || replay) && !(kinds.count("llm") && !mock);
  std::string note;
  if (machinery)
    note = std::string("These results come from ") +
           (mock ? "the mock model" : rules ? "the offline rule engine" : "replayed recordings") +
           ": they show that the machinery works (every kernel was really built, checked and timed), "
           "not what a model would find.";
  return {{"proposer", label}, {"kinds", kinds}, {"machinery_only", machinery}, {"note", note}};
}

void fill_common(detail::builder& b, const run& r, const std::vector<detail::event>& events, json& out) {
  // Evaluations: every cited one, oldest first, up to the cap.
  json evals = json::array();
  size_t left_out = 0;
  for (int64_t id : b.evaluations) {
    if (evals.size() >= b.opt.max_evaluations) {
      ++left_out;
      continue;
    }
    auto e = b.db.get_evaluation(id);
    if (!e) {
      b.notes.push_back(cat("evaluation #", std::to_string(id), " could not be read: ", e.error().message));
      continue;
    }
    evals.push_back(detail::evaluation_view(*e));
  }
  if (left_out) b.notes.push_back(std::to_string(left_out) + " evaluation(s) left out (at most " +
                                  std::to_string(b.opt.max_evaluations) + " are shown)");
  detail::fill_node_times(b.nodes, evals);
  // Cards.
  json cards = json::array();
  for (const auto& id : b.cards) {
    auto c = b.db.get_card(id);
    if (!c || !*c) {
      b.notes.push_back("card " + id + " is not in this store");
      continue;
    }
    json cj = **c;
    cj["used_in_run"] = b.card_use[id];
    cards.push_back(std::move(cj));
  }
  // Diffs along the graph's edges.
  json diffs = json::array();
  std::map<std::string, std::string> labels;
  for (const auto& n : b.nodes) labels[n.value("id", "")] = n.value("label", "");
  for (const auto& e : b.edges) {
    if (diffs.size() >= b.opt.max_diffs) {
      b.notes.push_back(cat("diffs shown for the first ", std::to_string(b.opt.max_diffs), " edges only"));
      break;
    }
    json d = detail::kernel_diff(b.kernels, e.value("from", ""), e.value("to", ""), b.opt.max_diff_lines);
    d["from_label"] = labels[e.value("from", "")];
    d["to_label"] = labels[e.value("to", "")];
    d["action"] = e.value("action", "");
    diffs.push_back(std::move(d));
  }
  out["provenance"] = provenance_view(r, events, b.edges, evals);
  out["verdict"] = detail::verdict_view(b, r, out["provenance"]);
  for (auto& e : b.edges) e.erase("provenance_json");
  out["graph"] = {{"nodes", b.nodes}, {"edges", b.edges}, {"rejected", b.rejected}};
  out["progress"] = b.progress;
  out["evolve"] = b.evolve;
  out["tune"] = b.tune;
  out["cards"] = cards;
  out["evaluations"] = evals;
  out["diffs"] = diffs;
  out["notes"] = b.notes;
}

}  // namespace

result<nlohmann::json> run_report(const store& db, const std::string& run_id, const report_options& o) {
  auto r = db.get_run(run_id);
  if (!r) return tl::unexpected(r.error());
  if (!*r) return fail(errc::not_found, "no run '" + run_id + "' in this workspace (`lathe runs list` names them)");
  auto stored = db.run_events(run_id);
  if (!stored) return tl::unexpected(stored.error());
  std::vector<detail::event> events;
  for (const auto& e : *stored) {
    detail::event x{e.seq, e.kind, e.created_at, json::accept(e.json) ? json::parse(e.json) : json(e.json)};
    events.push_back(std::move(x));
  }
  detail::builder b(db, o);
  switch ((*r)->kind) {
    case run_kind::decompose: detail::build_decompose(b, **r, events); break;
    case run_kind::optimize: detail::build_optimize(b, **r, events); break;
    case run_kind::evolve: detail::build_evolve(b, **r, events); break;
    case run_kind::bench:
      for (const auto& e : events) b.cite(e.body, e.kind == "evaluation");
      b.notes.push_back("a bench run has no lineage graph or curve: its evaluations are below");
      break;
    case run_kind::tune: detail::build_tune(b, **r); break;
  }
  json out{{"schema", run_report_schema}, {"kind", "run"}, {"generated_at", utc_now()},
           {"run", run_header(**r)}, {"events", events.size()}};
  fill_common(b, **r, events, out);
  return out;
}

}  // namespace lathe::report
