// Checkable preconditions of skill cards (core/card.h `constraint`): their grammar, checking
// one against a target (and a task, for the kinds that are task properties), the constraints a
// provided feature implies whatever a card says, and the constraints induction reads off a step's
// evidence. Retrieval and admission both decide "does this card apply here" through `check`, so
// that a card refused on one path is refused on the other for the same, stated reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/card.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe::skills {

// The kinds of core/card.h's grammar, in its order.
enum class constraint_kind : uint8_t { capability, smem_bytes, dtype, alignment, divisibility, isa };
const char* to_string(constraint_kind k);
std::optional<constraint_kind> constraint_kind_of(std::string_view what);

// What is wrong with `c` against its kind's grammar, in words; nullopt when it parses.
std::optional<std::string> grammar_problem(const constraint& c);

// "what=value", as messages and prose show a constraint.
std::string constraint_text(const constraint& c);

// A target as messages name it: "sm_80 (NVIDIA A100)", "x86-64-v3 (AMD EPYC…)".
std::string target_name(const target& t);

// One failed constraint: which constraint, which value (inside `what`), which target, and why.
struct constraint_failure {
  constraint what;
  std::string target;  // target_name of the target it was checked on
  std::string reason;  // "sm_80 (A100) lacks capability wgmma (it has cp.async, ldmatrix, …)"
};

// nullopt when `c` holds on `tgt`; the failure otherwise. A constraint that does not parse fails
// (a card whose precondition cannot be read must not be used on faith). `dtype` and
// `divisibility` are properties of a task: without one (`t` null) they are not decided here and
// pass; admission and optimize always pass the task, so they are decided before any use.
std::optional<constraint_failure> check(const constraint& c, const target& tgt, const task* t);

// Constraints a provided feature implies whatever a card lists, because the mechanism is an
// instruction only some targets have (wgmma: capability wgmma and isa sm_90a; tma; cp.async;
// mma.sync; ldmatrix). A card abstracted by a model that forgot them is still refused on an sm_80.
std::vector<constraint> implied_constraints(const std::vector<std::string>& provided);

// Every constraint of a card, its own and the implied ones, each once.
std::vector<constraint> effective_constraints(const skill_card& c);

// Constraints induction reads off one step's evidence (docs/skills.md, Induction):
//   isa          the after kernel's manifest ISA when the step changed it;
//   capability   intrinsics or instructions the step introduces (_mm256_* -> avx2, _mm512_* ->
//                avx512f, *_fmadd_* -> fma, wgmma / cp.async.bulk / cp.async / mma.sync /
//                ldmatrix in CUDA sources), and the implied ones of the provided features;
//   dtype        the task's floating dtype when the provided mechanism is written for one element
//                type (simd, vector_access, mma_sync, wgmma, ldmatrix) and every floating tensor
//                shares it;
//   alignment    vector width x element size of an added vector_access/simd feature with a width;
//   smem_bytes   the largest static shared memory ptxas reported for the after kernel, if any.
// Divisibility is not guessed: only a proposer states it (and the grammar checks it).
std::vector<constraint> derive_constraints(const kernel_bundle& before, const kernel_bundle& after,
                                           const task& t, const std::vector<feature>& added,
                                           int64_t after_static_smem);

// Appends `c` to `out` unless an equal one is there.
void add_unique(std::vector<constraint>& out, const constraint& c);

}  // namespace lathe::skills
