#include "search/reward.h"

namespace lathe::search {

const char* to_string(reward_basis b) {
  switch (b) {
    case reward_basis::decided: return "decided";
    case reward_basis::undecided: return "undecided";
    case reward_basis::failed: return "failed";
  }
  return "?";
}

candidate_reward reward_of(const evaluation& e) {
  candidate_reward r;
  // Correct: passed, or checked and only the timing undecided (unstable).
  if (!correct(e.result)) return r;
  r.basis = reward_basis::undecided;
  r.reward = 1.0;
  const bool ratio = e.paired && e.paired->ratio > 0;
  if (e.result == outcome::ok && ratio && (e.decision == decision::faster || e.decision == decision::slower)) {
    r.basis = reward_basis::decided;
    r.reward = e.paired->ratio;
  }
  return r;
}

}  // namespace lathe::search
