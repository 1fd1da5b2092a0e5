// Admission (DESIGN.md vocabulary "admission"; KLineage): a card enters the library only after
// it reproduces its declared effect on held-out kernels — kernels of `heldout` tasks, outside the
// source tasks and outside the card's own lineages. Per held-out task where the card applies (its
// constraints pass on the trial target and task, the kernel lacks what it provides, and the
// proposer materializes it), the result is gated against the task's start kernel in one paired
// series; every trial, applicable or not, lands in the card's verification log with its
// provenance and evaluation ids. docs/skills.md, "Admission", states the rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/card.h"
#include "core/error.h"
#include "core/target.h"
#include "core/task.h"
#include "store/store.h"
#include "verify/verifier.h"

namespace lathe::skills {

struct admit_options {
  target tgt;                   // where the trials run: constraints are checked against it
  std::string target_text;      // the proposer's target summary (agent::target_text(tgt) when empty)
  std::string start_kernel;     // kernel of each held-out task trials start from; empty: its baseline
  int32_t min_tasks = 2;        // distinct held-out tasks a card must reproduce on
  // `unstable` is the gate declining to decide on a noisy machine (PROTOCOL.md), not a verdict on
  // the card: ask again this many times (each try is a gate evaluation, all kept as evidence).
  int32_t unstable_retries = 1;
  // Stop trying a card once it has min_tasks reproductions: admission needs no more, and every
  // trial costs a paired timing series. The remaining tasks are not tried (not logged).
  bool stop_when_admitted = true;
  // Held-out tasks of one card tried at once (lathe skills admit --cpu-slots N: one per slot,
  // the verifier putting each on a free one). Each trial is prepared (constraints, features, the
  // proposer) one after another in order, the batch's gates run together, and the trials are
  // logged in order up to the one that admits the card: the same log and decision as one at a
  // time; a trial past that one was gated (its evaluations stored, counted in the cost) but is
  // not in the card's log.
  int32_t in_flight = 1;
};

// A task or kernel refused as admission ground: never a trial, never in a card's log.
struct ground_refusal {
  std::string task;
  std::string card;    // the card it was refused for; empty: refused for every card
  std::string reason;
};

struct card_admission {
  std::string card_id, name;
  card_status status = card_status::candidate;
  std::string reason;             // status_reason as stored
  std::vector<card_trial> trials; // this call's trials, as logged
  int32_t reproduced = 0;         // distinct tasks where the effect was reproduced
};

// Admission rate of one platform: cards decided (admitted or refused) and admitted.
struct platform_rate {
  int32_t decided = 0, admitted = 0;
  double rate() const { return decided ? double(admitted) / double(decided) : 0.0; }
};

// What admission cost offline.
struct admission_cost {
  int64_t gate_evaluations = 0;  // paired gate evaluations (verifier.compare, retries included)
  int64_t proposer_calls = 0;    // materialize calls
  int64_t model_calls = 0;       // model calls inside them (0 for the rule engine)
  double seconds = 0;            // wall time of the whole admission
};

struct admission {
  std::vector<card_admission> cards;
  std::vector<ground_refusal> refused;
  std::map<std::string, platform_rate> rates;  // by platform name ("cpu", "cuda")
  admission_cost cost;
};

// Tries each card on each held-out task, logs every trial (store.add_card_trial), decides and
// stores each card's status (store.put_card). Tasks with role `source`, and start kernels that
// belong to a card's own lineages, are refused as ground with the reason (ground_refusal); a bare
// KernelBench problem is ground unless it is a card's source task, its trials starting from its
// own Model as a ModelNew (spec/problem.h eager_baseline; the trial's `lang`). A card
// whose declared ratio does not clear 1 + margin (or that declares none) is refused without a
// trial: its declared effect is no speedup, so there is nothing to reproduce. Errors: the store
// failed, a start kernel could not be loaded, or the proposer failed with `call` or `budget`.
result<admission> admit(const std::vector<skill_card>& cards, const std::vector<task>& heldout,
                        lineages::verifier& v, agent::proposer& p, store& s, const admit_options& o);

}  // namespace lathe::skills
