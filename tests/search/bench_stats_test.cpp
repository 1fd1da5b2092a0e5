// The suite aggregates of `lathe bench` (docs/bench.md) on hand-computed cases: fast_p over all
// tasks (KernelBench's denominator), speedup statistics over correct tasks only, failures and
// missing candidates as 0 in the all-task mean, and no figure made up where there is none.
#include <gtest/gtest.h>

#include <cmath>

#include "search/bench.h"
#include "search/bench_stats.h"

namespace lathe::search {
namespace {

// A decided result: its paired interval 3% either side of the point estimate.
task_result ok(const std::string& t, double x) { return {t, task_status::correct, "ok", x, 0.97 * x, 1.03 * x}; }

TEST(bench_stats, five_tasks_by_hand) {
  const std::vector<task_result> rs = {
      ok("a", 0.8), ok("b", 1.5), ok("c", 3.0),
      {"d", task_status::failed, "wrong_result", std::nullopt, std::nullopt, std::nullopt},
      {"e", task_status::no_candidate, "", std::nullopt, std::nullopt, std::nullopt},
  };
  const bench_summary s = summarize(rs);
  EXPECT_EQ(s.tasks, 5);
  EXPECT_EQ(s.correct, 3);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.no_candidate, 1);
  EXPECT_DOUBLE_EQ(s.correctness_rate, 0.6);
  ASSERT_EQ(s.fast.size(), 3u);
  // fast_1.0: b and c; fast_1.5: only c (strictly above p); fast_2.0: c. Over all 5 tasks.
  EXPECT_EQ(s.fast[0].count, 2);
  EXPECT_DOUBLE_EQ(s.fast[0].fraction, 0.4);
  EXPECT_EQ(s.fast[1].count, 1);
  EXPECT_DOUBLE_EQ(s.fast[1].fraction, 0.2);
  EXPECT_EQ(s.fast[2].count, 1);
  ASSERT_TRUE(s.geomean && s.mean && s.median);
  EXPECT_NEAR(*s.geomean, std::cbrt(0.8 * 1.5 * 3.0), 1e-12);
  EXPECT_NEAR(*s.mean, (0.8 + 1.5 + 3.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(*s.median, 1.5);
  EXPECT_NEAR(s.mean_with_failures_as_zero, (0.8 + 1.5 + 3.0) / 5, 1e-12);
}

TEST(bench_stats, an_even_count_takes_the_middle_pair_and_no_correct_task_gives_no_figure) {
  const bench_summary even = summarize({ok("a", 1.0), ok("b", 4.0), ok("c", 2.0), ok("d", 3.0)}, {2.5});
  ASSERT_TRUE(even.median);
  EXPECT_DOUBLE_EQ(*even.median, 2.5);
  ASSERT_EQ(even.fast.size(), 1u);
  EXPECT_EQ(even.fast[0].count, 2);

  const bench_summary none = summarize({{"a", task_status::failed, "crash", std::nullopt, std::nullopt, std::nullopt},
                                        {"b", task_status::no_candidate, "", std::nullopt, std::nullopt, std::nullopt}});
  EXPECT_FALSE(none.geomean);
  EXPECT_FALSE(none.mean);
  EXPECT_FALSE(none.median);
  EXPECT_DOUBLE_EQ(none.correctness_rate, 0);
  EXPECT_DOUBLE_EQ(none.mean_with_failures_as_zero, 0);
  for (const auto& f : none.fast) EXPECT_EQ(f.count, 0);

  const bench_summary empty = summarize({});
  EXPECT_EQ(empty.tasks, 0);
  EXPECT_DOUBLE_EQ(empty.correctness_rate, 0);
  EXPECT_FALSE(empty.geomean);
}

// A correct but untimed candidate is correct and never fast, and stays out of the speedup figures.
TEST(bench_stats, a_correct_untimed_candidate_counts_as_correct_only) {
  const bench_summary s = summarize({ok("a", 2.0), {"b", task_status::correct, "ok", std::nullopt, std::nullopt, std::nullopt}});
  EXPECT_EQ(s.correct, 2);
  EXPECT_EQ(s.fast[0].count, 1);
  ASSERT_TRUE(s.geomean);
  EXPECT_DOUBLE_EQ(*s.geomean, 2.0);
  EXPECT_DOUBLE_EQ(s.mean_with_failures_as_zero, 1.0);
}

// Issue 42: a 1.045x whose interval is [0.94, 1.16] was counted as fast_1.0. A task is fast only
// when its gain is decided, the interval's low end above p; the point-estimate count stays beside
// it for comparison with KernelBench's rule.
TEST(bench_stats, a_task_is_fast_only_when_its_interval_clears_p) {
  const task_result undecided{"a", task_status::correct, "ok", 1.045, 0.94, 1.16};
  const task_result decided{"b", task_status::correct, "ok", 1.2, 1.1, 1.3};
  const task_result no_interval{"c", task_status::correct, "ok", 3.0, std::nullopt, std::nullopt};
  EXPECT_FALSE(decided_faster(undecided, 1.0));
  EXPECT_TRUE(decided_faster(decided, 1.0));
  EXPECT_FALSE(decided_faster(decided, 1.15));  // above p by its estimate, not by its interval
  EXPECT_FALSE(decided_faster(no_interval, 1.0));
  task_result failed = decided;
  failed.status = task_status::failed;
  EXPECT_FALSE(decided_faster(failed, 1.0));
  const bench_summary s = summarize({undecided, decided, no_interval}, {1.0, 1.5});
  ASSERT_EQ(s.fast.size(), 2u);
  EXPECT_EQ(s.fast[0].count, 1);  // b only
  EXPECT_DOUBLE_EQ(s.fast[0].fraction, 1.0 / 3);
  EXPECT_EQ(s.fast[0].count_point, 3);
  EXPECT_EQ(s.fast[1].count, 0);
  EXPECT_EQ(s.fast[1].count_point, 1);
  // The speedup statistics keep every correct estimate, decided or not.
  ASSERT_TRUE(s.mean);
  EXPECT_NEAR(*s.mean, (1.045 + 1.2 + 3.0) / 3, 1e-12);
}

// bench's table shows each speedup with its interval, and fast_p says what the interval decided.
TEST(bench_stats, the_table_shows_the_interval) {
  bench_result r;
  bench_row row;
  row.result = {"silu", task_status::correct, "ok", 1.045, 0.94, 1.16};
  r.rows.push_back(row);
  r.summary = summarize({row.result});
  bench_options o;
  o.suite = "s";
  const std::string md = bench_markdown(r, o);
  EXPECT_NE(md.find("| silu | correct | ok | 1.045x [0.940, 1.160] |"), std::string::npos) << md;
  EXPECT_NE(md.find("fast_1.0 (interval above p) | 0.000 (0 of 1; 1 by the point estimate alone)"), std::string::npos) << md;
  const nlohmann::json j = summary_json(r.summary);
  EXPECT_EQ(j["fast_p"][0].value("count", -1), 0);
  EXPECT_EQ(j["fast_p"][0].value("count_point_estimate", -1), 1);
}

}  // namespace
}  // namespace lathe::search

// KLineage's Appendix-D report (search/bench.h klineage_groups): per role, every run of every
// task; the geometric mean over successful runs only, failures counted beside it, roles apart.
namespace lathe::search {
namespace {

bench_row run_row(const std::string& task, const std::string& role, task_status s, std::optional<double> x) {
  bench_row r;
  r.result = {task, s, s == task_status::correct ? "ok" : "wrong_result", x, std::nullopt, std::nullopt};
  r.role = role;
  return r;
}

TEST(klineage_groups, success_only_geomean_with_failures_and_roles_apart) {
  const std::vector<bench_row> rows = {
      run_row("gemm", "source", task_status::correct, 2.0),
      run_row("gemm", "source", task_status::correct, 8.0),
      run_row("gemm", "source", task_status::failed, std::nullopt),
      run_row("conv", "source", task_status::correct, 1.0),
      run_row("silu", "heldout", task_status::failed, std::nullopt),
      run_row("silu", "heldout", task_status::no_candidate, std::nullopt),
      run_row("norm", "heldout", task_status::correct, std::nullopt),  // correct, untimed: not a success
  };
  const auto g = klineage_groups(rows);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].role, "source");
  EXPECT_EQ(g[0].tasks, 2);
  EXPECT_EQ(g[0].runs, 4);
  EXPECT_EQ(g[0].successes, 3);
  EXPECT_EQ(g[0].failures, 1);
  ASSERT_TRUE(g[0].geomean);
  EXPECT_NEAR(*g[0].geomean, std::cbrt(2.0 * 8.0 * 1.0), 1e-12);  // the failure is not a 0 in it
  EXPECT_EQ(g[1].role, "heldout");
  EXPECT_EQ(g[1].tasks, 2);
  EXPECT_EQ(g[1].runs, 3);
  EXPECT_EQ(g[1].successes, 0);
  EXPECT_EQ(g[1].failures, 3);
  EXPECT_FALSE(g[1].geomean);  // no success, no figure
}

TEST(klineage_groups, a_role_without_runs_is_left_out) {
  const auto g = klineage_groups({run_row("gemm", "source", task_status::correct, 1.5)});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].role, "source");
  EXPECT_NEAR(*g[0].geomean, 1.5, 1e-12);
}

}  // namespace
}  // namespace lathe::search
