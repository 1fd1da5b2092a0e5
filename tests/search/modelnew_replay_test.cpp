// A real model's ModelNew run, replayed (issue 44, item 6): the calls of `lathe optimize` on two
// KernelBench-format problems (a level-1 Swish and a level-2 Linear + elementwise chain + row sum),
// made by a model reached through files (tests/data/modelnew_run/README.md says which model and
// how) and kept as cassettes, answered again through the real proposer and the real gate. The
// candidates the replies make (their content hashes: the replies' edits, applied to the problem's
// Model as a ModelNew) must come out as recorded and pass the gate's checks; a step the recording
// accepted by far (16-19x when recorded; ~3x on this VM since eager PyTorch in the worker got
// about 5x faster, 045643a) must be accepted again. One changed reply character must break that.
//
// Each part is its own ctest test (tests/search/CMakeLists.txt), each in its own workspace.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lathe_cli_json.h"
#include "replay_cassettes.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;
using lathe::testing::unanswered;
using lathe::testing::read_text;

const fs::path data_dir = fs::path(LATHE_SOURCE_DIR) / "tests/data/modelnew_run";


json expected() { return json::parse(read_text(data_dir / "expected.json")); }

// Outcomes of a candidate that was built and computed correctly (its speed aside).
bool correct(const std::string& oc) { return oc == "ok" || oc == "unstable" || oc == "suspicious_speed"; }

class modelnew_replay : public ::testing::Test {
 protected:
  // A workspace answering from a copy of the cassettes (provider "replay", templates pinned).
  fs::path workspace(const std::string& name) {
    const fs::path ws = fs::path(LATHE_BINARY_DIR) / "modelnew-replay" / name;
    lathe::testing::make_replay_workspace(data_dir, ws);
    setenv("LATHE_LOCK_DIR", (ws / "locks").c_str(), 1);
    return ws;
  }
  static std::string lathe_in(const fs::path& ws) { return "--workspace '" + (ws / ".lathe").string() + "' "; }
  // `gate`: the gate's options beyond the recording's (--no-time where the test decides nothing).
  run_result optimize(const fs::path& ws, const json& problem, const std::string& budget, const std::string& gate = "") {
    const std::string file = (data_dir / "problems" / problem.at("file").get<std::string>()).string();
    return run_lathe(lathe_in(ws) + "optimize '" + file + "' " + problem.at("args").get<std::string>() + " " +
                     budget + gate + " --json --quiet");
  }
  // The newest optimize run's candidate evaluations, in order: (kernel hash, outcome).
  std::vector<std::pair<std::string, std::string>> candidates(const fs::path& ws, const std::string& run) {
    const run_result shown = run_lathe(lathe_in(ws) + "runs show " + run + " --json");
    std::vector<std::pair<std::string, std::string>> out;
    if (shown.code != 0) return out;
    for (const auto& e : lathe::testing::parse_json(shown).value("events", json::array())) {
      if (e.value("kind", "") != "evaluation") continue;
      const json& b = e.at("body");
      if (b.value("purpose", "") != "candidate") continue;
      out.emplace_back(b.value("kernel", ""), b.value("outcome", ""));
    }
    return out;
  }
  // The first difference between a replayed run and the recording, in words; empty when it
  // reproduced it: the candidates gated (each distinct kernel once, in order), every one built
  // and correct, the accepted steps (those decided by far must be accepted again; none that the
  // recording did not accept), the number of proposals.
  std::string differs(const fs::path& ws, const run_result& r, const json& want) {
    if (r.code != 0) return "exit " + std::to_string(r.code) + ": " + r.err.substr(0, 2000);
    if (unanswered(r)) return "a call the cassettes could not answer: " + r.err.substr(0, 2000);
    const json got = lathe::testing::parse_json(r);
    std::vector<std::string> hashes;
    for (const auto& [kernel, oc] : candidates(ws, got.value("run", ""))) {
      if (!correct(oc)) return "candidate " + kernel + " failed the gate: " + oc;
      if (std::find(hashes.begin(), hashes.end(), kernel) == hashes.end()) hashes.push_back(kernel);
    }
    if (hashes != want.at("candidates").get<std::vector<std::string>>())
      return "the candidates are not the recorded ones: " + json(hashes).dump();
    std::vector<std::string> steps;
    for (const auto& s : got.value("steps", json::array()))
      steps.push_back(s.value("transition", json::object()).value("to", ""));
    const auto decided = want.at("decided_steps").get<std::vector<std::string>>();
    const auto recorded = want.at("recorded_steps").get<std::vector<std::string>>();
    if (steps.size() < decided.size() || !std::equal(decided.begin(), decided.end(), steps.begin()) ||
        steps.size() > recorded.size() || !std::equal(steps.begin(), steps.end(), recorded.begin()))
      return "the accepted steps are not the recorded ones: " + json(steps).dump();
    if (got.value("proposals", -1) != want.at("proposals").get<int>())
      return "another number of proposals: " + std::to_string(got.value("proposals", -1));
    return {};
  }
  // True when the newest run gated every decided step's kernel correct but the gate declined to
  // accept it (unstable, or a series read but not decided faster): the machine's noise, after
  // which the run asks what the recording never asked (the same prompt again), not a replay that
  // diverged.
  bool declined_by_noise(const fs::path& ws, const json& want) {
    const run_result runs = run_lathe(lathe_in(ws) + "runs list --json");
    if (runs.code != 0) return false;
    std::string run;
    for (const auto& r : lathe::testing::parse_json(runs).value("runs", json::array()))
      if (r.value("kind", "") == "optimize") {
        run = r.value("id", "");
        break;
      }
    const auto gated = candidates(ws, run);
    for (const auto& step : want.at("decided_steps")) {
      const auto it = std::find_if(gated.begin(), gated.end(), [&](const auto& c) { return c.first == step; });
      if (it == gated.end() || !correct(it->second)) return false;
    }
    return !want.at("decided_steps").empty();
  }
  // One problem of the recording, replayed; once more when the first replay's difference was the
  // gate declining for the machine's noise (a step accepted by far when recorded, left undecided
  // on a loaded host); skipped, saying so, when the second is declined too. `gate`: as optimize's.
  void replay(const std::string& name, const std::string& gate = "") {
    const json want = expected();
    const json& problem = want.at("problems").at(name);
    const std::string budget = problem.at("budget").get<std::string>();
    std::string diff;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const fs::path ws = workspace(name + (attempt ? "-again" : ""));
      const run_result r = optimize(ws, problem, budget, gate);
      ASSERT_EQ(r.err.find("stale cassette"), std::string::npos)
          << "a prompt template changed: record tests/data/modelnew_run again (its README)\n" << r.err;
      diff = differs(ws, r, problem);
      if (diff.empty()) {
        EXPECT_NE(lathe::testing::parse_json(r).value("proposer", "").find("model results"), std::string::npos);
        return;
      }
      if (!declined_by_noise(ws, problem)) break;
      std::fprintf(stderr, "replay %d of %s: the gate declined a recorded step for noise (%s)\n", attempt + 1,
                   name.c_str(), diff.substr(0, 300).c_str());
      if (attempt == 1) GTEST_SKIP() << "the machine was too noisy to accept the recorded step twice: " << diff;
    }
    EXPECT_EQ(diff, "");
  }
};

// The level-1 problem, both recorded calls: the fused AVX-512 Swish accepted (recorded 19x, then
// 18x on the re-measure), the second proposal gated and not accepted.
TEST_F(modelnew_replay, level1) { replay("level1"); }

// The level-2 problem's first call (its fused epilogue): gated and correct; the recording left it
// undecided on a loaded machine, a quiet one may accept it, so only the first call is replayed
// (a second would follow another parent then). No step of it is held to a decision, so it is
// checked only (--no-time): the reply's candidate built and computing correctly is what the part
// shows; timing it cost 100-170 s in CI (its own extension timed against eager PyTorch, the
// re-measure and the final series when a quiet machine accepted it) and decided nothing asserted.
TEST_F(modelnew_replay, level2) {
  replay("level2", " --no-time");
  if (HasFailure() || IsSkipped()) return;
  // Checked, not timed: the run stored --no-time (a resume keeps it), no evaluation read a ratio.
  const fs::path ws = fs::path(LATHE_BINARY_DIR) / "modelnew-replay" / "level2";
  const json runs = lathe::testing::parse_json(run_lathe(lathe_in(ws) + "runs list --json"));
  ASSERT_FALSE(runs.value("runs", json::array()).empty()) << runs.dump();
  const json shown =
      lathe::testing::parse_json(run_lathe(lathe_in(ws) + "runs show " + runs["runs"][0].value("id", "") + " --json"));
  EXPECT_TRUE(shown["run"]["args"].value("no_time", false)) << shown["run"]["args"].dump();
  int evaluations = 0;
  for (const auto& e : shown.value("events", json::array()))
    if (e.value("kind", "") == "evaluation") {
      ++evaluations;
      EXPECT_FALSE(e["body"].contains("ratio") && !e["body"]["ratio"].is_null()) << e.dump();
    }
  EXPECT_GE(evaluations, 2) << shown.dump();  // the start's check and the candidate's
}

// One character of the first level-1 reply changed inside the C++ it writes: the candidate is no
// longer the recorded one (another hash, and C++ that does not compile), and the replay says so.
TEST_F(modelnew_replay, a_changed_reply_does_not_replay) {
  const json want = expected();
  const json& problem = want.at("problems").at("level1");
  const fs::path ws = workspace("changed");
  std::vector<fs::path> tapes;
  for (const auto& e : fs::recursive_directory_iterator(ws / ".lathe/cassettes/mutate"))
    if (e.path().extension() == ".json" && e.path().filename().string().find(".0.json") != std::string::npos)
      tapes.push_back(e.path());
  std::sort(tapes.begin(), tapes.end());
  const std::string first_key = want.at("changed_reply").at("cassette").get<std::string>();
  auto it = std::find_if(tapes.begin(), tapes.end(),
                         [&](const fs::path& p) { return p.filename().string().rfind(first_key, 0) == 0; });
  ASSERT_NE(it, tapes.end()) << "no cassette " << first_key;
  json c = json::parse(read_text(*it));
  std::string text = c.at("response").at("text").get<std::string>();
  const std::string find = want.at("changed_reply").at("find").get<std::string>();
  const size_t at = text.find(find);
  ASSERT_NE(at, std::string::npos) << "the recorded reply no longer holds the text this test changes";
  text.replace(at, find.size(), want.at("changed_reply").at("replace").get<std::string>());
  c["response"]["text"] = text;
  std::ofstream(*it) << c.dump(2);
  // Checks only: the changed candidate must fail (or differ) before any timing would start.
  const run_result r = optimize(ws, problem, "--budget steps=1 --max-repairs 0", " --no-time");
  std::string why = r.code != 0 ? "exit " + std::to_string(r.code) : unanswered(r) ? "unanswered" : "";
  if (why.empty()) {
    const auto cands = candidates(ws, lathe::testing::parse_json(r).value("run", ""));
    const std::string recorded = problem.at("candidates").at(0).get<std::string>();
    if (cands.empty()) why = "no candidate gated";
    else if (cands.front().first != recorded) why = "candidate " + cands.front().first + ": " + cands.front().second;
  }
  EXPECT_NE(why, "") << "a changed reply replayed as if it were the recorded one";
}

}  // namespace
