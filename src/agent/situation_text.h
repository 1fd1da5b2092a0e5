// What the v2 prompt templates add to what a model is shown (docs/prompts.md "v2"): the contract a
// kernel is held to (ABI facts, the comparison and its tolerances, flags, threads, the ISA
// policy), where a search stands (absolute times, the paired ratio, the roofline and its
// ceilings, steps and budget left, the library's state) and a card's measured effects. Each is the
// text of one prompt field; v1 templates never see them, so v1 recordings replay unchanged.
#pragma once

#include <optional>
#include <string>

#include "agent/proposer.h"
#include "core/candidate_language.h"
#include "core/card.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe::agent {

// The `contract` field: what the gate checks and what a kernel may rely on, for `t` on `host`.
std::string contract_text(const task& t, const target& host);
// The same for a candidate in language `l` (v3): a ModelNew's interface, checks and build; the
// C ABI's as above.
std::string contract_text(const task& t, const target& host, candidate_language l);

// The `language` field (v3): the candidate language's name alone on the first line, then what a
// candidate in it is and must keep.
std::string language_text(candidate_language l);

// The `progress` field.
std::string progress_text(const progress_facts& p);

// A timed decision's noise rule in words (gate/paired.h decide): "noise margin 1 + 0.050, from the
// A/A interval [0.970, 1.020]: a ratio counted as faster only where its interval's low end was above
// 1.050"; an A/A interval reaching past `aa_unstable` is said to be too wide to decide.
std::string margin_text(double margin, std::optional<double> aa_low, std::optional<double> aa_high,
                        std::optional<double> aa_unstable);

// A card's measured effect on its source task(s) and on every held-out task it was tried on,
// and its admission status; appended to a card in v2's `cards` field and to a rank option.
std::string card_evidence_text(const skill_card& c);

// How a card is applied to a kernel written in `kernel` on `plat` (v3 materialize, after the
// card): for a ModelNew, that its technique goes into the C++ (CUDA) of the inline extension,
// adapted from a C-ABI carrier, with its flags in load_inline's arguments. Empty for a C-ABI kernel.
std::string card_carry_text(const skill_card& c, candidate_language kernel, platform plat);

// "2.41 ms", "815 us", "3.2 s": a time for people and models.
std::string seconds_text(double s);

// The roofline terms of `t`'s timed shape set against `host`'s measured ceilings, in words:
// flops and bytes, each ceiling, and which term bounds the floor. Empty without a cost model.
std::string roofline_text(const task& t, const target& host, std::optional<double> floor_seconds);

}  // namespace lathe::agent
