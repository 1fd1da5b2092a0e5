// lathe bench as a user runs it, through the real gate: the held-out suite with each task's own
// expert as its candidate (two have one, two have none), and a candidates directory with a
// correct, a wrong and a missing candidate; per-task statuses, the aggregates of docs/bench.md,
// the Markdown table, the run in `lathe runs`.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lathe_cli_json.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

json parse(const run_result& r) { return lathe::testing::parse_json(r); }

// Its own folder under /tmp and lock folder, and ws() (lathe_cli_run.h).
class bench_cli : public lathe::testing::cli_folder_test {};

std::map<std::string, json> by_task(const json& j) {
  std::map<std::string, json> out;
  for (const auto& t : j["tasks"]) out[t.value("task", "")] = t;
  return out;
}

TEST_F(bench_cli, the_held_out_experts_as_candidates) {
  const std::string md = (dir_ / "bench.md").string();
  const run_result r = run_lathe(ws() + "bench heldout --kernel expert --quick --max-time 0.3 --json --markdown '" + md + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j.value("schema", ""), "lathe.bench/1");
  auto t = by_task(j);
  ASSERT_EQ(t.size(), 4u);  // layernorm, row_mean, silu, transpose (no CUDA task without a GPU)
  // Correct; timed, unless the 2-core VM stayed too noisy to decide three times (silu's A/A
  // intervals reach [0.78, 1.29] here): then correct without a figure, outcome unstable.
  std::vector<double> speedups;
  const json& a = j["aggregates"];
  ASSERT_EQ(a["fast_p"].size(), 3u);
  const double p = a["fast_p"][0].value("p", -1.0);
  int decided = 0;  // fast_p counts a gain only when its interval's low end clears p (issue 42)
  for (const char* name : {"layernorm", "silu"}) {
    EXPECT_EQ(t[name].value("status", ""), "correct") << name << ": " << t[name].dump();
    if (t[name]["speedup"].is_number()) {
      EXPECT_EQ(t[name].value("outcome", ""), "ok");
      EXPECT_GT(t[name]["speedup"].get<double>(), 2.0) << name;  // the experts are 5-9x naive here
      speedups.push_back(t[name]["speedup"].get<double>());
      // --quick --max-time 0.3 on the loaded VM: a 2x point estimate may come with an interval
      // reaching below 1 (CI of 739485d: one of two counted).
      if (t[name]["ci"].is_array() && t[name]["ci"][0].get<double>() > p && speedups.back() > p) ++decided;
    } else {
      EXPECT_EQ(t[name].value("outcome", ""), "unstable") << name;
    }
  }
  for (const char* name : {"row_mean", "transpose"}) {
    EXPECT_EQ(t[name].value("status", ""), "no_candidate") << name;
    EXPECT_TRUE(t[name]["speedup"].is_null()) << name;
  }
  EXPECT_EQ(a.value("tasks", 0), 4);
  EXPECT_EQ(a.value("correct", 0), 2);
  EXPECT_EQ(a.value("no_candidate", 0), 2);
  EXPECT_DOUBLE_EQ(a.value("correctness_rate", 0.0), 0.5);
  // The decided gains, over all 4 tasks (KernelBench's denominator).
  EXPECT_DOUBLE_EQ(a["fast_p"][0].value("fraction", 0.0), decided / 4.0) << a["fast_p"][0].dump();
  EXPECT_EQ(a["fast_p"][0].value("count_point_estimate", -1), static_cast<int>(speedups.size()));
  double product = 1, sum = 0;
  for (double x : speedups) product *= x, sum += x;
  if (speedups.empty()) EXPECT_TRUE(a["geomean"].is_null());
  else EXPECT_NEAR(a["geomean"].get<double>(), std::pow(product, 1.0 / speedups.size()), 1e-9);
  EXPECT_NEAR(a["mean_with_failures_as_zero"].get<double>(), sum / 4, 1e-9);
  std::ifstream in(md);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("| row_mean | no_candidate | - | - |"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("fast_1.5"), std::string::npos);
  const run_result listed = run_lathe(ws() + "runs list --kind bench");
  EXPECT_NE(listed.out.find(j.value("run", "?")), std::string::npos) << listed.out;
}

TEST_F(bench_cli, a_candidates_directory_with_a_correct_a_wrong_and_a_missing_candidate) {
  const fs::path src = fs::path(LATHE_SOURCE_DIR) / "tasks";
  const fs::path cand = dir_ / "candidates";
  fs::create_directories(cand);
  fs::copy(src / "layernorm/kernels/naive", cand / "layernorm", fs::copy_options::recursive);
  std::ifstream in(src / "silu/kernels/naive/kernel.cpp");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const auto at = text.find("(1.0f + expf(");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 5, "(2.0f");  // wrong by a constant: the gate, not this test, must notice
  std::ofstream(cand / "silu.cpp") << text;
  const run_result r = run_lathe(ws() + "bench heldout --candidates '" + cand.string() + "' --quick --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto t = by_task(parse(r));
  EXPECT_EQ(t["layernorm"].value("status", ""), "correct");
  EXPECT_EQ(t["silu"].value("status", ""), "failed");
  EXPECT_EQ(t["silu"].value("outcome", ""), "wrong_result");
  EXPECT_EQ(t["transpose"].value("status", ""), "no_candidate");

  for (const char* bad : {"bench heldout", "bench heldout --kernel expert --candidates /tmp",
                          "bench nowhere --kernel expert", "bench heldout --strategy skills --kernel expert",
                          "bench heldout --strategy nonesuch", "bench heldout --kernel expert --protocol x",
                          "bench heldout --kernel expert --runs 2"}) {
    const run_result u = run_lathe(ws() + bad);
    EXPECT_EQ(u.code, 2) << bad << ": " << u.err;
  }
}

}  // namespace

// A directory suite mixing a wrapped PyTorch problem (tests/problems/scale_relu: a baseline kernel)
// with bare problem files (no baseline: skipped and listed). KLineage's protocol: two independent
// runs of the task's own naive kernel, each checked on 3 seeds and timed do_bench-style beside the
// baseline; the held-out group reported on its own.
TEST_F(bench_cli, klineage_protocol_on_a_problem_suite) {
  const std::string suite = std::string(LATHE_SOURCE_DIR) + "/tests/problems";
  const run_result r = run_lathe(ws() + "bench '" + suite + "' --kernel naive --protocol klineage --runs 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j.value("protocol", ""), "klineage");
  ASSERT_EQ(j["tasks"].size(), 2u) << j.dump();  // scale_relu, two runs
  for (const auto& row : j["tasks"]) {
    EXPECT_EQ(row.value("task", ""), "scale_relu");
    EXPECT_EQ(row.value("role", ""), "heldout");
    EXPECT_EQ(row.value("status", ""), "correct") << row.dump();
    ASSERT_TRUE(row["speedup"].is_number());
    // The same kernel as its baseline, timed one after the other (not paired): the CPU VM's
    // noise on a microsecond kernel, nothing more: 0.32 once on a 2-core VM with a build running
    // beside the suite, 11.9 once with a helper's timed tests beside it (issue 42: load must not
    // fail a test); a unit or pairing error would be three orders of magnitude or more.
    EXPECT_GT(row["speedup"].get<double>(), 1.0 / 50);
    EXPECT_LT(row["speedup"].get<double>(), 50.0);
  }
  // The group's figure is the geometric mean of exactly its successful runs.
  const double g = std::sqrt(j["tasks"][0]["speedup"].get<double>() * j["tasks"][1]["speedup"].get<double>());
  EXPECT_EQ(j["tasks"][0].value("attempt", -1), 0);
  EXPECT_EQ(j["tasks"][1].value("attempt", -1), 1);
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0].value("role", ""), "heldout");
  EXPECT_EQ(j["groups"][0].value("runs", 0), 2);
  EXPECT_EQ(j["groups"][0].value("successes", 0), 2);
  EXPECT_EQ(j["groups"][0].value("failures", -1), 0);
  EXPECT_NEAR(j["groups"][0].value("geomean", 0.0), g, 1e-9 * g);
  // The bare problem files have no baseline kernel, and two cannot be imported at all: listed
  // as skipped with why, never counted.
  const std::string skipped = j["skipped"].dump();
  EXPECT_NE(skipped.find("kb_linear_gelu: no baseline kernel"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("kb_bad_init.py: cannot be imported"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("broken on purpose"), std::string::npos) << skipped;
}

// KLineage's protocol on a task whose baseline links a library (gemm: OpenBLAS): the baseline is
// the task's own, trusted, and is timed as such, never screened as a candidate (it once came back
// baseline_forbidden, so no library-baselined task could be benched this way).
TEST_F(bench_cli, klineage_protocol_times_a_library_baseline) {
  const fs::path suite = dir_ / "suite";
  fs::create_directories(suite);
  fs::copy(fs::path(LATHE_SOURCE_DIR) / "tasks/gemm", suite / "gemm", fs::copy_options::recursive);
  const run_result r =
      run_lathe(ws() + "bench '" + suite.string() + "' --kernel expert --protocol klineage --runs 1 --quick --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  ASSERT_EQ(j["tasks"].size(), 1u) << j.dump();
  const json& row = j["tasks"][0];
  EXPECT_EQ(row.value("task", ""), "gemm");
  EXPECT_EQ(row.value("status", ""), "correct") << row.dump();
  EXPECT_EQ(row.value("outcome", "").rfind("baseline_", 0), std::string::npos) << row.dump();
  ASSERT_TRUE(row["speedup"].is_number()) << row.dump();
  EXPECT_GT(row["speedup"].get<double>(), 0.0);
}

// --strategy: every task optimized from its baseline under the budget (the rule engine: these
// are machinery results, not what a model would find); each row names its optimize run, which
// `lathe runs list` shows.
TEST_F(bench_cli, strategy_optimizes_each_task_and_names_its_run) {
  const std::string suite = std::string(LATHE_SOURCE_DIR) + "/tests/problems";
  const run_result r = run_lathe(ws() + "bench '" + suite + "' --strategy none --budget steps=1 --proposer rules "
                                        "--quick --max-time 0.3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  ASSERT_EQ(j["tasks"].size(), 1u) << j.dump();
  const json row = j["tasks"][0];
  EXPECT_EQ(row.value("task", ""), "scale_relu");
  const std::string run = row.value("run", "");
  ASSERT_EQ(run.rfind("optimize-", 0), 0u) << row.dump();
  EXPECT_TRUE(row.value("status", "") == "correct") << row.dump();
  const run_result runs = run_lathe(ws() + "runs list");
  EXPECT_NE(runs.out.find(run), std::string::npos) << runs.out;
}

// KernelBench's layout (issue 24, item 5): a level folder of problem files and a folder of
// candidates named level_<L>_problem_<P>_sample_<S>_kernel.py, two samples per problem, checked
// only (--check-only: no timing, so nothing is fast). Which candidate is right is known by
// construction (each file says), so every aggregate is checked against a count made by hand:
// sample 0 has problems 1 and 2 right, sample 1 only problem 3, the best of both all three.
// A results file that cannot be written is refused before the suite is evaluated (review,
// 2026-12-07: the failure was said only at the end, after every problem ran).
TEST_F(bench_cli, an_unwritable_kernelbench_json_is_refused_before_anything_runs) {
  const fs::path kb = fs::path(LATHE_SOURCE_DIR) / "tests/problems/kernelbench";
  const fs::path results = dir_ / "no_such_folder" / "eval_results.json";
  const run_result r = run_lathe(ws() + "bench '" + (kb / "level1").string() + "' --candidates '" +
                                 (kb / "samples").string() + "' --check-only --kernelbench-json '" +
                                 results.string() + "'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot write " + results.string() + " (--kernelbench-json)"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("correct"), std::string::npos) << r.out;  // no table: nothing was evaluated
}

TEST_F(bench_cli, kernelbench_layout_with_two_samples_per_problem) {
  const fs::path kb = fs::path(LATHE_SOURCE_DIR) / "tests/problems/kernelbench";
  const fs::path results = dir_ / "eval_results.json";
  const run_result r = run_lathe(ws() + "bench '" + (kb / "level1").string() + "' --candidates '" +
                                 (kb / "samples").string() + "' --check-only --kernelbench-json '" +
                                 results.string() + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j.value("layout", ""), "kernelbench");
  EXPECT_EQ(j.value("level", 0), 1);
  ASSERT_EQ(j["samples"].size(), 2u) << j.dump();
  const std::vector<std::vector<std::string>> want = {{"correct", "correct", "failed"},
                                                      {"failed", "failed", "correct"}};
  for (size_t s = 0; s < 2; ++s) {
    const json& run = j["samples"][s];
    EXPECT_EQ(run.value("sample", -1), static_cast<int>(s));
    const json& rows = run["summary"]["tasks"];
    ASSERT_EQ(rows.size(), 3u) << run.dump();
    int correct = 0;
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(rows[p].value("status", ""), want[s][p]) << rows[p].dump();
      correct += want[s][p] == "correct";
    }
    const json& agg = run["summary"]["aggregates"];
    EXPECT_EQ(agg.value("tasks", 0), 3);
    EXPECT_EQ(agg.value("correct", -1), correct);
    EXPECT_DOUBLE_EQ(agg.value("correctness_rate", -1.0), correct / 3.0);
    for (const auto& f : agg["fast_p"]) EXPECT_EQ(f.value("count", -1), 0) << f.dump();  // never timed
  }
  // The failures' outcomes: a wrong value, a parameter it cannot be bound to, a wrong shape.
  EXPECT_EQ(j["samples"][1]["summary"]["tasks"][0].value("outcome", ""), "wrong_result");
  EXPECT_EQ(j["samples"][1]["summary"]["tasks"][1].value("outcome", ""), "load_error");
  EXPECT_EQ(j["samples"][0]["summary"]["tasks"][2].value("outcome", ""), "wrong_result");
  const json& best = j["best_of_samples"];
  EXPECT_EQ(best.value("tasks", 0), 3);
  EXPECT_EQ(best.value("correct", 0), 3);
  EXPECT_DOUBLE_EQ(best.value("correctness_rate", 0.0), 1.0);
  // KernelBench's eval results shape: problem -> sample -> compiled, correctness, runtime.
  std::ifstream in(results);
  const json kbj = json::parse(in);
  ASSERT_TRUE(kbj.contains("1") && kbj.contains("2") && kbj.contains("3")) << kbj.dump();
  EXPECT_TRUE(kbj["1"]["0"].value("correctness", false));
  EXPECT_FALSE(kbj["1"]["1"].value("correctness", true));
  EXPECT_TRUE(kbj["1"]["1"].value("compiled", false));
  EXPECT_FALSE(kbj["3"]["0"].value("correctness", true));
  EXPECT_TRUE(kbj["3"]["1"].value("correctness", false));
  EXPECT_EQ(kbj["2"]["1"]["metadata"].value("outcome", ""), "load_error");
  EXPECT_EQ(kbj["1"]["0"].value("runtime", 0.0), -1.0);  // checked, not timed
  // Rewritten as each problem was decided, each time renamed over the last: nothing else left.
  EXPECT_FALSE(fs::exists(results.string() + ".partial"));
  // Every candidate was built ahead of the suite, in this fresh workspace, and none failed.
  const json& pb = j["prebuild"];
  EXPECT_EQ(pb.value("candidates", 0), 6) << pb.dump();
  EXPECT_EQ(pb.value("built", 0), 6) << pb.dump();
  EXPECT_EQ(pb.value("failed", -1), 0) << pb.dump();
  EXPECT_GE(pb.value("parallel", 0), 1);
  // The cache is shared by content: a suite holding two of the same candidates (another folder)
  // builds nothing again.
  const fs::path again = dir_ / "again", level1 = again / "level1", samples = again / "samples";
  fs::create_directories(level1);
  fs::create_directories(samples);
  fs::copy(kb / "level1/1_Leaky_ReLU.py", level1 / "1_Leaky_ReLU.py");
  for (const char* f : {"level_1_problem_1_sample_0_kernel.py", "level_1_problem_1_sample_1_kernel.py"})
    fs::copy(kb / "samples" / f, samples / f);
  const run_result second = run_lathe(ws() + "bench '" + level1.string() + "' --candidates '" + samples.string() +
                                      "' --check-only --json");
  ASSERT_EQ(second.code, 0) << second.err;
  const json j2 = parse(second);
  const json& pb2 = j2["prebuild"];
  EXPECT_EQ(pb2.value("candidates", 0), 2) << pb2.dump();
  EXPECT_EQ(pb2.value("cached", 0), 2) << pb2.dump();

}

// --in-flight 2 (issue 46, item 1's first step): the layout's suite with two evaluations at once
// gives the verdicts the one-at-a-time run gives (kernelbench_layout_with_two_samples_per_problem,
// known by construction), rows in the suite's order; refused where the candidates are not given.
TEST_F(bench_cli, in_flight_evaluations_give_the_same_verdicts_in_the_same_order) {
  const fs::path kb = fs::path(LATHE_SOURCE_DIR) / "tests/problems/kernelbench";
  const run_result wide = run_lathe(ws() + "bench '" + (kb / "level1").string() + "' --candidates '" +
                                    (kb / "samples").string() + "' --check-only --in-flight 2 --json");
  ASSERT_EQ(wide.code, 0) << wide.err;
  const json jw = parse(wide);
  ASSERT_EQ(jw["samples"].size(), 2u) << jw.dump();
  const std::vector<std::vector<std::string>> want = {{"correct", "correct", "wrong_result"},
                                                      {"wrong_result", "load_error", "correct"}};
  std::set<int64_t> ids;
  for (size_t s = 0; s < 2; ++s) {
    const json& rows = jw["samples"][s]["summary"]["tasks"];
    ASSERT_EQ(rows.size(), 3u) << rows.dump();
    for (size_t p = 0; p < 3; ++p) {
      const std::string& w = want[s][p];
      EXPECT_EQ(rows[p].value("status", ""), w == "correct" ? "correct" : "failed") << rows[p].dump();
      if (w != "correct") EXPECT_EQ(rows[p].value("outcome", ""), w) << rows[p].dump();
      if (p > 0) EXPECT_LT(rows[p - 1].value("task", ""), rows[p].value("task", ""));  // the suite's order
      // Every evaluation stored (each lane writes through a connection of its own), each once.
      const int64_t id = rows[p].value("evaluation", int64_t{0});
      EXPECT_GT(id, 0) << rows[p].dump();
      EXPECT_TRUE(ids.insert(id).second) << rows[p].dump();
    }
  }
  const run_result mixed = run_lathe(ws() + "bench '" + (kb / "level1").string() + "' --strategy none --in-flight 2");
  EXPECT_EQ(mixed.code, 2);
  EXPECT_NE(mixed.err.find("--in-flight gates given candidates at once"), std::string::npos) << mixed.err;
}

// --in-flight 2 loads the suite two problems at a time (issue 46: one after another, a 19-problem
// suite spent 51 s importing before its first evaluation); that two loads overlap is
// tests/cli/bench_load_test.cpp's (a problem's own code runs in the sandbox since 226c1f6 and can
// no longer meet its partner through a file, as this test's problems once did). Here: both
// problems of a suite loaded two at a time, each once, in the suite's order.
TEST_F(bench_cli, in_flight_problems_are_loaded_each_once_in_the_suites_order) {
  const fs::path suite = dir_ / "meet", cands = dir_ / "none";
  fs::create_directories(suite);
  fs::create_directories(cands);
  for (const char* me : {"a", "b"}) {
    std::ofstream(suite / (std::string(me) + "_meet.py"))
        << "import torch\nimport torch.nn as nn\n\n"
           "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n\n"
           "def get_inputs():\n    return [torch.randn(8, 16)]\n\n"
           "def get_init_inputs():\n    return []\n";
  }
  const run_result r = run_lathe(ws() + "bench '" + suite.string() + "' --candidates '" + cands.string() +
                                 "' --check-only --in-flight 2 --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const json j = parse(r);
  EXPECT_TRUE(j["skipped"].empty()) << j["skipped"].dump();
  ASSERT_EQ(j["tasks"].size(), 2u) << j.dump();
  EXPECT_EQ(j["tasks"][0].value("task", ""), "a_meet");  // the suite's order
  EXPECT_EQ(j["tasks"][1].value("task", ""), "b_meet");
  for (const auto& t : j["tasks"]) EXPECT_EQ(t.value("status", ""), "no_candidate") << t.dump();
}
