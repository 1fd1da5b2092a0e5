// Induction (DESIGN.md "skills/"; KLineage): the accepted steps of stored lineages grouped into
// skill cards. Steps group by what they do — action category, locus signature and the features
// they move — not by where they were found, so that one card carries the evidence of every expert
// that made the same move; a proposer abstracts a representative step of each group (one per
// language/platform, so one intent may hold several carriers), and lathe, not the proposer, fills
// what the evidence decides: the contract, the declared ratio, the evidence ids, the constraints a
// step's kernels show. docs/skills.md, "Induction", states every rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "core/card.h"
#include "core/error.h"
#include "core/feature.h"
#include "core/lineage.h"
#include "core/task.h"
#include "store/store.h"

namespace lathe::skills {

struct induce_options {
  // The tasks the lineages come from (card_request needs one; the card's shape is its timed set).
  // A group whose tasks are all missing here gives no card (induction says which).
  std::vector<task> tasks;
  // The target summary shown to the proposer (agent::target_text); empty: the lineage's target.
  std::string target_text;
  // Fold in the steps of a stored card with the same group key, so that evidence accumulates over
  // calls (a decompose of softmax adds to the card the gemm decompose made) instead of a later
  // call replacing a card with less evidence.
  bool merge_stored = true;
};

// A group that gave no card, and why (every representative's abstraction failed, no task).
struct induce_skip {
  std::string key;                   // group_key::text()
  std::vector<std::string> sources;  // "<lineage id>#<step>"
  std::string reason;
};

struct induction {
  std::vector<skill_card> cards;     // as stored, in group-key order
  std::vector<induce_skip> skipped;
  int32_t proposer_calls = 0;        // abstract_card calls (model calls inside them: `model_calls`)
  int32_t model_calls = 0;
};

// Groups every step of `lineages` (and of stored cards with the same keys), abstracts each group,
// stores each card (store.put_card) and returns them. Errors: a store failure, or a proposer
// failure of kind `call` or `budget` (the run may resume; cards stored so far stay). Other
// abstraction failures skip the group with the reason.
result<induction> induce_report(const std::vector<lineage>& lineages, store& s, agent::proposer& p,
                                 const induce_options& o);
// induce_report's cards.
result<std::vector<skill_card>> induce(const std::vector<lineage>& lineages, store& s,
                                       agent::proposer& p, const induce_options& o);

// ---- the grouping, public for tests and for the docs' examples ------------------------------

// The action category in the optimizing direction: a backward rule or model action names the
// removal ("omp_parallel.remove", "remove_cp_async_pipeline"); the card is for adding it back
// ("omp_parallel", "cp_async_pipeline"). Lower case; separators kept as '_'.
std::string action_category(const std::string& action);

// The shape of a locus without its names: "function" (gemm_kernel), "loop" (gemm_kernel/k, at
// any depth), "kernel" (the manifest: "<flags>", "<isa>", or none).
std::string locus_signature(const std::string& locus);

struct group_key {
  std::string action;                      // action_category
  std::string locus;                       // locus_signature
  std::vector<std::string> added, removed; // feature names the step adds / removes, sorted, once
  std::string text() const;                // "omp_parallel|loop|+omp_parallel|-"
};
group_key key_of(const transition& step);

// The card id of a group: a stable content hash of its key text (16 hex digits).
std::string card_id_of(const group_key& k);

// A kebab-case name (lower case letters, digits, single '-'), at most 64 characters.
std::string kebab(const std::string& text);

// The features a mechanism is built on, whatever kernel holds it (the dependency table of
// docs/skills.md): cp_async_pipeline, tma, wgmma, ldmatrix and warp_specialization stage their
// operands in shared memory (smem_tiling). Used to choose, among the features present before
// every step of a group, those the step needs.
std::vector<std::string> mechanism_needs(const std::string& feature);

}  // namespace lathe::skills
