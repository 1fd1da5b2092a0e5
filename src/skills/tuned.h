// Tuned knobs as cards (issue 45, item 4; docs/skills.md "Tuned knobs"): a tune run that crowned
// a configuration (a fresh paired series decided it faster than the default: search/tune.h)
// becomes a card whose evidence is the crowning evaluation, whose scope is the kernel family (the
// task's operator, the kernel's tunable names) and the target, and whose action is "set these
// tunables to these values". `optimize` applies it mechanically to a kernel of the same family:
// the kernel configured with the card's values (spec/tune.h configure), which the gate decides
// like any other step. A kernel whose space does not hold the values, or whose constraints refuse
// them, is not given the configuration: the reason says which value or constraint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/card.h"
#include "core/error.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"
#include "store/store.h"

namespace lathe::skills {

// The action category of a tuned card, and the detail of its applications' provenance
// (rules:tune, mechanical).
inline constexpr const char* tune_action = "tune";

// What a finished tune run crowned.
struct tune_win {
  const task* t = nullptr;           // the tuned task (operator, timed shape)
  target tgt;                        // where it was measured
  std::string kernel;                // the tuned kernel's name
  language lang = language::cpp;     // its language (the carrier's key: cpp/cpu, cuda/cuda)
  std::string default_hash;          // the default configuration's bundle hash
  tune_config defaults, winner;
  double ratio = 1.0;                // the crown's paired ratio (default time / winner time)
  std::optional<double> lo, hi;      // its 95% interval
  std::vector<int64_t> evidence;     // the crowning evaluation first, then the search's of the winner
  std::string run;                   // the tune run
};

// The card of a win (not stored): id from the kernel's default hash, the target's architecture
// and the winning values, so that the same values crowned again are the same card and other values
// another one (admission's trials stay with the values they tried). Status `candidate` (no
// held-out trial); provenance rules:tune.
skill_card card_from_tune(const tune_win& w);

// A tuned card's id: the first 16 hex digits of the hash of the default configuration's bundle
// hash, the architecture and the winning values (card_from_tune).
std::string tuned_card_id(const std::string& default_hash, const std::string& arch, const tune_config& winner);

// Whether `k` is the kernel the card was tuned from, under whatever name or task it is found:
// configured with the card's defaults, it hashes to the default configuration the card's id was
// made from. Admission compares kernels by content here, not task names: the same source
// registered under another task is not held out.
bool tuned_from(const skill_card& c, const kernel_bundle& k);

// Stores the card under a free name (its own, else -2, -3…) and returns the name. A card already
// stored under its id (the same values crowned again) keeps its status and trials: a re-tune does
// not undo what admission decided.
result<std::string> store_tuned_card(store& db, skill_card c);

// Whether a tuned card is lathe tune's own crown in this store: provenance rules:tune and evidence
// naming the crowning evaluation. Only such a card serves `optimize` while still a candidate
// (retrieve.cpp); an imported one (its evidence dropped on import) or one written by hand waits
// for admission like any other card.
bool crowned_here(const skill_card& c);

// Whether a tuned card is for this kernel's family on this target: the kernel declares exactly the
// card's tunables and the target's platform and architecture are the card's. The reason when not.
std::optional<std::string> tuned_family_misfit(const skill_card& c, const tune_space& s, const target& tgt);

// The kernel configured with the card's values: every value in the kernel's declared space and
// every constraint met on every shape set of `t` (with `tgt`'s limits). Otherwise an error whose
// message says which tunable's value or which constraint refused it.
result<kernel_bundle> apply_tuned(const skill_card& c, const kernel_bundle& k, const task& t, const target& tgt);

}  // namespace lathe::skills
