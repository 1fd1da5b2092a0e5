// lathe evolve, score and export training from the command line through the real gate (the rule
// engine as proposer: machinery, not what a model would find). A small evolve run on the wrapped
// problem task, its resume, its export (not training-grade, said so); the reward service on a
// group with a correct, a faster and a wrong candidate.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lathe_cli_json.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::parse_json;
using lathe::testing::run_lathe;
using lathe::testing::run_result;

class evolve_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-evolve-cli-XXXXXX";
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

const std::string src = LATHE_SOURCE_DIR;

TEST_F(evolve_cli, a_small_run_its_resume_and_its_export) {
  const std::string task = src + "/tests/problems/scale_relu";
  run_result r = run_lathe(ws() + "evolve '" + task + "' --proposer rules --generations 2 --islands 2 "
                                  "--population 1 --children 2 --in-flight 2 --migrate-every 1 --quick --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse_json(r);
  EXPECT_EQ(j.value("schema", ""), "lathe.evolve/1");
  const std::string run = j.value("run", "");
  ASSERT_EQ(run.rfind("evolve-", 0), 0u);
  EXPECT_EQ(j["best_per_generation"].size(), 2u);
  EXPECT_GE(j["archive"].size(), 2u);  // the start kernel on each island at least
  EXPECT_GE(j.value("evaluations", 0), 1);
  // Two children per island per generation, gated two at a time, and the migrations.
  EXPECT_GE(j.value("children", 0), 8);
  // Resumed after it finished: every child replayed, nothing new.
  r = run_lathe(ws() + "evolve '" + task + "' --proposer rules --generations 2 --islands 2 --population 1 "
                       "--children 2 --in-flight 2 --migrate-every 1 --quick --max-time 0.3 --json --resume " + run);
  ASSERT_EQ(r.code, 0) << r.err;
  const json again = parse_json(r);
  EXPECT_EQ(again["children"], j["children"]);
  EXPECT_EQ(again["best"], j["best"]);
  EXPECT_EQ(again["archive"].size(), j["archive"].size());
  // The export: JSONL samples (possibly none: the rule engine may find nothing faster), the
  // summary on stderr, the rule engine's run marked as not training-grade.
  const std::string out = (dir_ / "train.jsonl").string();
  r = run_lathe(ws() + "export training " + run + " -o '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json summary = json::parse(r.err.substr(0, r.err.find('\n')));
  EXPECT_EQ(summary.value("schema", ""), "lathe.export/1");
  EXPECT_GE(summary.value("steps", 0), 8);
  EXPECT_NE(r.err.find("training_grade=false"), std::string::npos) << r.err;
  std::ifstream in(out);
  ASSERT_TRUE(in.good());
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const json s = json::parse(line);
    EXPECT_EQ(s["messages"].size(), 3u);
    EXPECT_FALSE(s["provenance"]["training_grade"].get<bool>());
    EXPECT_EQ(s["provenance"]["run"], run);
  }
  EXPECT_EQ(lines, summary.value("samples", -1));
  // Usage errors.
  EXPECT_EQ(run_lathe(ws() + "export training nonesuch").code, 2);
  EXPECT_EQ(run_lathe(ws() + "evolve '" + task + "' --descriptors colour:1").code, 2);
  EXPECT_EQ(run_lathe(ws() + "evolve '" + task + "' --child-timing slow").code, 2);
  // The cascade is the default: children are first timed cheaply (contests in full).
  const run_result help = run_lathe("evolve --help");
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("--child-timing TEXT:{full,quick}=quick"), std::string::npos) << help.out;
}

TEST_F(evolve_cli, score_rewards_a_group_against_one_parent) {
  const std::string task = src + "/tests/problems/scale_relu";
  const fs::path wrong = dir_ / "wrong.cpp";
  std::ofstream(wrong) << "#include <lathe/abi.h>\nextern \"C\" int lathe_launch(const lathe_args* a) {\n"
                          "  float* y = (float*)a->outputs[0].data;\n  const float* x = (const float*)a->inputs[0].data;\n"
                          "  for (long i = 0; i < a->inputs[0].shape[0] * a->inputs[0].shape[1]; ++i) y[i] = x[i];\n"
                          "  return 0;\n}\n";
  const run_result r = run_lathe(ws() + "score '" + task + "' naive '" + src +
                                 "/tests/problems/candidates/scale_relu_ok.cpp' '" + wrong.string() +
                                 "' --quick --max-time 0.3");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse_json(r);
  EXPECT_EQ(j.value("schema", ""), "lathe.score/1");
  ASSERT_EQ(j["candidates"].size(), 2u);
  const json ok = j["candidates"][0], bad = j["candidates"][1];
  EXPECT_TRUE(ok["correct"].get<bool>()) << ok.dump();
  if (ok["decided"].get<bool>()) {
    // The same loop as the parent: near 1, whenever the gate's A/A control could decide.
    EXPECT_GT(ok["reward"].get<double>(), 0.3) << ok.dump();
    EXPECT_LT(ok["reward"].get<double>(), 3.0) << ok.dump();
  } else {
    // Too noisy to decide (a 2 us kernel on a loaded 2-core VM): the ratio is still the reward.
    EXPECT_EQ(ok["outcome"], "unstable") << ok.dump();
    EXPECT_GT(ok["reward"].get<double>(), 0.0) << ok.dump();
  }
  EXPECT_FALSE(bad["correct"].get<bool>());
  EXPECT_EQ(bad["outcome"], "wrong_result");
  EXPECT_EQ(bad["reward"].get<double>(), 0.0);
  // Advantages: standardized within the group.
  EXPECT_NEAR(ok["advantage"].get<double>() + bad["advantage"].get<double>(), 0.0, 1e-9);
  EXPECT_GT(ok["advantage"].get<double>(), 0.0);
  EXPECT_EQ(j["group"]["size"], 2);
}

}  // namespace
