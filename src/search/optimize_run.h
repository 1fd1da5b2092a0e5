// Internal to search/: an optimize run's state and actions (optimize.h, docs/optimize.md): the
// best kernel so far, the proposer's notes and memory, and each action the loop takes through its
// run_loop (run_loop.h) — a proposal, a gate evaluation, a rejection, an acceptance. The run's
// start and its final measurements are in optimize_run.cpp; its steps and optimize() itself in
// optimize.cpp.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/text.h"
#include "search/journal.h"
#include "search/optimize.h"
#include "search/plan.h"
#include "search/progress.h"
#include "search/run_loop.h"
#include "search/verdict.h"

namespace lathe::search::detail {

using nlohmann::json;

std::string short_hash(const std::string& h);
// The first line of `s`, cut at `max` bytes ("…" then).
std::string first_line(const std::string& s, size_t max = 240);
std::string ratio_text(double r);
// a - b for the amounts a proposer call may use (money never below 0).
llm::amounts minus(const llm::amounts& a, const llm::amounts& b);

// A proposer operation's answer: the proposal, or why there is none.
struct proposed {
  std::optional<agent::proposal> ok;
  agent::failure failed;
};

struct optimize_runner {
  const task& t;
  const optimize_kernels& ks;
  lineages::verifier& v;
  agent::proposer& p;
  store& db;
  llm::ledger& budget;
  const optimize_options& o;
  journal& j;
  optimize_result& out;
  plan& planner;

  optimize_runner(const task& t_, const optimize_kernels& ks_, lineages::verifier& v_, agent::proposer& p_, store& db_,
                  llm::ledger& budget_, const optimize_options& o_, journal& j_, optimize_result& out_,
                  plan& planner_)
      : t(t_), ks(ks_), v(v_), p(p_), db(db_), budget(budget_), o(o_), j(j_), out(out_), planner(planner_),
        loop(budget_, j_, out_.evaluations, [this](const std::string& kind, const std::string& message) {
          tell(kind, told_step, message);
        }) {}

  run_loop loop;
  int32_t told_step = 0;  // the step the event being written belongs to (emit)

  kernel_bundle best;
  std::vector<feature> best_features;
  std::string best_inspection;
  double best_ratio = 1.0;
  std::vector<agent::attempt_note> notes;
  std::vector<memory_entry> memory;
  std::map<std::string, std::string> gated;  // kernel hash -> its verdict in words
  int32_t stall = 0;
  int32_t current_step = 0;
  std::string inspection;  // what the proposer was told of the best kernel at this step
  progress_tracker tracker{t, o.tgt};

  // The proposer's ranking of path options, or its recorded one.
  result<std::vector<std::string>> rank(const agent::rank_request& rq);

  double elapsed() const { return loop.elapsed(); }

  void tell(const std::string& kind, int32_t step, const std::string& message);

  result<void> emit(const std::string& kind, const event_key& key, json body, int32_t step,
                    const std::string& message);

  // A proposer operation, or its recorded result.
  result<proposed> propose(const event_key& key, const std::string& op, const std::string& source,
                           const std::vector<std::string>& card_ids,
                           const std::function<agent::op_result<agent::proposal>()>& call);

  // A gate evaluation (timed: paired against `against`; else the checks only), or its recorded
  // verdict. nullopt: the budget refused it (stop is set).
  result<std::optional<verdict>> evaluate(const event_key& key, const std::string& purpose,
                                          const kernel_bundle& k, const kernel_bundle& against, bool time,
                                          const provenance& prov, bool reserved = false);

  // A timed comparison; `unstable` is the gate declining to decide on a noisy machine, not a verdict
  // on the kernel: asked again up to o.unstable_retries times (each a gate evaluation, all kept).
  result<std::optional<verdict>> compare(const event_key& key, const std::string& purpose, const kernel_bundle& k,
                                         const kernel_bundle& against, const provenance& prov);

  // The best kernel's verified features, read again (after it changed).
  result<void> observe_best();
  // What the proposer is told of the target and the best kernel at this step.
  std::string proposer_target() const;

  void note(const std::string& summary) { notes.push_back({summary}); }
  std::vector<agent::attempt_note> recent_notes() const {
    const size_t keep = 24;
    if (notes.size() <= keep) return notes;
    return {notes.end() - static_cast<std::ptrdiff_t>(keep), notes.end()};
  }

  result<void> reject(int32_t step, int32_t attempt, const std::string& stage, const std::string& kernel,
                      const std::string& summary) {
    ++out.rejected;
    note(summary);
    json body{{"step", step}, {"attempt", attempt}, {"stage", stage}, {"kernel", kernel}, {"summary", summary}};
    return emit(event_kind::rejected, event_key::rejected(step, attempt), std::move(body), step,
                cat("step ", std::to_string(step), " rejected (", stage, "): ", first_line(summary, 160)));
  }

  // The start kernel: given, seeded by the proposer (checked, repaired), or the naive one.
  result<void> start_kernel();

  // One step: a proposal, its gate, repairs, the re-measure, the verdict.
  result<void> step(int32_t n);

  result<void> accept(int32_t n, const request& req, const agent::proposal& cand, const verdict& first,
                      const verdict& second);

  // The fresh paired measurements the summary reports.
  result<void> finals(std::optional<llm::reservation>& held);
};

}  // namespace lathe::search::detail
