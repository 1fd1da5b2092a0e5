// lathe optimize as a user runs it, through the real gate: exit codes, the lathe.optimize/1 JSON,
// the best bundle on disk, the run in `lathe runs`, a finished run resumed (nothing evaluated
// again), and the usage errors. The rule engine proposes (offline), on the shipped layernorm task.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "lathe_cli_json.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

json parse(const run_result& r) { return lathe::testing::parse_json(r); }

// Its own folder under /tmp and lock folder, and ws() (lathe_cli_run.h).
class optimize_cli : public lathe::testing::cli_folder_test {};

// A bare KernelBench problem is optimized in modelnew (issue 44): the run starts from the
// problem's own Model as a ModelNew (eager PyTorch) and says so; the rule engine has no rule for
// Python, so nothing is accepted, and the best written out is that ModelNew.
TEST_F(optimize_cli, a_bare_kernelbench_problem_starts_from_its_own_model_as_a_modelnew) {
  const std::string task = std::string(LATHE_SOURCE_DIR) + "/tests/problems/kb_scale_relu.py";
  const run_result r = run_lathe(ws() + "optimize '" + task + "' --proposer rules --budget steps=1 --quick "
                                        "--max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j["start"].value("name", ""), "eager");
  EXPECT_TRUE(j["steps"].empty());
  const json shown = parse(run_lathe(ws() + "runs show " + j.value("run", "") + " --json"));
  EXPECT_EQ(shown["run"]["args"].value("language", ""), "modelnew");
  // The platform decided (no --platform, no CUDA kernel: the CPU) is stored, and a resume that
  // names another is refused instead of going on where the run did not begin.
  EXPECT_EQ(shown["run"]["args"].value("platform", ""), "cpu");
  const run_result moved = run_lathe(ws() + "optimize --resume " + j.value("run", "") + " --platform cuda");
  EXPECT_EQ(moved.code, 2);
  EXPECT_NE(moved.err.find("runs its problem on cpu; --platform cuda conflicts"), std::string::npos) << moved.err;
  const fs::path best = dir_ / "ws" / ".lathe" / "runs" / j.value("run", "") / "best" / "eager.py";
  std::ifstream in(best);
  ASSERT_TRUE(in.good()) << best;
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("class ModelNew(Model):"), std::string::npos) << text;
  const run_result python = run_lathe(ws() + "optimize '" + task + "' --language python");
  EXPECT_EQ(python.code, 2);
  EXPECT_NE(python.err.find("C-ABI kernels or ModelNew files"), std::string::npos) << python.err;
}

// The mock model on a bare KernelBench problem (issue 44), with a card from another language
// (item 3): a card mined from a C-ABI lineage (stored before cards recorded their evidence's
// language: tests/data/cards) is retrieved for the problem by its Model's operator family (a
// Linear, then GELU: a gemm problem whose epilogue is elementwise, the card's silu) and
// materialized inside the ModelNew's inline extension: the mock keeps the Linear, fuses the GELU
// in a load_inline extension and carries the card's technique (an OpenMP parallel for, nothing
// else) into its loop; the real gate builds, checks and times it against the eager start.
// Mechanical, not a model's work. Whether it is decided faster depends on the machine's noise (the
// Python path's timing, issue 44 item 5), so the test asserts what the gate established in any
// case: the proposal was a ModelNew that compiled and computed correctly. (The mock's mutate
// answer goes through the gate in solve_cli_test.)
TEST_F(optimize_cli, the_mock_carries_a_c_abi_card_into_a_modelnew_that_the_gate_builds_and_checks) {
  fs::create_directories(dir_ / "ws/.lathe");
  std::ofstream(dir_ / "ws/.lathe/lathe.toml") << "provider = \"command\"\nmodel = \"lathe-mock-model\"\n"
                                                  "[command]\nargv = [\"" << LATHE_MOCK_MODEL << "\", \"--seed\", \"5\"]\n";
  const std::string fixture = std::string(LATHE_SOURCE_DIR) + "/tests/data/cards/c_abi_omp_card.json";
  const run_result imported = run_lathe(ws() + "skills import '" + fixture + "'");
  ASSERT_EQ(imported.code, 0) << imported.err;
  const json card = parse(run_lathe(ws() + "skills show omp-parallel-loop --json"));
  ASSERT_TRUE(card.contains("card")) << card.dump();
  EXPECT_EQ(card["card"].value("evidence_language", ""), "c-abi");  // absent from the record: c-abi
  EXPECT_EQ(card["card"].value("status", ""), "admitted");

  const std::string task = std::string(LATHE_SOURCE_DIR) + "/tests/problems/kb_linear_gelu.py";
  const run_result r = run_lathe(ws() + "optimize '" + task + "' --proposer llm --strategy skills --budget steps=1 "
                                        "--quick --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j["start"].value("name", ""), "eager");
  const json shown = parse(run_lathe(ws() + "runs show " + j.value("run", "") + " --json"));
  EXPECT_EQ(shown["run"]["args"].value("language", ""), "modelnew");
  json proposal;
  for (const auto& e : shown["events"])
    if (e.value("kind", "") == "proposal") proposal = e["body"];
  ASSERT_FALSE(proposal.is_null()) << shown.dump();
  EXPECT_EQ(proposal.value("op", ""), "materialize") << proposal.dump();
  EXPECT_EQ(proposal.value("source", ""), "card:omp-parallel-loop") << proposal.dump();
  EXPECT_EQ(proposal["cards"], json::array({"5c1d0e7a9b3f2a61"})) << proposal.dump();
  EXPECT_EQ(proposal["adds"], json::array({"omp_parallel"})) << proposal.dump();
  const std::string edits = proposal.value("edits", "");
  EXPECT_NE(edits.find("load_inline"), std::string::npos) << edits;
  EXPECT_NE(edits.find("// Carries card 5c1d0e7a9b3f2a61 (omp_parallel) into this extension's loop."), std::string::npos)
      << edits;
  EXPECT_NE(edits.find("#pragma omp parallel for schedule(static)"), std::string::npos) << edits;
  EXPECT_NE(edits.find("return _lathe_mock_ext.fused_forward(self.fc(x))"), std::string::npos) << edits;
  EXPECT_EQ(edits.find("__restrict__"), std::string::npos) << edits;  // only the card's technique
  EXPECT_EQ(edits.find("lathe_launch"), std::string::npos) << edits;
  // The gate built the extension and checked what it computes.
  int checked = 0;
  for (const auto& e : shown["events"]) {
    if (e.value("kind", "") != "evaluation" || e["body"].value("kernel", "") != proposal.value("kernel", "")) continue;
    const std::string oc = e["body"].value("outcome", "");
    EXPECT_TRUE(oc == "ok" || oc == "unstable") << e.dump();
    checked += oc == "ok" || oc == "unstable";
  }
  EXPECT_GE(checked, 1) << shown.dump();
  for (const auto& st : j["steps"]) EXPECT_EQ(st.value("source", ""), "card:omp-parallel-loop") << st.dump();
  if (!j["steps"].empty()) {  // decided faster: the best written out is the mock's ModelNew
    const fs::path best = dir_ / "ws" / ".lathe" / "runs" / j.value("run", "") / "best" / "eager.py";
    std::ifstream in(best);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(text.find("load_inline"), std::string::npos) << text;
    EXPECT_NE(text.find("class ModelNew(nn.Module)"), std::string::npos) << text;
  }

  // The same card tried on the problem as admission ground: the trial starts from the problem's
  // own Model, the card is carried into the same extension (the same kernel: its build is cached),
  // and the trial records the language it was tried in. One task of the two needed: not admitted.
  const run_result admitted = run_lathe(ws() + "skills admit --card omp-parallel-loop --all --task '" + task +
                                        "' --proposer llm --quick --max-time 0.3 --json");
  const json a = parse(admitted);
  ASSERT_EQ(a["platforms"].size(), 1u) << a.dump();
  EXPECT_TRUE(a["platforms"][0]["refused_ground"].empty()) << a.dump();
  const json& trials = a["platforms"][0]["cards"][0]["trials"];
  ASSERT_EQ(trials.size(), 1u) << a.dump();
  EXPECT_EQ(trials[0].value("task", ""), "kb_linear_gelu");
  EXPECT_EQ(trials[0].value("language", ""), "modelnew") << trials[0].dump();
  EXPECT_EQ(trials[0].value("kernel_before", ""), j["start"].value("hash", "")) << trials[0].dump();
  EXPECT_EQ(trials[0].value("kernel_after", ""), proposal.value("kernel", "")) << trials[0].dump();
  const std::string oc = trials[0].value("outcome", "");
  EXPECT_TRUE(oc == "ok" || oc == "unstable") << trials[0].dump();
  EXPECT_EQ(a["platforms"][0]["cards"][0].value("status", ""), "refused") << a.dump();
  const json after = parse(run_lathe(ws() + "skills show omp-parallel-loop --json"));
  ASSERT_FALSE(after["card"]["trials"].empty()) << after.dump();
  EXPECT_EQ(after["card"]["trials"].back().value("language", ""), "modelnew") << after.dump();
  EXPECT_EQ(after["card"]["trials"].front().value("language", ""), "c-abi") << after.dump();  // the imported ones
}

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

// Batch mode (issue 23, item 7): the model answers where it is reachable, the gate runs where
// the GPU is. Here both on this machine: the run writes its prompt and stops, interrupted; the
// mock model (run as a command provider would run it) answers the file; --gate-batch gates the
// answer and ends the run on its budget.
TEST_F(optimize_cli, a_batch_round_trip_through_a_folder) {
  const fs::path q = dir_ / "batch";
  // Without a model in lathe.toml there is nobody to credit the answers to.
  const run_result none = run_lathe(ws() + "optimize silu naive --strategy none --propose-only '" + q.string() + "'");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("needs the model that answers named in lathe.toml"), std::string::npos) << none.err;
  fs::create_directories(dir_ / "ws/.lathe");
  std::ofstream(dir_ / "ws/.lathe/lathe.toml") << "provider = \"command\"\nmodel = \"mock\"\n[command]\nargv = [\"true\"]\n";
  const run_result first = run_lathe(ws() + "optimize silu naive --strategy none --budget steps=1 --max-time 0.3 --no-expert "
                                            "--propose-only '" + q.string() + "' --json");
  ASSERT_EQ(first.code, 0) << first.err;
  const json w = parse(first);
  EXPECT_EQ(w.value("stop", ""), "waiting") << w.dump();
  ASSERT_EQ(w["waiting"].size(), 1u) << w.dump();
  const std::string prompt = w["waiting"][0].get<std::string>();
  const std::string stem = prompt.substr(0, prompt.size() - std::string(".prompt").size());
  EXPECT_EQ(stem.rfind("mutate.v3.", 0), 0u) << stem;
  EXPECT_NE(stem.find(".t0.6-p0.95-m16384."), std::string::npos) << stem;  // mutate's sampling
  ASSERT_TRUE(fs::exists(q / (stem + ".bundle/kernel.cpp")));
  std::ifstream pin(q / prompt);
  const std::string prompt_text((std::istreambuf_iterator<char>(pin)), std::istreambuf_iterator<char>());
  EXPECT_NE(prompt_text.find("lathe-operation: mutate"), std::string::npos) << prompt_text.substr(0, 300);
  const run_result listed = run_lathe(ws() + "runs list");
  EXPECT_NE(listed.out.find("interrupted"), std::string::npos) << listed.out;
  // The answers, written elsewhere by the model; a candidate the gate refuses is sent back for
  // repair, so a run may wait more than once before its budget ends it.
  auto answer = [&](const json& waiting) {
    for (const auto& name : waiting) {
      const std::string p = name.get<std::string>(), s = p.substr(0, p.size() - std::string(".prompt").size());
      const std::string cmd = "cd '" + (q / (s + ".bundle")).string() + "' && '" + LATHE_MOCK_MODEL + "' < '" +
                              (q / p).string() + "' > '" + (q / (s + ".reply")).string() + "' 2>/dev/null";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  };
  answer(w["waiting"]);
  json j;
  int rounds = 1;
  for (;; ++rounds) {
    const run_result next = run_lathe(ws() + "optimize --gate-batch '" + q.string() + "' --json");
    ASSERT_EQ(next.code, 0) << next.err;
    j = parse(next);
    if (j.value("stop", "") != "waiting" || rounds >= 5) break;
    answer(j["waiting"]);
  }
  std::printf("batch round trip: %d answered round(s), stop %s\n", rounds, j.value("stop", "").c_str());
  EXPECT_EQ(j.value("run", ""), w.value("run", "")) << "the folder names its run";
  EXPECT_EQ(j.value("stop", ""), "steps") << j.dump();
  EXPECT_GE(j.value("proposals", 0), 1);
  EXPECT_GE(j.value("evaluations", 0), 2);  // the start, the answer's candidate (and finals)
  EXPECT_NE(j.value("proposer", "").find("command/mock"), std::string::npos) << j.value("proposer", "");
  const run_result both = run_lathe(ws() + "optimize --gate-batch '" + q.string() + "' --propose-only '" + q.string() + "'");
  EXPECT_EQ(both.code, 2);
}
