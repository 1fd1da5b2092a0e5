// The undecided rule of forward re-derivation (lineage/forward_speed.h), without a kernel: each
// case feeds the rule the timings a step would get and counts how often it asked for one.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <vector>

#include "lineage/forward_speed.h"

namespace lathe::lineages::detail {
namespace {

// The timings handed out in order; `asked` counts the calls.
struct script {
  std::vector<forward_timing> timings;
  int asked = 0;
  std::optional<forward_timing> operator()() {
    if (asked >= static_cast<int>(timings.size())) {
      ADD_FAILURE() << "timed more often than scripted";
      return std::nullopt;
    }
    return timings[asked++];
  }
};

TEST(forward_speed, a_narrow_margin_decides_at_once) {
  script fast{{{0.97, 0.05}}};
  auto s = decide_forward_speed(std::ref(fast));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::accepted);  // 0.97 >= 1 - 0.05
  EXPECT_EQ(s->timings, 1);
  EXPECT_EQ(fast.asked, 1);

  script slow{{{0.90, 0.05}}};
  s = decide_forward_speed(std::ref(slow));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::rejected);  // 0.90 < 0.95: slower beyond the noise
  EXPECT_EQ(slow.asked, 1);

  script edge{{{0.76, 0.24}}};  // just under the widest margin still decided
  s = decide_forward_speed(std::ref(edge));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::accepted);
  EXPECT_EQ(edge.asked, 1);
}

TEST(forward_speed, a_wide_margin_is_timed_again_and_stays_undecided) {
  // The issue's case: 0.934 was accepted against 1 - 0.754.
  script issue{{{0.934, 0.754}, {0.934, 0.754}}};
  auto s = decide_forward_speed(std::ref(issue));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::undecided);
  EXPECT_EQ(s->timings, 2);
  EXPECT_EQ(issue.asked, 2);
  EXPECT_DOUBLE_EQ(s->last.ratio, 0.934);

  script at_bar{{{1.2, undecided_margin}, {1.2, undecided_margin}}};  // 0.25 itself is too wide
  s = decide_forward_speed(std::ref(at_bar));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::undecided);
  EXPECT_EQ(at_bar.asked, 2);
}

TEST(forward_speed, a_wide_margin_that_narrows_when_timed_again_decides) {
  script narrows{{{0.934, 0.754}, {0.93, 0.04}}};
  auto s = decide_forward_speed(std::ref(narrows));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::rejected);  // the second timing decides: 0.93 < 0.96
  EXPECT_EQ(s->timings, 2);
  EXPECT_DOUBLE_EQ(s->last.margin, 0.04);

  script good{{{0.6, 0.5}, {0.99, 0.02}}};
  s = decide_forward_speed(std::ref(good));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, forward_status::accepted);
  EXPECT_EQ(good.asked, 2);
}

TEST(forward_speed, a_failed_timing_is_no_decision) {
  int asked = 0;
  auto s = decide_forward_speed([&]() -> std::optional<forward_timing> {
    ++asked;
    return std::nullopt;
  });
  EXPECT_FALSE(s);
  EXPECT_EQ(asked, 1);
  // Failing on the second timing, after a wide first one, is no decision either.
  std::vector<std::optional<forward_timing>> seq{forward_timing{0.9, 0.6}, std::nullopt};
  asked = 0;
  s = decide_forward_speed([&] { return seq[asked++]; });
  EXPECT_FALSE(s);
  EXPECT_EQ(asked, 2);
}

}  // namespace
}  // namespace lathe::lineages::detail
