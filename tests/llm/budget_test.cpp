// The budget ledger (llm/budget.h): exact counters, the "last call" allowance for tokens, money
// and wall time, refusals that name the limit, and reservations from several threads at once.
#include "llm/budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace lathe::llm {
namespace {

limits with_steps(int64_t n) {
  limits l;
  l.run.steps = n;
  return l;
}

limits with_tokens(int64_t n) {
  limits l;
  l.run.tokens = n;
  return l;
}

amounts steps(int64_t n) {
  amounts a;
  a.steps = n;
  return a;
}

amounts tokens(int64_t n) {
  amounts a;
  a.tokens = n;
  return a;
}

// A clock the test moves by hand.
struct fake_clock {
  std::shared_ptr<double> now = std::make_shared<double>(1000.0);
  ledger::clock_fn fn() const {
    auto p = now;
    return [p] { return *p; };
  }
};

TEST(budget, steps_are_exact_counting_what_is_in_flight) {
  ledger b(with_steps(3));
  std::vector<reservation> held;
  for (int i = 0; i < 3; ++i) {
    auto r = b.reserve(steps(1));
    ASSERT_TRUE(r.has_value()) << i;
    held.push_back(std::move(*r));
  }
  auto fourth = b.reserve(steps(1));
  ASSERT_FALSE(fourth.has_value());
  EXPECT_EQ(fourth.error().limit, resource::steps);
  EXPECT_EQ(fourth.error().limit_value, 3);
  EXPECT_EQ(fourth.error().in_flight, 3);
  EXPECT_NE(fourth.error().message.find("steps: limit 3"), std::string::npos)
      << fourth.error().message;

  // A committed step stays spent; a released one (the action never ran) comes back.
  b.commit(std::move(held[0]), steps(1));
  EXPECT_FALSE(b.reserve(steps(1)).has_value());
  b.release(std::move(held[1]));
  auto again = b.reserve(steps(1));
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(b.reserve(steps(1)).has_value());
  EXPECT_EQ(b.spent().steps, 1);
  EXPECT_EQ(b.in_flight().steps, 2);
  EXPECT_EQ(b.actions_in_flight(), 2);
  // No "last call" for exact counters: a reservation of 2 with 1 left is refused even alone.
  b.commit(std::move(*again), steps(1));
  b.commit(std::move(held[2]), steps(1));
  EXPECT_EQ(b.spent().steps, 3);
  EXPECT_EQ(b.actions_in_flight(), 0);
  ledger c(with_steps(3));
  auto two = c.reserve(steps(2));
  ASSERT_TRUE(two.has_value());
  c.commit(std::move(*two), steps(2));
  EXPECT_FALSE(c.reserve(steps(2)).has_value());
  EXPECT_TRUE(c.reserve(steps(1)).has_value());
}

TEST(budget, evaluations_and_calls_are_exact_too) {
  limits l;
  l.run.evals = 2;
  l.calls = 1;
  ledger b(l);
  amounts eval;
  eval.evals = 1;
  amounts call;
  call.calls = 1;
  auto e1 = b.reserve(eval);
  auto e2 = b.reserve(eval);
  auto e3 = b.reserve(eval);
  EXPECT_TRUE(e1 && e2);
  ASSERT_FALSE(e3.has_value());
  EXPECT_EQ(e3.error().limit, resource::evals);
  auto c1 = b.reserve(call);
  auto c2 = b.reserve(call);
  EXPECT_TRUE(c1.has_value());
  ASSERT_FALSE(c2.has_value());
  EXPECT_EQ(c2.error().limit, resource::calls);
  EXPECT_NE(c2.error().message.find("limits.calls"), std::string::npos) << c2.error().message;
}

TEST(budget, tokens_fit_strictly_while_others_are_in_flight) {
  ledger b(with_tokens(1000));
  auto a = b.reserve(tokens(300));
  auto c = b.reserve(tokens(300));
  auto d = b.reserve(tokens(300));
  ASSERT_TRUE(a && c && d);
  auto e = b.reserve(tokens(300));  // 1200 > 1000 and three calls in flight
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.error().limit, resource::tokens);
  EXPECT_EQ(e.error().spent, 0);
  EXPECT_EQ(e.error().in_flight, 900);
  EXPECT_EQ(e.error().asked, 300);
  auto f = b.reserve(tokens(100));  // 1000: fits exactly
  ASSERT_TRUE(f.has_value());
  b.release(std::move(*f));
  // Commit releases the worst case and charges the use.
  b.commit(std::move(*a), tokens(120));
  b.commit(std::move(*c), tokens(80));
  EXPECT_EQ(b.spent().tokens, 200);
  EXPECT_EQ(b.in_flight().tokens, 300);
  EXPECT_TRUE(b.reserve(tokens(500)).has_value());   // 200 + 300 + 500
  EXPECT_FALSE(b.reserve(tokens(501)).has_value());  // one too many, d still in flight
}

TEST(budget, the_last_call_may_pass_the_limit_by_at_most_its_own_use) {
  ledger b(with_tokens(1000));
  auto first = b.reserve(tokens(900));
  ASSERT_TRUE(first.has_value());
  b.commit(std::move(*first), tokens(900));

  // 900 + 500 does not fit, but nothing is in flight and 100 remain: the last call goes.
  auto last = b.reserve(tokens(500));
  ASSERT_TRUE(last.has_value());
  // While it is in flight nothing else that asks for tokens goes, however small…
  auto small = b.reserve(tokens(1));
  ASSERT_FALSE(small.has_value());
  EXPECT_EQ(small.error().limit, resource::tokens);
  // …but an action that asks for no tokens (a gate evaluation) does.
  amounts eval;
  eval.evals = 1;
  EXPECT_TRUE(b.reserve(eval).has_value());

  b.commit(std::move(*last), tokens(400));
  EXPECT_EQ(b.spent().tokens, 1300);  // over by 300, less than the last call's worst case
  // Spent: nothing more, even alone.
  auto after = b.reserve(tokens(1));
  ASSERT_FALSE(after.has_value());
  EXPECT_EQ(b.actions_in_flight(), 0);
  EXPECT_NE(after.error().message.find("1300 spent"), std::string::npos) << after.error().message;
}

TEST(budget, money_follows_the_same_rule_and_an_unpriced_model_cannot_pass_a_usd_limit) {
  limits l;
  l.run.usd = 1.0;
  ledger b(l);
  amounts cost;
  cost.usd = 0.4;
  auto a = b.reserve(cost);
  auto c = b.reserve(cost);
  ASSERT_TRUE(a && c);
  auto d = b.reserve(cost);  // 1.2 > 1.0 with two in flight
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().limit, resource::usd);
  EXPECT_NE(d.error().message.find("$1.0000"), std::string::npos) << d.error().message;
  b.commit(std::move(*a), cost);
  b.commit(std::move(*c), cost);
  amounts big;
  big.usd = 5.0;
  auto last = b.reserve(big);  // $0.20 left, nothing in flight: the last call
  ASSERT_TRUE(last.has_value());
  b.commit(std::move(*last), big);
  cost.usd = 0.01;
  EXPECT_FALSE(b.reserve(cost).has_value());

  // 0.1 + 0.2 + 0.7 is not exactly 1.0 in doubles; the limit still admits all three at once.
  ledger exact(l);
  std::vector<reservation> held;
  for (double v : {0.1, 0.2, 0.7}) {
    amounts x;
    x.usd = v;
    auto r = exact.reserve(x);
    ASSERT_TRUE(r.has_value()) << v;
    held.push_back(std::move(*r));
  }

  // No price: unbounded money. Refused under a usd limit, even as a last call, saying why…
  amounts unpriced;
  unpriced.calls = 1;
  unpriced.usd = std::numeric_limits<double>::infinity();
  ledger fresh(l);
  auto no = fresh.reserve(unpriced);
  ASSERT_FALSE(no.has_value());
  EXPECT_EQ(no.error().limit, resource::usd);
  EXPECT_NE(no.error().message.find("no price"), std::string::npos) << no.error().message;
  // …and booked as nothing without one.
  ledger free_of_usd(with_tokens(10));
  auto ok = free_of_usd.reserve(unpriced);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(free_of_usd.in_flight().usd, 0);
  free_of_usd.commit(std::move(*ok), amounts{});
  EXPECT_EQ(free_of_usd.spent().usd, 0);
}

TEST(budget, wall_time_is_the_clock_and_overlapping_actions_share_it) {
  fake_clock clock;
  limits l;
  l.run.seconds = 100;
  ledger b(l, {}, clock.fn());
  amounts sixty;
  sixty.seconds = 60;
  // Two 60 s actions side by side both end by t = 60 <= 100: wall time does not add up.
  auto a = b.reserve(sixty);
  auto c = b.reserve(sixty);
  ASSERT_TRUE(a && c);
  *clock.now += 50;
  auto d = b.reserve(sixty);  // would end at 110, and others are running
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().limit, resource::seconds);
  EXPECT_DOUBLE_EQ(d.error().spent, 50);
  EXPECT_NE(d.error().message.find("50.0 s elapsed"), std::string::npos) << d.error().message;
  amounts ten;
  ten.seconds = 10;
  EXPECT_TRUE(b.reserve(ten).has_value());  // ends at 60: fits
  b.commit(std::move(*a), sixty);
  b.commit(std::move(*c), sixty);
  EXPECT_DOUBLE_EQ(b.spent().seconds, 50);  // the clock, not the sum of durations (120)
  auto last = b.reserve(sixty);             // alone, 50 s left: the last action
  ASSERT_TRUE(last.has_value());
  b.release(std::move(*last));
  *clock.now += 50;
  EXPECT_FALSE(b.reserve(ten).has_value());  // 100 s elapsed: nothing more

  // A resumed run brings its earlier time.
  amounts before;
  before.seconds = 95;
  ledger resumed(l, before, clock.fn());
  EXPECT_DOUBLE_EQ(resumed.spent().seconds, 95);
  auto r = resumed.reserve(ten);  // 105 > 100, alone, 5 s left
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(resumed.reserve(ten).has_value());
}

TEST(budget, a_dropped_reservation_is_charged_its_worst_case) {
  limits l;
  l.run.steps = 2;
  l.run.tokens = 1000;
  ledger b(l);
  {
    amounts w;
    w.steps = 1;
    w.tokens = 400;
    auto r = b.reserve(w);
    ASSERT_TRUE(r.has_value());
  }  // neither committed nor released: an exception path
  EXPECT_EQ(b.spent().steps, 1);
  EXPECT_EQ(b.spent().tokens, 400);
  EXPECT_EQ(b.actions_in_flight(), 0);
  // Moving a reservation keeps one charge, not two.
  auto r = b.reserve(steps(1));
  ASSERT_TRUE(r.has_value());
  reservation moved = std::move(*r);
  EXPECT_FALSE(r->active());
  EXPECT_TRUE(moved.active());
  b.commit(std::move(moved), steps(1));
  EXPECT_EQ(b.spent().steps, 2);
}

TEST(budget, misuse_is_a_programmer_error) {
  ledger b(with_steps(5));
  EXPECT_THROW((void)b.reserve(steps(-1)), std::invalid_argument);
  amounts nan;
  nan.usd = std::nan("");
  EXPECT_THROW((void)b.reserve(nan), std::invalid_argument);
  auto r = b.reserve(steps(1));
  ASSERT_TRUE(r.has_value());
  // Using 2 steps on a reservation of 1 would break exactness: refused, nothing charged yet…
  EXPECT_THROW(b.commit(std::move(*r), steps(2)), std::logic_error);
  EXPECT_EQ(b.spent().steps, 0);
  EXPECT_TRUE(r->active());
  b.commit(std::move(*r), steps(1));
  EXPECT_THROW(b.commit(std::move(*r), steps(1)), std::logic_error);  // already committed
  ledger other(with_steps(5));
  auto theirs = other.reserve(steps(1));
  ASSERT_TRUE(theirs.has_value());
  EXPECT_THROW(b.release(std::move(*theirs)), std::logic_error);
}

TEST(budget, concurrent_reservations_admit_exactly_what_fits) {
  constexpr int threads = 8;
  ledger b(with_tokens(1000));
  std::atomic<int> admitted{0};
  std::latch reserved(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      auto r = b.reserve(tokens(300));
      if (r) ++admitted;
      reserved.arrive_and_wait();  // nobody commits before everyone has asked
      if (r) b.commit(std::move(*r), tokens(300));
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(admitted.load(), 3);  // 3 x 300 <= 1000 < 4 x 300, whatever the interleaving
  EXPECT_EQ(b.spent().tokens, 900);

  // From there, eight threads at once: exactly one gets the last call.
  std::atomic<int> last{0};
  std::latch asked(threads);
  pool.clear();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      auto r = b.reserve(tokens(300));
      if (r) ++last;
      asked.arrive_and_wait();
      if (r) b.commit(std::move(*r), tokens(250));
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(last.load(), 1);
  EXPECT_EQ(b.spent().tokens, 1150);
}

TEST(budget, many_threads_never_pass_exact_limits_nor_more_than_one_call_over) {
  constexpr int threads = 8;
  constexpr int64_t worst = 700;
  constexpr int64_t limit = 20'000;
  limits l;
  l.run.steps = 200;
  l.run.tokens = limit;
  ledger b(l);
  std::atomic<int64_t> steps_done{0};
  std::atomic<bool> stuck{false};
  // A ledger that refuses a lone call below its limit would keep these threads asking forever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0;; ++i) {
        if (std::chrono::steady_clock::now() > deadline) {
          stuck = true;
          return;
        }
        amounts w;
        w.steps = 1;
        w.tokens = worst;
        auto r = b.reserve(w);
        if (!r) {
          // Tokens gone (or steps): stop. Refused only because others are in flight: retry.
          if (r.error().limit == resource::steps || b.spent().tokens >= limit) return;
          std::this_thread::yield();
          continue;
        }
        std::this_thread::yield();
        amounts used;
        used.steps = (i + t) % 5 == 0 ? 0 : 1;  // some actions end before their step
        used.tokens = (i * 37 + t * 11) % (worst + 1);
        steps_done += used.steps;
        b.commit(std::move(*r), used);
      }
    });
  for (auto& th : pool) th.join();
  ASSERT_FALSE(stuck.load()) << "refused with tokens left and nothing in flight";
  const amounts s = b.spent();
  EXPECT_EQ(s.steps, steps_done.load());
  EXPECT_LE(s.steps, 200);
  EXPECT_GE(s.tokens, limit);          // used up, not refused early
  EXPECT_LE(s.tokens, limit + worst);  // and over by at most one call
  EXPECT_EQ(b.actions_in_flight(), 0);
  EXPECT_EQ(b.in_flight().tokens, 0);
}

TEST(budget, worst_cases_of_model_and_command_calls) {
  request r;
  r.system = std::string(100, 's');
  r.messages = {{"user", std::string(200, 'u')}, {"assistant", std::string(50, 'a')}};
  r.json_schema = std::string(30, '{');
  r.max_tokens = 1000;
  const int64_t bytes = 100 + 200 + 4 + 50 + 9 + 30;
  const int64_t bound = input_token_bound(r);
  // At least one token per byte; a fixed framing margin on top, not a multiple.
  EXPECT_GE(bound, bytes);
  EXPECT_LE(bound, bytes + 64);
  const price p{2.5, 10.0};
  const amounts w = worst_case_call(r, p, 120.0);
  EXPECT_EQ(w.calls, 1);
  EXPECT_EQ(w.tokens, bound + 1000);
  EXPECT_DOUBLE_EQ(w.usd, (bound * 2.5 + 1000 * 10.0) / 1e6);
  EXPECT_DOUBLE_EQ(w.seconds, 120.0);
  EXPECT_TRUE(std::isinf(worst_case_call(r, std::nullopt, 1.0).usd));

  response resp;
  resp.tokens_in = 300;
  resp.tokens_out = 700;
  resp.latency_seconds = 3.5;
  const amounts u = used_by_call(resp, p);
  EXPECT_EQ(u.calls, 1);
  EXPECT_EQ(u.tokens, 1000);
  EXPECT_DOUBLE_EQ(u.usd, (300 * 2.5 + 700 * 10.0) / 1e6);
  EXPECT_DOUBLE_EQ(cost_usd(p, 1'000'000, 1'000'000), 12.5);
  EXPECT_EQ(used_by_call(resp, std::nullopt).usd, 0);

  const amounts cmd = worst_case_command(600);
  EXPECT_EQ(cmd.calls, 1);
  EXPECT_EQ(cmd.tokens, 0);
  EXPECT_EQ(cmd.usd, 0);
  EXPECT_EQ(cmd.seconds, 600);
  // A command provider is counted by calls and wall time, never by tokens or money.
  limits l;
  l.calls = 1;
  l.run.tokens = 0;
  l.run.usd = 0.0;
  ledger b(l);
  auto c = b.reserve(cmd);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(b.reserve(cmd).has_value());
}

TEST(budget, a_runs_own_limits_override_the_files_field_by_field) {
  limits file;
  file.run.steps = 40;
  file.run.tokens = 1'000'000;
  file.run.usd = 5.0;
  file.calls = 100;
  budget run;
  run.tokens = 5000;
  run.seconds = 60.0;
  const limits l = with_overrides(file, run);
  EXPECT_EQ(l.run.steps, 40);      // the file's
  EXPECT_EQ(l.run.tokens, 5000);   // the run's
  EXPECT_EQ(l.run.usd, 5.0);       // the file's
  EXPECT_EQ(l.run.seconds, 60.0);  // only the run's
  EXPECT_FALSE(l.run.evals.has_value());
  EXPECT_EQ(l.calls, 100);
}

}  // namespace
}  // namespace lathe::llm
