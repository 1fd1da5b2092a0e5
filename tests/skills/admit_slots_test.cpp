// lathe skills admit --cpu-slots (issue 46 item 1; skills/admit.h admit_options::in_flight) from
// the command line through the real gate and the rule engine: one card (tests/data/cards, an
// OpenMP parallel-for) tried on two held-out CPU tasks with one slot and with two. With two, the
// card's two trials are gated at once, one per slot (the stored evaluations name slot 0 and slot
// 1 and overlap in time); both runs log the same trials: the same tasks in order, the same
// kernels before and after, the same gate outcome classes (whether the series then decides the
// card faster is timing, which a slot of fewer cores may measure otherwise). Timed (paired
// series): `timed`.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "evaluation_spans.h"
#include "lathe_cli_json.h"
#include "gate/cpu_slot.h"
#include "store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::evaluation_span;
using lathe::testing::parse_json;
using lathe::testing::run_lathe;
using lathe::testing::run_result;

const std::string src = LATHE_SOURCE_DIR;

// Its own folder under /tmp (lathe_cli_run.h): the slots' per-core locks live beside the device
// locks, this test's own. A workspace per run, by name.
class admit_slots : public lathe::testing::cli_folder_test {};

using lathe::testing::stored_spans;

bool passed(const json& trial) {
  const std::string oc = trial.value("outcome", "");
  return oc == "ok" || oc == "unstable";  // unstable: correct, the machine too noisy to decide
}

TEST_F(admit_slots, a_cards_trials_run_on_two_slots_at_once_and_are_the_trials_of_one_slot) {
  if (lathe::gate::allowed_cores().size() < 2) GTEST_SKIP() << "one core: two CPU slots cannot be made here";
  const std::string admit = "skills admit --card omp-parallel-loop --all --task row_mean --task transpose "
                            "--proposer rules --quick --max-time 0.3 --json ";
  json trials[2];
  for (int slots : {1, 2}) {
    const std::string w = ws("s" + std::to_string(slots));
    const run_result imported = run_lathe(w + "skills import '" + src + "/tests/data/cards/c_abi_omp_card.json'");
    ASSERT_EQ(imported.code, 0) << imported.err;
    const run_result r = run_lathe(w + admit + "--cpu-slots " + std::to_string(slots));
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = parse_json(r);
    ASSERT_EQ(j["platforms"].size(), 1u) << j.dump();
    ASSERT_EQ(j["platforms"][0]["cards"].size(), 1u) << j.dump();
    trials[slots - 1] = j["platforms"][0]["cards"][0]["trials"];
  }
  // Two held-out tasks, the last one the stop: both tried and logged by either run, in order.
  const json& one = trials[0];
  const json& two = trials[1];
  ASSERT_EQ(one.size(), 2u) << one.dump();
  ASSERT_EQ(two.size(), one.size()) << two.dump();
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i].value("task", ""), one[i].value("task", "")) << i;
    EXPECT_EQ(two[i].value("kernel_before", ""), one[i].value("kernel_before", "")) << i;
    EXPECT_EQ(two[i].value("kernel_after", ""), one[i].value("kernel_after", "")) << i;
    EXPECT_FALSE(two[i].value("kernel_after", "").empty()) << "the card was applied: " << two[i].dump();
    EXPECT_EQ(passed(two[i]), passed(one[i])) << one[i].dump() << "\n" << two[i].dump();
    EXPECT_TRUE(passed(two[i])) << two[i].dump();  // OpenMP on an element loop is correct
  }

  const auto on_one = stored_spans(dir_ / "s1"), on_two = stored_spans(dir_ / "s2");
  for (const auto& [id, s] : on_one) {
    ASSERT_TRUE(s.e.slot) << "evaluation " << id << " names no slot";
    EXPECT_EQ(s.e.slot->count, 1u);
  }
  // Each trial's first evaluation (a retry after `unstable` follows on whichever slot is free).
  std::vector<std::pair<uint32_t, const evaluation_span*>> first;
  for (const auto& t : two) {
    ASSERT_FALSE(t["evaluations"].empty()) << t.dump();
    const int64_t id = t["evaluations"][0].get<int64_t>();
    ASSERT_TRUE(on_two.count(id)) << id;
    const evaluation_span& s = on_two.at(id);
    ASSERT_TRUE(s.e.slot) << "evaluation " << id << " names no slot";
    EXPECT_EQ(s.e.slot->count, 2u);
    first.push_back({s.e.slot->index, &s});
  }
  EXPECT_EQ((std::set<uint32_t>{first[0].first, first[1].first}), (std::set<uint32_t>{0, 1}))
      << "the two trials were gated on one slot";
  const evaluation_span &a = *first[0].second, &b = *first[1].second;
  EXPECT_TRUE(lathe::testing::overlapped(a, b))
      << "the trials' evaluations did not overlap: [" << a.begun << ", " << a.ended << "] and [" << b.begun << ", "
      << b.ended << "]";
}

}  // namespace
