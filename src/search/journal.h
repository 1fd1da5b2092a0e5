// Internal to search/: an optimize or evolve run's events (store: run_events) as the loop writes
// them and reads them back on resume (docs/optimize.md "Run events"). Every event has a `key`
// naming the action it records (event_key.h: "p/3/0/1", proposal of step 3, repair round 1;
// "e/candidate/3/0/0"; "a/3"), and `elapsed`, the run's wall time when it was written. On resume the loop runs again
// from the start: an action whose key was recorded takes the recorded result (its budget use is
// charged again, nothing is asked of the proposer or the gate), so the resumed run retraces the
// recorded one exactly and goes on live from where it stopped.
//
// Kinds and bodies (beside key and elapsed):
//   started     {"task", "strategy", "ablation", "limits", "options"}
//   resumed     {"from_seq"}
//   proposal    {"op": seed|materialize|mutate|repair, "source", "cards", "inspection" (what the
//                proposer was told of the best kernel: features, last measure, profile), "ok", "kernel",
//                "action", "locus", "adds", "removes", "rationale", "edits", "provenance",
//                "calls", "failure": {"kind", "message"}, "used"}
//   evaluation  {"purpose": start|candidate|remeasure|final_best|final_expert, "kernel",
//                "against", "id", "outcome", "message", "diagnostics", "ratio", "margin",
//                "passed", "decision" and "interval" (the gate's, on the ratio's interval: what
//                `faster` means since issue 43 step 10; absent in older records), "inspection", "used"}
//   start       {"kernel", "name", "how"}
//   accepted    {"step", "kernel", "from", "ratio", "first_ratio", "source", "cards", "transition"}
//   rejected    {"step", "attempt", "stage", "kernel", "summary"}
//   finished    {"stop", "detail"}
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evaluation.h"
#include "core/run.h"
#include "llm/budget.h"
#include "search/event_key.h"
#include "search/event_kinds.h"
#include "store/store.h"

namespace lathe::search::detail {

nlohmann::json amounts_json(const llm::amounts& a);
llm::amounts amounts_from(const nlohmann::json& j);

// A kernel's last evaluation as the proposer reads it: median, roofline position, ptxas resources.
std::string inspection_of(const evaluation& e);

// The run a `--resume` names: it must exist, be of `kind` and work on `task`; errors say which.
result<run> resumable_run(store& db, const std::string& id, run_kind kind, const std::string& task);

// A new run (kind, task, limits, args; `run_id` or a fresh id), or the one `resume` names
// (resumable_run), marked running and stored. `resumed` says which.
result<run> begin_run(store& db, const std::optional<std::string>& resume, run_kind kind, const std::string& task,
                      const std::string& run_id, const budget& limits, const std::string& args, bool& resumed);

class journal {
 public:
  journal(store& db, std::string run_id) : db_(db), run_id_(std::move(run_id)) {}

  // Loads the run's events (resume). An event that does not parse is an error naming its seq.
  result<void> load();
  // The recorded body of the event with this key, if any.
  const nlohmann::json* recorded(const event_key& key) const;
  bool replaying(const event_key& key) const { return recorded(key) != nullptr; }
  // Appends the event unless its key was recorded (then nothing is written); true when written.
  result<bool> emit(const std::string& kind, const event_key& key, nlohmann::json body, double elapsed);
  int64_t last_seq() const { return last_seq_; }
  size_t recorded_count() const { return by_key_.size(); }
  // The largest `elapsed` of the recorded events (0 when none).
  double recorded_elapsed() const { return elapsed_; }

 private:
  store& db_;
  std::string run_id_;
  std::map<std::string, nlohmann::json> by_key_;  // by the key's text, as stored
  int64_t last_seq_ = 0;
  double elapsed_ = 0;
};

}  // namespace lathe::search::detail
