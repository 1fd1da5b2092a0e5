// The reward `lathe score` hands an RL trainer for one candidate against its parent (docs/evolve.md
// "lathe score"). Pure: tested on synthetic evaluations (tests/search/reward_test.cpp).
#pragma once

#include <cstdint>

#include "core/evaluation.h"

namespace lathe::search {

// What a reward stands for.
enum class reward_basis : uint8_t {
  decided,    // correct, and the gate decided the ratio (faster or slower past its margin): the ratio
  undecided,  // correct, the ratio within the machine's noise or unstable: 1, no gain credited
  failed,     // the candidate failed the gate: 0
};
const char* to_string(reward_basis b);

struct candidate_reward {
  double reward = 0;
  reward_basis basis = reward_basis::failed;
};

// A ratio the gate left undecided earns no gain: a 1.045x whose interval is [0.94, 1.16] was handed
// out as a reward of 1.045 (issue 42), when the same kernel timed against itself reads 0.978-1.023
// on the 2-core VM. It earns 1, what a kernel as fast as its parent earns, so that noise is
// neither rewarded nor punished; a decided ratio (the gate's decision "faster" or "slower") is the
// reward itself, and a failure 0.
candidate_reward reward_of(const evaluation& e);

}  // namespace lathe::search
