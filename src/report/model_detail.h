// Internal to report/: the pieces the run and card models share. The kind-specific parts (the
// graph, the progress curve, the archive) are in model_runs.cpp.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "core/kernel.h"
#include "core/run.h"
#include "report/model.h"
#include "store/store.h"

namespace lathe::report::detail {

using json = nlohmann::json;

struct event {
  int64_t seq = 0;
  std::string kind, created_at;
  json body;
};

// Kernels read from the store once each; a hash the store does not hold reads as absent.
class kernel_cache {
 public:
  explicit kernel_cache(const store& db) : db_(db) {}
  const kernel_bundle* get(const std::string& hash);
  std::string name(const std::string& hash);

 private:
  const store& db_;
  std::map<std::string, std::optional<kernel_bundle>> cache_;
};

// What a kind-specific builder fills; model.cpp adds evaluations, cards, diffs and provenance.
struct builder {
  const store& db;
  const report_options& opt;
  kernel_cache kernels;
  std::set<int64_t> evaluations;  // every evaluation id the run cites
  std::vector<std::string> cards; // card ids the run used, first use first
  std::map<std::string, std::string> card_use;  // card id -> how the run used it
  json nodes = json::array(), edges = json::array(), rejected = json::array();
  json progress;  // null when the kind has no curve
  json evolve;    // evolve runs only
  json tune;      // tune runs only: every configuration against the default
  std::vector<std::string> notes;  // what could not be shown, in words

  builder(const store& d, const report_options& o) : db(d), opt(o), kernels(d) {}
  bool has_node(const std::string& hash) const;
  json& add_node(const std::string& hash, const std::string& label, const std::string& role);
  void use_card(const std::string& id, const std::string& how);
  // Evaluation ids anywhere in an event body: arrays under "evaluations"/"final_evaluations",
  // integers under "evaluation"; in an `evaluation` event also its "id".
  void cite(const json& body, bool is_evaluation_event = false);
};

std::string feature_text(const feature& f);  // "simd@lathe_launch"
std::string provenance_text(const json& p);  // "rules:omp_parallel.add (mechanical)"
json optional_number(const std::optional<double>& x);

void build_decompose(builder& b, const run& r, const std::vector<event>& events);
void build_optimize(builder& b, const run& r, const std::vector<event>& events);
void build_evolve(builder& b, const run& r, const std::vector<event>& events);
// A tune configuration ({"BLOCK": 64, …}) as spec/tune.h's config_label writes it, "BLOCK=64,…"
// (report/ does not link spec/).
std::string config_text(const json& config);
// tune (no events: its summary, lathe.tune/1): the configurations' evaluations cited and the
// search's convergence, the best speedup over the default against configurations measured.
void build_tune(builder& b, const run& r);

// One evaluation as the report shows it: outcome, error figures, timing samples, dispersion.
json evaluation_view(const evaluation& e);
// The diff of two kernels' bundles (every file, and the manifest's flags), cut at `max_lines`.
json kernel_diff(kernel_cache& kernels, const std::string& from, const std::string& to, size_t max_lines);
// Each node's time: the median of the newest evaluation (of `evaluations`, views as above, oldest
// first) that timed its kernel, as candidate, else as baseline.
void fill_node_times(json& nodes, const json& evaluations);
// What the run achieved, for the page's first block (verdict.cpp): a headline, the start and best
// kernels with their times and the paired speedup's interval where measured, who did the work.
json verdict_view(builder& b, const run& r, const json& provenance);

}  // namespace lathe::report::detail
