// Internal to search/: what each strategy (strategy.h) asks of the proposer at one step of the
// optimize loop, and what it remembers of earlier steps (which cards were tried on which kernel).
// The loop (optimize.cpp) owns the budget, the gate and the journal; a plan only builds requests.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/error.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/task.h"
#include "search/optimize.h"
#include "search/strategy.h"
#include "store/store.h"

namespace lathe::search {

// One proposer request of a step.
struct request {
  std::string op;      // "materialize" | "mutate" | "configure" (a tuned card: no proposer call)
  std::string source;  // "card:<name>", "plan:<n1>+<n2>", "free", "memory", "expert-source", "none"
  std::vector<std::string> card_ids;
  std::string option;  // the retrieval option it came from (card id or "plan:<ids>")
  bool free = false;   // the free mutation once the cards are spent: no retrieval option
  std::function<agent::op_result<agent::proposal>()> call;
  bool exhausted = false;  // nothing left to ask: `why` says so
  std::string why;
};

// The proposer's ranking of path options, journaled by the loop (a model call is never repeated
// on resume). Returns the ids best first; on a proposer failure, the given order.
using ranker = std::function<result<std::vector<std::string>>(const agent::rank_request&)>;

class plan {
 public:
  virtual ~plan() = default;
  // Features a seeded start kernel should already have (the best retrieved path's entry).
  virtual std::vector<std::string> entry_features() const { return {}; }
  virtual result<request> next(const kernel_bundle& best, const std::vector<feature>& features,
                               const std::string& target, const agent::progress_facts& progress,
                               const std::vector<agent::attempt_note>& notes,
                               const std::vector<memory_entry>& memory) = 0;
  // The proposer answered the request (its kernel goes to the gate) / failed it.
  virtual void proposed(const request& r, const kernel_bundle& on) = 0;
  virtual void failed(const request& r, const kernel_bundle& on, const agent::failure& f) = 0;
  // The loop accepted the request's kernel: `to`, made from the best `from`, is the new best
  // (also while a resumed run retraces its recorded steps).
  virtual void accepted(const request&, const kernel_bundle& /*from*/, const kernel_bundle& /*to*/) {}
};

// The plan of o.strat. skills reads the library (store cards), expert-source the experts of the
// stored lineages (nearest operator first, at most two, same platform); an expert-source run
// with no decomposed expert in the store is an error that says to run decompose first.
result<std::unique_ptr<plan>> make_plan(const task& t, agent::proposer& p, store& db,
                                        const optimize_options& o, ranker rank);

}  // namespace lathe::search
