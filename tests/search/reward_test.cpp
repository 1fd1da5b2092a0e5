// lathe score's reward (search/reward.h) on synthetic evaluations: an undecided ratio earns no
// gain (issue 42, item 7), a decided one is the reward, a failure 0.
#include <gtest/gtest.h>

#include "search/reward.h"

namespace lathe::search {
namespace {

evaluation timed(outcome o, double ratio, double lo, double hi, const std::string& decision) {
  evaluation e;
  e.result = o;
  paired_series p;
  p.ratio = ratio;
  p.ci_low = lo;
  p.ci_high = hi;
  e.paired = p;
  e.decision = parse_decision(decision);
  return e;
}

// The case: ok, 1.045x, interval [0.94, 1.16], decision "same" (within the margin).
TEST(reward, an_undecided_ratio_earns_no_gain) {
  const candidate_reward r = reward_of(timed(outcome::ok, 1.045, 0.94, 1.16, "same"));
  EXPECT_EQ(r.basis, reward_basis::undecided);
  EXPECT_DOUBLE_EQ(r.reward, 1.0);
  EXPECT_STREQ(to_string(r.basis), "undecided");
  // Unstable (the machine too noisy to decide): correct, no gain either way.
  const candidate_reward u = reward_of(timed(outcome::unstable, 1.6, 0.7, 3.0, "undecided"));
  EXPECT_EQ(u.basis, reward_basis::undecided);
  EXPECT_DOUBLE_EQ(u.reward, 1.0);
  // Below 1 but undecided: no loss charged.
  EXPECT_DOUBLE_EQ(reward_of(timed(outcome::ok, 0.96, 0.9, 1.02, "same")).reward, 1.0);
}

TEST(reward, a_decided_ratio_is_the_reward_and_a_failure_zero) {
  const candidate_reward f = reward_of(timed(outcome::ok, 1.8, 1.6, 2.0, "faster"));
  EXPECT_EQ(f.basis, reward_basis::decided);
  EXPECT_DOUBLE_EQ(f.reward, 1.8);
  const candidate_reward s = reward_of(timed(outcome::ok, 0.5, 0.45, 0.55, "slower"));
  EXPECT_EQ(s.basis, reward_basis::decided);
  EXPECT_DOUBLE_EQ(s.reward, 0.5);
  const candidate_reward w = reward_of(timed(outcome::wrong_result, 3.0, 2.9, 3.1, "faster"));
  EXPECT_EQ(w.basis, reward_basis::failed);
  EXPECT_DOUBLE_EQ(w.reward, 0.0);
  // Refused as suspicious (below the floor, a baseline it slowed): a failure, whatever its ratio.
  EXPECT_EQ(reward_of(timed(outcome::suspicious_speed, 3.0, 2.9, 3.1, "")).basis, reward_basis::failed);
  evaluation untimed;
  untimed.result = outcome::ok;
  EXPECT_EQ(reward_of(untimed).basis, reward_basis::undecided);
}

}  // namespace
}  // namespace lathe::search
