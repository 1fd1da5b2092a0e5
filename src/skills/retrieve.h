// Retrieval (DESIGN.md "skills/"; KLineage): which cards may be applied to a kernel, in which
// order. Hard filters first — status, platform, language (the carrier must be code for this
// kernel's language and the lathe ABI v1, or a rule invocation; a ModelNew takes a C++ or CUDA
// carrier into its inline extension), the target's capabilities and the task's properties
// through the cards' constraints — each refusal with its reason (which constraint, which value,
// which target). Operator is only a ranking signal, so a card found on gemm can serve a held-out
// operator; a PyTorch problem's operator is its Model's op family (core/op_family.h). The path
// follows the lineage from the features the kernel already has: a card whose provided features
// are present is skipped, one whose requirements are unmet (even after the cards before it) or
// that conflicts with what the kernel has stops there. docs/skills.md, "Retrieval", gives the score.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/candidate_language.h"
#include "core/card.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"
#include "skills/constraints.h"

namespace lathe::skills {

// Operator relatedness (docs/skills.md): same operator; related (one group of families,
// core/op_family.h related_families: contractions gemm~conv~attention, row reductions
// reduction~norm~softmax, or one family: relu~silu, elementwise, pooling, data movement); other.
enum class op_relation : uint8_t { same, related, other };
const char* to_string(op_relation r);
op_relation relation(std::string_view a, std::string_view b);

// A card's operator against a task's. A PyTorch problem has no operator name (its task's is the
// file's stem): its Model's ops (spec/problem_inputs.h problem_ops) give its families, and the
// card's operator family is `same` when it is the problem's family (the heaviest of its ops'),
// `related` when it is the family of another of its ops (a Linear + sigmoid problem and an
// element-wise card) or related to the problem's, `other` otherwise. Any other task: relation().
op_relation relation_to(std::string_view card_op, const task& t);

struct retrieve_query {
  language lang = language::cpp;
  // What the kernel is written in: a ModelNew (or Python kernel) takes a card's C++/CUDA carrier
  // into its inline extension, never a rule invocation (rules rewrite C-ABI bundles' files).
  candidate_language cand = candidate_language::c_abi;
  target tgt;                          // where the kernel will run
  const task* t = nullptr;             // its task: operator, timed shape, dtypes, shape sets
  std::string op;                      // operator (relation_to(card, *t) when empty)
  std::map<std::string, int64_t> shape;  // its timed shape (t's when empty)
  std::vector<std::string> features;   // registry names the current kernel already has
  // The kernel's tunables ([tune] in kernel.toml; null or empty: none): a tuned-knobs card
  // (core/card.h skill_card::tuned) serves only a kernel that declares exactly its tunables.
  const tune_space* tunables = nullptr;
};

struct retrieve_options {
  bool admitted_only = false;  // candidates are refused too (optimize's `skills` strategy)
  bool include_refused = false;  // refused cards are rejected unless this is set
  // Off: constraints are not checked (optimize's no-preconditions ablation, which measures what
  // the preconditions are worth; the gate still checks every result).
  bool check_constraints = true;
};

// Where a card was turned away.
enum class rejection_stage : uint8_t {
  status,          // refused at admission (or not admitted, with admitted_only; a tuned card
                   // is retrieved while a candidate: skills/tuned.h)
  platform,        // it provides a feature the platform does not have
  language,        // no carrier for this language/platform (nor a rule invocation)
  constraint,      // a constraint fails on this target or task: `failed` says which
  present,         // the kernel (or an earlier card of the path) already has what it provides
  requires_unmet,  // a required feature is absent, even after the cards before it
  conflict,        // it conflicts with a feature the kernel (or the path) has
  tunables,        // a tuned card: the kernel does not declare its tunables, or another target
};
const char* to_string(rejection_stage s);

struct rejection {
  std::string card_id, card_name;
  rejection_stage stage = rejection_stage::constraint;
  std::string reason;                        // the whole reason in words
  std::optional<constraint_failure> failed;  // stage constraint: the constraint, value, target
};

// The score (docs/skills.md): total = 4 * tier + gain + 0.5 * shape, where tier is 2 for the
// same operator, 1 for a related one, 0 otherwise (the tiers are 4 apart and gain + 0.5 * shape
// is at most 1.5, so operator similarity decides first); gain = log(g) / log(4) clamped to
// [0, 1], g the geometric mean of the card's declared ratio and its reproduced trials' ratios;
// shape = 1 / (1 + |log10(size_card / size_query)|), size the product of the timed shape's
// symbols (0.5 when either shape is unknown).
struct score_parts {
  op_relation rel = op_relation::other;
  double gain = 0, shape = 0, total = 0;
  std::optional<double> measured;  // g, when the card has any measured ratio
};

struct retrieved {
  skill_card card;
  score_parts score;
  std::vector<std::string> after;  // ids of path cards that provide what it requires
};

struct retrieval {
  std::vector<retrieved> ranked;  // every card on the path, best score first
  std::vector<std::string> path;  // the same cards in an order that can be applied
  std::vector<rejection> rejected;
};

retrieval retrieve(const std::vector<skill_card>& cards, const retrieve_query& q,
                   const retrieve_options& o = {});

// Whether a card can serve a kernel of `lang` on `plat` at all (filters 2 and 3 of retrieve): its
// provided features exist on that platform, and it has a carrier for `<lang>/<plat>` or a rule
// invocation; a kernel in another candidate language than the C ABI (`cand`: a ModelNew) needs
// code it can build into an inline extension: `cpp/cpu` on the CPU, `cuda/cuda` on CUDA, or
// `python/<plat>`. nullopt, or the rejection (stage platform or language) with its reason.
std::optional<rejection> usable_on(const skill_card& c, language lang, platform plat,
                                   candidate_language cand = candidate_language::c_abi);

// The score of one card for a query (the formula above).
score_parts score(const skill_card& c, const retrieve_query& q);

// Re-checks a card validated on one target against another target (and task, when given): every
// effective constraint (its own and those its features imply) that fails there. Empty: usable.
std::vector<constraint_failure> recheck(const skill_card& c, const target& other, const task* t = nullptr);

// The platforms a card has carriers for: "cpp/cpu" -> cpu, "cuda/cuda" -> cuda; a rules-only
// card: the platform of where it was measured (its target: "sm_*" is CUDA).
std::vector<platform> card_platforms(const skill_card& c);

}  // namespace lathe::skills
