// The rule engine behind the proposer interface (DESIGN.md "Two proposers"; docs/rules.md
// "Proposer"): every operation answered from the catalog (catalog.h) and the detectors
// (detect.h), offline and deterministically. It is the default proposer when no model is
// configured, and what most tests drive.
//
// Everything it returns is labelled by provenance `rules:<rule name>` and marked mechanical: a rule
// is a syntactic rewrite, so its results show that lathe's machinery works, never that anything
// was learned. Semantic preconditions a rule relies on (no aliasing, independent iterations…) are
// written into the rationale as "assumed; checked by the gate": nothing here claims them.
//
// What it cannot do it says: a backward step with nothing applicable is `refused`, and the
// message lists the features no rule could touch; `repair` and `seed_baseline` are
// `unsupported` (a rule has no idea why a kernel failed, and writes no kernel from scratch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/proposer.h"
#include "agent/rules/catalog.h"
#include "features/detect.h"

namespace lathe::agent::rules {

struct rules_options {
  // The task tolerates approximate math: fast-math forward rules may run (catalog_options).
  // Take it from the task (`options_for`); a rule never decides the tolerance itself.
  bool allow_fast_math = false;
  // Seed of the one choice that is not fixed by an order: which forward rule `mutate` tries.
  uint64_t seed = 0;
};

// The options a task implies (allow_fast_math from its tolerance policy).
rules_options options_for(const task& t, uint64_t seed = 0);

// The carrier key of a rule invocation in a card's `carriers` (beside `<language>/<platform>`,
// which holds the rule's text diff as a hint for an LLM).
inline constexpr const char* rules_carrier_key = "rules";

// The audit behind `audit_features`, with an artifact when the caller built one: the artifact's
// verdict stands for the names it can show (detect.h "Artifact first"), citations are the source
// lines the source detector found. A verdict lathe cannot cite (a feature only the artifact or
// the manifest's flags show) is demoted to `unknown` by verify_audit, as a model's would be.
audit_result audit_kernel(const kernel_bundle& k, const std::vector<std::string>& names,
                          const artifact* built = nullptr);

class rules_proposer final : public proposer {
 public:
  explicit rules_proposer(rules_options options = {}) : options_(options) {}

  provenance origin() const override;  // {"rules", "catalog", mechanical}

  // The first applicable backward rule whose feature the request lists: features in the order of
  // `action_prior` (a feature name, `remove_<feature>` or a rule name), then as listed; rules in
  // catalog order; a site at the listed feature's locus first. Sites a `rejected` note names
  // (rule and anchor) are skipped. Nothing applicable: refused, listing the untouched features.
  op_result<proposal> propose_backward(const backward_request& r) override;
  // A forward rule of `restore.name`: the inverse of the `action` hint's rule first, then a site at
  // its locus, then in its function, then any;
  // the feature's params (factor, threads…) are used where the rule takes them.
  op_result<proposal> rederive_forward(const forward_request& r) override;
  // audit_kernel without an artifact (a request holds none; nothing is built here). Names
  // outside the registry: unsupported, as for the LLM proposer.
  op_result<audit_result> audit_features(const audit_request& r) override;
  // The forward invocation that turns `before` into `after` (byte for byte when one does) as the
  // card's carrier; intent from the registry, preconditions from the rule.
  op_result<skill_card> abstract_card(const card_request& r) override;
  // Each card in order: its rule carrier replayed, else a forward rule of what it provides;
  // cards that do not apply are skipped (the rationale says which); none applied: refused.
  op_result<proposal> materialize(const materialize_request& r) override;
  op_result<proposal> repair(const repair_request& r) override;         // unsupported
  op_result<proposal> seed_baseline(const seed_request& r) override;    // unsupported
  // Paths whose summary names more registry features the kernel lacks first; ties in the given
  // order (retrieval gives them in lineage-path order).
  op_result<ranking> rank_paths(const rank_request& r) override;
  // A seeded choice among the applicable forward rules (opt_level included); sites of a feature
  // `direction` names first, then sites of features the inspirations' sources have and the
  // parent's lacks. Sites a `rejected` note names are skipped. None: refused.
  op_result<proposal> mutate(const mutate_request& r) override;
  // Every answer is a function of its request and the options.
  bool concurrent() const override { return true; }

 private:
  catalog_options catalog_opts() const;
  rules_options options_;
};

// A proposal from one rule result: provenance rules:<rule>, action = rule name, the rule's
// edit text, a rationale that lists its assumptions and carries the invocation (the carrier).
proposal proposal_of(const rule_result& res);

}  // namespace lathe::agent::rules
