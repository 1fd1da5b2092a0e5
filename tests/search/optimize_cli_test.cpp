// lathe optimize as a user runs it, through the real gate: exit codes, the lathe.optimize/1 JSON,
// the best bundle on disk, the run in `lathe runs`, a finished run resumed (nothing evaluated
// again), and the usage errors. The rule engine proposes (offline), on the shipped layernorm task.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lathe_cli_json.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

json parse(const run_result& r) { return lathe::testing::parse_json(r); }

class optimize_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-optimize-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string ws() const { return "--workspace '" + (dir_ / "ws").string() + "' "; }
  fs::path dir_;
};

TEST_F(optimize_cli, help_and_usage_errors) {
  const run_result help = run_lathe("optimize --help");
  EXPECT_EQ(help.code, 0);
  for (const char* word : {"--strategy", "forward-memory", "expert-source", "--budget", "steps=N", "--ablate",
                           "intent-only", "no-lineage-order", "--resume", "--json", "--quiet"})
    EXPECT_NE(help.out.find(word), std::string::npos) << word;
  struct bad {
    const char* args;
    const char* says;
  };
  for (const bad& b : {bad{"optimize layernorm naive --strategy greedy", "unknown strategy"},
                       bad{"optimize layernorm naive --strategy none --ablate intent-only", "--strategy skills"},
                       bad{"optimize layernorm naive --ablate no-cards", "unknown ablation"},
                       bad{"optimize layernorm naive --budget gpus=2", "unknown budget item"},
                       bad{"optimize --resume optimize-nope", "no run 'optimize-nope'"},
                       bad{"optimize", "needs a TASK"}}) {
    const run_result r = run_lathe(ws() + b.args);
    EXPECT_EQ(r.code, 2) << b.args;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << b.args << ": " << r.err;
  }
}

TEST_F(optimize_cli, a_rules_run_prints_its_result_writes_the_best_bundle_and_resumes_without_new_work) {
  const run_result r = run_lathe(ws() + "optimize layernorm naive --strategy none --proposer rules "
                                        "--budget steps=2 --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j.value("schema", ""), "lathe.optimize/1");
  EXPECT_EQ(j.value("task", ""), "layernorm");
  EXPECT_EQ(j.value("strategy", ""), "none");
  EXPECT_NE(j.value("proposer", "").find("rule-engine"), std::string::npos);  // labelled
  EXPECT_EQ(j["start"].value("how", ""), "given");
  EXPECT_LE(j["used"].value("steps", 99), 2);
  EXPECT_TRUE(j.value("stop", "") == "steps" || j.value("stop", "") == "exhausted") << j.value("stop", "");
  const fs::path best = j["best"].value("dir", "");
  EXPECT_TRUE(fs::exists(best / "kernel.toml")) << best;
  // Every accepted step carries two evaluations (first series, re-measure) and its provenance;
  // a best other than the start has its fresh final figure.
  for (const auto& s : j["steps"]) {
    EXPECT_EQ(s["transition"]["evaluations"].size(), 2u);
    EXPECT_EQ(s["transition"]["provenance"].value("kind", ""), "rules");
  }
  if (!j["steps"].empty()) EXPECT_TRUE(j["best_vs_start"].is_number());
  else EXPECT_TRUE(j["best_vs_start"].is_null());
  // layernorm ships an expert (for this measure only): measured against the start at the end,
  // and the gap recovered follows from the two figures.
  ASSERT_TRUE(j["expert_vs_start"].is_number()) << j.dump(2).substr(0, 2000);
  EXPECT_GT(j["expert_vs_start"].get<double>(), 1.5);
  ASSERT_TRUE(j["gap_recovered"].is_number());
  const double best_ratio = j["best_vs_start"].is_number() ? j["best_vs_start"].get<double>() : 1.0;
  EXPECT_NEAR(j["gap_recovered"].get<double>(), std::log(best_ratio) / std::log(j["expert_vs_start"].get<double>()), 1e-9);
  EXPECT_EQ(j["final_evaluations"].size(), j["steps"].empty() ? 1u : 2u);
  const std::string run = j.value("run", "");

  const run_result listed = run_lathe(ws() + "runs list --kind optimize");
  EXPECT_EQ(listed.code, 0);
  EXPECT_NE(listed.out.find(run), std::string::npos);
  EXPECT_NE(listed.out.find("[rules, mechanical]"), std::string::npos) << listed.out;

  auto events_of = [&] {
    const json shown = parse(run_lathe(ws() + "runs show " + run + " --json"));
    int evaluations = 0, finished = 0;
    for (const auto& e : shown["events"]) {
      evaluations += e.value("kind", "") == "evaluation";
      finished += e.value("kind", "") == "finished";
    }
    return std::make_pair(evaluations, finished);
  };
  const auto before = events_of();
  EXPECT_GE(before.first, 1);  // the start kernel's check at least
  EXPECT_EQ(before.second, 1);
  // Resumed once finished: the run retraces its events and ends where it ended, evaluating nothing.
  const run_result again = run_lathe(ws() + "optimize --resume " + run + " --json");
  ASSERT_EQ(again.code, 0) << again.err;
  const json k = parse(again);
  EXPECT_TRUE(k.value("resumed", false));
  EXPECT_EQ(k["best"].value("hash", ""), j["best"].value("hash", ""));
  EXPECT_EQ(k["steps"].size(), j["steps"].size());
  EXPECT_EQ(events_of(), before);
}

TEST_F(optimize_cli, without_a_kernel_the_rule_engine_starts_from_the_naive_one_and_says_why) {
  const run_result r = run_lathe(ws() + "optimize silu --strategy skills --no-free --no-expert --proposer rules "
                                        "--budget steps=1 --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  const std::string how = j["start"].value("how", "");
  EXPECT_EQ(how.rfind("naive (", 0), 0u) << how;
  EXPECT_NE(how.find("cannot seed"), std::string::npos) << how;
  // An empty library and no free mutations: nothing to try.
  EXPECT_EQ(j.value("stop", ""), "exhausted");
  EXPECT_NE(j.value("stop_detail", "").find("no retrieved card"), std::string::npos) << j.value("stop_detail", "");
}

}  // namespace
