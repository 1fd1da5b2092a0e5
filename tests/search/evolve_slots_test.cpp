// lathe evolve --cpu-slots (issue 46 item 1; cli/cpu_slots.h) from the command line through the real
// gate: a checks-only run (--no-time: nothing is timed, so it runs beside other tests) whose
// children, written by the mock model (its siblings differ: two new kernels per batch), are gated
// on two CPU slots at once: its stored evaluations name both slots and overlap in time, and it
// reaches the verdicts and the archive of the same run on one slot (--cpu-slots 1, the same batch
// width and seed); the combinations that cannot use slots are refused with their reason.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/evaluation.h"
#include "core/outcome.h"
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
class evolve_slots : public lathe::testing::cli_folder_test {
 protected:
  // A workspace whose model is the mock (lathe-mock-model through the command provider).
  std::string mock_ws(const std::string& name) const {
    fs::create_directories(dir_ / name / ".lathe");
    std::ofstream(dir_ / name / ".lathe/lathe.toml") << "provider = \"command\"\nmodel = \"lathe-mock-model\"\n"
                                                         "[command]\nargv = [\"" << LATHE_MOCK_MODEL << "\", \"--seed\", \"7\"]\n";
    return ws(name);
  }
};

// Every evaluation a workspace stored, oldest first, with when it ran.
std::vector<evaluation_span> stored_timed(const fs::path& ws) {
  std::vector<evaluation_span> out;
  for (auto& [id, span] : lathe::testing::stored_spans(ws)) out.push_back(std::move(span));
  return out;
}

std::vector<lathe::evaluation> stored(const fs::path& ws) {
  std::vector<lathe::evaluation> out;
  for (auto& t : stored_timed(ws)) out.push_back(std::move(t.e));
  return out;
}

// The verdicts of a run, as a multiset of (kernel hash, outcome), whatever order they finished in.
std::multiset<std::pair<std::string, std::string>> verdicts(const std::vector<lathe::evaluation>& es) {
  std::multiset<std::pair<std::string, std::string>> out;
  for (const auto& e : es) out.insert({e.kernel_hash, std::string(lathe::to_string(e.result))});
  return out;
}

const std::string task = src + "/tests/problems/scale_relu";
// The shipped silu task with the mock model: two children a generation from one island, both in
// one batch (--in-flight 2 on either run, so that the runs sample the same parents), each a new
// kernel (the mock's siblings differ), checks only.
const std::string shape =
    "silu --proposer llm --generations 2 --islands 1 --population 1 --children 2 --in-flight 2 --seed 3 "
    "--descriptors features:1,2,3,4,5,6 --no-time --json ";

// Cores of slot `index` of a split of this machine's cores into `count` (gate::split_cores: sizes
// differ by at most one, the larger first).
size_t cores_of(uint32_t index, uint32_t count) {
  const int n = static_cast<int>(lathe::gate::allowed_cores().size());
  return static_cast<size_t>(n / static_cast<int>(count) + (static_cast<int>(index) < n % static_cast<int>(count) ? 1 : 0));
}

TEST_F(evolve_slots, one_run_keeps_two_slots_busy_with_the_verdicts_of_one_slot) {
  if (lathe::gate::allowed_cores().size() < 2) GTEST_SKIP() << "one core: two CPU slots cannot be made here";
  const run_result one = run_lathe(mock_ws("one") + "evolve " + shape + "--cpu-slots 1");
  ASSERT_EQ(one.code, 0) << one.err;
  const run_result two = run_lathe(mock_ws("two") + "evolve " + shape + "--cpu-slots 2");
  ASSERT_EQ(two.code, 0) << two.err;
  const json a = parse_json(one), b = parse_json(two);

  const auto on_one = stored_timed(dir_ / "one"), on_two = stored_timed(dir_ / "two");
  ASSERT_GE(on_two.size(), 3u);  // the start and new children
  for (const auto& t : on_one) {
    ASSERT_TRUE(t.e.slot) << "evaluation " << t.e.id << " names no slot";
    EXPECT_EQ(t.e.slot->index, 0u);
    EXPECT_EQ(t.e.slot->count, 1u);
    EXPECT_EQ(t.e.slot->cores.size(), lathe::gate::allowed_cores().size());
  }
  std::set<uint32_t> named;
  for (const auto& t : on_two) {
    ASSERT_TRUE(t.e.slot) << "evaluation " << t.e.id << " names no slot";
    EXPECT_EQ(t.e.slot->count, 2u);
    ASSERT_LT(t.e.slot->index, 2u);
    EXPECT_EQ(t.e.slot->cores.size(), cores_of(t.e.slot->index, 2));
    named.insert(t.e.slot->index);
    EXPECT_FALSE(t.e.paired) << "checks only: nothing timed";
  }
  // One run kept both slots busy: each slot ran evaluations, and an evaluation on slot 0 and one
  // on slot 1 ran at the same time (each began before the other ended).
  EXPECT_EQ(named, (std::set<uint32_t>{0, 1}));
  int overlapping = 0;
  for (const auto& x : on_two)
    for (const auto& y : on_two)
      if (x.e.slot->index == 0 && y.e.slot->index == 1 && lathe::testing::overlapped(x, y)) ++overlapping;
  EXPECT_GE(overlapping, 1) << "no evaluation on slot 0 overlapped one on slot 1";
  // The same verdicts, the same children and archive: the slots change where, not what.
  EXPECT_EQ(verdicts(stored(dir_ / "two")), verdicts(stored(dir_ / "one")));
  EXPECT_EQ(b["children"], a["children"]);
  EXPECT_EQ(b["failures"], a["failures"]);
  EXPECT_EQ(b["best"], a["best"]);
  EXPECT_EQ(b["archive"], a["archive"]);

  // Stored with the run, with the batch width the slots asked for; a resume keeps them and
  // replays every child (nothing gated again).
  const std::string run = b.value("run", "");
  const run_result shown = run_lathe(ws("two") + "runs show " + run + " --json");
  ASSERT_EQ(shown.code, 0) << shown.err;
  const json args = parse_json(shown)["run"]["args"];
  EXPECT_EQ(args.value("cpu_slots", -1), 2) << args.dump();
  EXPECT_EQ(args.value("in_flight", -1), 2) << args.dump();
  EXPECT_TRUE(args.value("no_time", false)) << args.dump();
  const run_result again = run_lathe(ws("two") + "evolve --resume " + run + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(parse_json(again)["archive"], b["archive"]);
  EXPECT_EQ(stored(dir_ / "two").size(), on_two.size());
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
  r = run_lathe(ws("w") + "decompose silu --proposer rules --cpu-slots 1024");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cpu-slots: "), std::string::npos) << r.err;
  r = run_lathe(ws("w") + "skills admit --task silu --proposer rules --cpu-slots 1024");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cpu-slots: "), std::string::npos) << r.err;
  // A CUDA task's slot is its GPU (refused before anything asks for one, init included).
  for (const char* verb : {"evolve", "optimize", "decompose"}) {
    r = run_lathe(ws("w") + verb + " relu_cuda --proposer rules --cpu-slots 2");
    EXPECT_EQ(r.code, 2) << verb;
    EXPECT_NE(r.err.find("task relu_cuda runs on CUDA, where the GPU is the slot"), std::string::npos) << verb << r.err;
  }
  r = run_lathe(ws("w") + "skills admit --task silu_cuda --proposer rules --cpu-slots 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("task silu_cuda runs on CUDA, where the GPU is the slot"), std::string::npos) << r.err;
  r = run_lathe(ws("w") + "solve '" + src + "/tests/problems/kernelbench_solve/level1' --out '" + (dir_ / "out").string() +
                "' --platform cuda --cpu-slots 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("with --platform cuda the GPU is the slot"), std::string::npos) << r.err;
  // Nothing ran.
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
