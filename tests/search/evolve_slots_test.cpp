// lathe evolve --cpu-slots (issue 46 item 1; cli/cpu_slots.h) from the command line through the real
// gate: a checks-only run (--no-time: nothing is timed, so it runs beside other tests) whose
// children are gated on two CPU slots stores evaluations that name their slot and reaches
// the verdicts and the archive of the same run on the whole machine (--cpu-slots 0, same seed);
// the combinations that cannot use slots are refused with their reason.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/evaluation.h"
#include "core/outcome.h"
#include "lathe_cli_json.h"
#include "store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::parse_json;
using lathe::testing::run_lathe;
using lathe::testing::run_result;

const std::string src = LATHE_SOURCE_DIR;

class evolve_slots : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-evolve-slots-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // The slots' per-core locks live beside the device locks: this test's own.
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string ws(const std::string& name) const { return "--workspace '" + (dir_ / name).string() + "' "; }
  fs::path dir_;
};

int allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

// Every evaluation a workspace stored, oldest first.
std::vector<lathe::evaluation> stored(const fs::path& ws) {
  std::vector<lathe::evaluation> out;
  auto db = lathe::store::open(ws / ".lathe/lathe.db");
  EXPECT_TRUE(db) << db.error().message;
  if (!db) return out;
  auto list = db->list_evaluations("", 0);
  EXPECT_TRUE(list) << list.error().message;
  if (!list) return out;
  for (auto it = list->rbegin(); it != list->rend(); ++it) {
    auto e = db->get_evaluation(it->id);
    EXPECT_TRUE(e) << e.error().message;
    if (e) out.push_back(std::move(*e));
  }
  return out;
}

// The verdicts of a run, as a multiset of (kernel hash, outcome), whatever order they finished in.
std::multiset<std::pair<std::string, std::string>> verdicts(const std::vector<lathe::evaluation>& es) {
  std::multiset<std::pair<std::string, std::string>> out;
  for (const auto& e : es) out.insert({e.kernel_hash, std::string(lathe::to_string(e.result))});
  return out;
}

const std::string task = src + "/tests/problems/scale_relu";
// The shipped silu task: the rule engine finds a new child in each generation (a cell per count of
// features, so that each is kept).
const std::string shape =
    "silu --proposer rules --generations 3 --islands 1 --population 2 --children 2 --seed 3 "
    "--descriptors features:1,2,3,4,5,6 --no-time --json ";

TEST_F(evolve_slots, children_on_two_slots_keep_the_verdicts_of_the_whole_machine) {
  if (allowed_cores() < 2) GTEST_SKIP() << "one core: two CPU slots cannot be made here";
  const run_result whole = run_lathe(ws("whole") + "evolve " + shape + "--cpu-slots 0");
  ASSERT_EQ(whole.code, 0) << whole.err;
  const run_result slotted = run_lathe(ws("slots") + "evolve " + shape + "--cpu-slots 2");
  ASSERT_EQ(slotted.code, 0) << slotted.err;
  const json a = parse_json(whole), b = parse_json(slotted);

  const auto on_whole = stored(dir_ / "whole"), on_slots = stored(dir_ / "slots");
  ASSERT_GE(on_slots.size(), 3u);  // the start and children of two generations
  std::set<uint32_t> named;
  for (const auto& e : on_whole) EXPECT_FALSE(e.slot) << "evaluation " << e.id << " of a run without slots";
  for (const auto& e : on_slots) {
    ASSERT_TRUE(e.slot) << "evaluation " << e.id << " names no slot";
    EXPECT_EQ(e.slot->count, 2u);
    EXPECT_EQ(e.slot->cores.size(), static_cast<size_t>(allowed_cores() / 2 + (static_cast<int>(e.slot->index) < allowed_cores() % 2 ? 1 : 0)));
    named.insert(e.slot->index);
    EXPECT_FALSE(e.paired) << "checks only: nothing timed";
  }
  // Only the two slots of the split (the rule engine writes one new child per batch here, so
  // which of them ran is not asserted: bench_parallel.py shows both in use on a suite).
  for (uint32_t i : named) EXPECT_LT(i, 2u);
  // The same verdicts, the same children and archive: the slots change where, not what.
  EXPECT_EQ(verdicts(on_slots), verdicts(on_whole));
  EXPECT_EQ(b["children"], a["children"]);
  EXPECT_EQ(b["failures"], a["failures"]);
  EXPECT_EQ(b["best"], a["best"]);
  EXPECT_EQ(b["archive"], a["archive"]);

  // Stored with the run, with the batch width the slots asked for; a resume keeps them and
  // replays every child (nothing gated again).
  const std::string run = b.value("run", "");
  const run_result shown = run_lathe(ws("slots") + "runs show " + run + " --json");
  ASSERT_EQ(shown.code, 0) << shown.err;
  const json args = parse_json(shown)["run"]["args"];
  EXPECT_EQ(args.value("cpu_slots", -1), 2) << args.dump();
  EXPECT_EQ(args.value("in_flight", -1), 2) << args.dump();
  EXPECT_TRUE(args.value("no_time", false)) << args.dump();
  const run_result again = run_lathe(ws("slots") + "evolve --resume " + run + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(parse_json(again)["archive"], b["archive"]);
  EXPECT_EQ(stored(dir_ / "slots").size(), on_slots.size());
}

TEST_F(evolve_slots, what_cannot_use_slots_is_refused_with_the_reason) {
  // One island's children of a generation are what goes to the slots at once.
  run_result r = run_lathe(ws("w") + "evolve '" + task + "' --proposer rules --children 1 --cpu-slots 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--children 1 leaves slots idle: give --children 2 or more"), std::string::npos) << r.err;
  // More slots than cores.
  r = run_lathe(ws("w") + "evolve '" + task + "' --proposer rules --children 1024 --cpu-slots 1024");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cpu-slots: "), std::string::npos) << r.err;
  r = run_lathe(ws("w") + "optimize '" + task + "' --proposer rules --cpu-slots 1024");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cpu-slots: "), std::string::npos) << r.err;
  // A CUDA task's slot is its GPU (refused before anything asks for one).
  for (const char* verb : {"evolve", "optimize"}) {
    r = run_lathe(ws("w") + verb + " relu_cuda --proposer rules --cpu-slots 2");
    EXPECT_EQ(r.code, 2) << verb;
    EXPECT_NE(r.err.find("task relu_cuda runs on CUDA, where the GPU is the slot"), std::string::npos) << verb << r.err;
  }
  r = run_lathe(ws("w") + "solve '" + src + "/tests/problems/kernelbench_solve/level1' --out '" + (dir_ / "out").string() +
                "' --platform cuda --cpu-slots 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("with --platform cuda the GPU is the slot"), std::string::npos) << r.err;
  // Nothing ran.
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
