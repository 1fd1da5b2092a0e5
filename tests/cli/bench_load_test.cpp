// `lathe bench`'s suite load (cli/bench_load.h): with width 2 two loads run at the same time —
// each load here waits for its partner to have started, which a load one at a time never sees —
// and the results come back in the suite's order. (A problem file's own code cannot show this:
// its oracle runs in the sandbox, where it sees no other process and no shared file.)
#include "cli/bench_load.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

namespace lathe::cli {
namespace {

namespace fs = std::filesystem;

// Loads that meet: each marks itself started and waits (up to `patience`) for every other.
struct meeting {
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> started;
  size_t expected = 0;
  std::chrono::milliseconds patience{0};
  result<task> load(const fs::path& p) {
    std::unique_lock<std::mutex> l(mu);
    started.insert(p.string());
    cv.notify_all();
    if (!cv.wait_for(l, patience, [&] { return started.size() >= expected; }))
      return fail(errc::io_error, p.string() + ": its partner was not being loaded at the same time");
    task t;
    t.name = p.stem().string();
    return t;
  }
};

TEST(bench_load, two_wide_loads_two_problems_at_the_same_time_in_the_suites_order) {
  meeting m;
  m.expected = 2;
  m.patience = std::chrono::seconds(30);  // only a load one at a time waits it out
  const std::vector<fs::path> paths{"a_meet.py", "b_meet.py"};
  const auto out = load_suite(
      paths, 2, [&](const fs::path& p) { return m.load(p); },
      [](const fs::path&, const result<task>&) { return false; });
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(out[i].has_value());
    ASSERT_TRUE(out[i]->has_value()) << out[i]->error().message;
    EXPECT_EQ((*out[i])->name, paths[i].stem().string());
  }
}

TEST(bench_load, one_wide_loads_one_at_a_time) {
  meeting m;
  m.expected = 2;
  m.patience = std::chrono::milliseconds(200);
  const std::vector<fs::path> paths{"a_meet.py", "b_meet.py"};
  const auto out = load_suite(
      paths, 1, [&](const fs::path& p) { return m.load(p); },
      [](const fs::path&, const result<task>&) { return false; });
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].has_value());
  EXPECT_FALSE(out[0]->has_value());  // the first waited alone
  ASSERT_TRUE(out[1].has_value());
  EXPECT_TRUE(out[1]->has_value());   // the second found the first started
}

TEST(bench_load, a_load_that_ends_the_suite_starts_nothing_after_it) {
  std::vector<std::string> seen;
  std::mutex mu;
  const std::vector<fs::path> paths{"a.py", "bad.py", "c.py", "d.py"};
  const auto out = load_suite(
      paths, 1,
      [&](const fs::path& p) -> result<task> {
        std::lock_guard<std::mutex> g(mu);
        seen.push_back(p.string());
        if (p == "bad.py") return fail(errc::invalid_argument, "bad");
        return task{};
      },
      [](const fs::path&, const result<task>& r) { return !r.has_value(); });
  EXPECT_EQ(seen, (std::vector<std::string>{"a.py", "bad.py"}));
  EXPECT_FALSE(out[2].has_value());
  EXPECT_FALSE(out[3].has_value());
}

}  // namespace
}  // namespace lathe::cli
