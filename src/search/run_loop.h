// Internal to search/: what every search run does the same way (issue 43, step 9). An optimize
// run (optimize.cpp: steps over one best kernel) and an evolve run (evolve.cpp: islands of an
// archive) are strategies composed over one run_loop, which owns the bookkeeping of each action:
// reserve its budget, ask the gate or the proposer, commit what it used, record its event (or, on
// resume, take the recorded one and charge its use again), and the run's stop. Batch mode (a
// prompt written out that waits for its answer) and the budget's refusals end a run the same way
// in both. What to ask and what to keep stays with the strategy.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/evaluation.h"
#include "core/run.h"
#include "llm/budget.h"
#include "search/event_key.h"
#include "search/journal.h"
#include "search/stop.h"
#include "store/store.h"

namespace lathe::search::detail {

class run_loop {
 public:
  // Told after each event the journal wrote (not for a recorded one replayed on resume).
  using tell_fn = std::function<void(const std::string& kind, const std::string& message)>;

  run_loop(llm::ledger& ledger, journal& j, int64_t& evaluations, tell_fn tell)
      : ledger_(ledger), j_(j), evaluations_(evaluations), tell_(std::move(tell)) {}

  llm::ledger& ledger() { return ledger_; }
  journal& events() { return j_; }
  double elapsed() const { return ledger_.spent().seconds; }

  // The event appended and told, unless its key was recorded (resume: nothing written or told).
  result<void> emit(const std::string& kind, const event_key& key, nlohmann::json body, const std::string& message);
  // A recorded action's use charged again on resume: the reservation the live run made (its
  // seconds are the run's wall time, which the clock measures, so not charged twice).
  void charge(const llm::amounts& used);
  // A recorded evaluation replayed: charged again and counted.
  void replayed_evaluation();

  // The budget for an action: nullopt when refused, and the run stops at the limit it reached.
  std::optional<llm::reservation> reserve(const llm::amounts& worst_case);
  void commit(llm::reservation&& r, const llm::amounts& used) { ledger_.commit(std::move(r), used); }
  void release(llm::reservation&& r) { ledger_.release(std::move(r)); }
  // One gate evaluation within the budget (reserved unless `reserved`, run, committed, counted);
  // nullopt when the budget refused it (the run stops).
  std::optional<evaluation> gate(const std::function<evaluation()>& run, bool reserved = false);

  // The stop: the first reason given wins; later ones are ignored.
  void stop(stop_reason why, std::string detail);
  // The budget refused a reservation: the run stops at the limit it names.
  void refused(const llm::refusal& r);
  // Batch mode: a prompt is written out and waits for its answer. Not a stop by itself: an evolve
  // run writes the prompts of its other islands' batches first; an optimize run stops at once.
  void wait(std::string detail);
  // A proposer call that failed: true when the failure ends the run (batch mode's prompt waits
  // for its answer: wait(); the budget refused the call: a stop at the limit it reached), false
  // when it is the proposal's own failure and the run goes on.
  bool ends_run(const agent::failure& f);
  bool stopped() const { return reason_.has_value(); }
  bool waiting() const { return waiting_; }
  // Why the run ended: waiting when a prompt waits, else the stop (none while it runs on).
  std::optional<stop_reason> reason() const { return waiting_ ? stop_reason::waiting : reason_; }
  // What the first stop or wait said.
  const std::string& detail() const { return detail_; }

 private:
  llm::ledger& ledger_;
  journal& j_;
  int64_t& evaluations_;
  tell_fn tell_;
  std::optional<stop_reason> reason_;
  bool waiting_ = false;
  std::string detail_;
};

// The stop reason of a budget limit.
stop_reason stop_of(llm::resource r);

// A run's end in the store: failed (the body's error, returned), interrupted (batch mode: the
// run waits for answers; `detail` says for what) or finished, with its summary.
result<void> end_run(store& db, run& r, const result<void>& body, bool waiting, const std::string& detail,
                     const std::string& summary);

}  // namespace lathe::search::detail
