// lathe init / decompose / skills / runs as a user runs them: exit codes, JSON schemas, a killed
// decompose resumed from the command line, the library exported as JSON and as Agent Skills
// folders and imported into a fresh workspace. The rule engine proposes (offline); a copy of the
// softmax task with a smaller timed shape keeps the timed comparisons short.
#include "lathe_cli_json.h"
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

json parse(const run_result& r) { return lathe::testing::parse_json(r); }

class lineage_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-lineage-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
    // softmax with a 1024 x 1024 timed set: the same kernels, a shorter paired series.
    fs::create_directories(dir_ / "tasks");
    task_ = dir_ / "tasks" / "softmax";  // the name must equal the directory's
    fs::copy(fs::path(LATHE_SOURCE_DIR) / "tasks" / "softmax", task_, fs::copy_options::recursive);
    std::ifstream in(task_ / "task.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = std::regex_replace(ss.str(), std::regex("R = 4096\nC = 4096"), "R = 1024\nC = 1024");
    ASSERT_NE(text.find("R = 1024\nC = 1024"), std::string::npos);
    std::ofstream(task_ / "task.toml", std::ios::trunc) << text;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string ws(const std::string& name = "ws") const { return "--workspace '" + (dir_ / name).string() + "' "; }
  fs::path dir_, task_;
};

TEST_F(lineage_cli, help_names_every_verb_and_option) {
  for (const char* verb : {"init", "decompose", "skills", "runs"}) {
    const run_result r = run_lathe(std::string(verb) + " --help");
    EXPECT_EQ(r.code, 0) << verb;
    EXPECT_NE(r.out.find(verb), std::string::npos) << r.out;
  }
  const run_result d = run_lathe("decompose --help");
  for (const char* opt : {"--resume", "--proposer", "--max-steps", "--no-forward", "--no-induce"})
    EXPECT_NE(d.out.find(opt), std::string::npos) << opt;
  const run_result s = run_lathe("skills --help");
  for (const char* sub : {"list", "show", "admit", "export", "import"})
    EXPECT_NE(s.out.find(sub), std::string::npos) << sub;
}

TEST_F(lineage_cli, usage_errors_exit_2_and_say_why) {
  run_result r = run_lathe(ws() + "decompose no_such_task");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no task 'no_such_task'"), std::string::npos) << r.err;
  r = run_lathe(ws() + "decompose --resume decompose-19700101-000000-0000");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no run"), std::string::npos) << r.err;
  r = run_lathe(ws() + "runs show nope");
  EXPECT_EQ(r.code, 2);
  r = run_lathe(ws() + "skills show nope");
  EXPECT_EQ(r.code, 2);
  r = run_lathe(ws() + "decompose '" + task_.string() + "' --proposer vibes");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("expected rules, llm or auto"), std::string::npos) << r.err;
}

// The whole path from the command line: init runs inside decompose, the walk ends as the rule
// engine's coverage says (softmax: everything written is removed), cards are induced and listed,
// the run is listed with its events, and the library travels to a fresh workspace.
TEST_F(lineage_cli, decompose_lists_exports_and_imports) {
  const run_result d = run_lathe(ws() + "decompose '" + task_.string() + "' expert --proposer rules --json --max-time 0.5");
  ASSERT_EQ(d.code, 0) << d.err.substr(0, 3000);
  const json j = parse(d);
  EXPECT_EQ(j.value("schema", ""), "lathe.decompose/1");
  EXPECT_TRUE(j.value("ran_init", false));
  EXPECT_TRUE(j["check"].value("accepted", false)) << j["check"].dump();
  const json& l = j["lineage"];
  ASSERT_EQ(l["kernels"].size(), l["steps"].size() + 1);
  ASSERT_EQ(l["features"].size(), l["kernels"].size());
  EXPECT_EQ(l.value("termination", ""), "complete") << l.value("reason", "");
  for (size_t i = 0; i < l["steps"].size(); ++i) {
    EXPECT_EQ(l["steps"][i]["from"], l["kernels"][i]);
    EXPECT_EQ(l["steps"][i]["to"], l["kernels"][i + 1]);
    EXPECT_EQ(l["steps"][i]["provenance"].value("kind", ""), "rules");
    EXPECT_NE(l["steps"][i]["forward"].value("status", "not_tried"), "not_tried");
  }
  EXPECT_NE(j.value("proposer", "").find("rule-engine results"), std::string::npos);
  ASSERT_FALSE(j["cards"].empty());
  const std::string run_id = j.value("run", "");
  ASSERT_FALSE(run_id.empty());

  const json list = parse(run_lathe(ws() + "skills list --json"));
  EXPECT_EQ(list.value("schema", ""), "lathe.skills_list/1");
  ASSERT_EQ(list["cards"].size(), j["cards"].size());
  for (const auto& c : list["cards"]) {
    EXPECT_EQ(c.value("status", ""), "candidate");
    for (const char* field : {"intent", "anchor", "effect", "risk", "scope"})
      EXPECT_FALSE(c.value(field, "").empty()) << field << " of " << c.value("name", "");
    EXPECT_FALSE(c["provides"].empty());
  }
  const std::string name = list["cards"][0].value("name", "");
  const json one = parse(run_lathe(ws() + "skills show " + name + " --json"));
  EXPECT_EQ(one.value("schema", ""), "lathe.skill/1");
  EXPECT_EQ(one["card"].value("name", ""), name);

  const json runs = parse(run_lathe(ws() + "runs list --json"));
  EXPECT_EQ(runs.value("schema", ""), "lathe.runs/1");
  ASSERT_EQ(runs["runs"].size(), 1u);
  EXPECT_EQ(runs["runs"][0].value("state", ""), "finished");
  const json shown = parse(run_lathe(ws() + "runs show " + run_id + " --json"));
  EXPECT_EQ(shown.value("schema", ""), "lathe.run/1");
  bool finished = false;
  for (const auto& e : shown["events"]) finished |= e.value("kind", "") == "finished";
  EXPECT_TRUE(finished);

  // A finished run resumed from the command line adds nothing and ends the same.
  const run_result again = run_lathe(ws() + "decompose --resume " + run_id + " --json --no-induce");
  ASSERT_EQ(again.code, 0) << again.err.substr(0, 2000);
  EXPECT_EQ(parse(again)["lineage"]["kernels"], l["kernels"]);

  // Export: a lathe.library/1 document with every card; SKILL.md folders only for admitted cards
  // by default (none here: all are candidates, and the export says it left them out).
  const fs::path doc = dir_ / "library.json", skills_dir = dir_ / "skills";
  const run_result ex = run_lathe(ws() + "skills export -o '" + doc.string() + "' --skill-md '" + skills_dir.string() + "'");
  ASSERT_EQ(ex.code, 0) << ex.out << ex.err;
  EXPECT_NE(ex.out.find("left out " + std::to_string(list["cards"].size()) + " card(s) not admitted"),
            std::string::npos) << ex.out;
  EXPECT_TRUE(!fs::exists(skills_dir) || fs::is_empty(skills_dir));
  // A named card is exported whatever its status; --all-cards exports every one, each loadable and
  // telling the agent to verify with lathe eval.
  const run_result named = run_lathe(ws() + "skills export --skill-md '" + (dir_ / "one").string() + "' --card " + name);
  ASSERT_EQ(named.code, 0) << named.out << named.err;
  EXPECT_TRUE(fs::exists(dir_ / "one" / name / "SKILL.md"));
  const run_result all = run_lathe(ws() + "skills export --skill-md '" + skills_dir.string() + "' --all-cards");
  ASSERT_EQ(all.code, 0) << all.out << all.err;
  for (const auto& c : list["cards"]) {
    const fs::path md = skills_dir / c.value("name", "") / "SKILL.md";
    ASSERT_TRUE(fs::exists(md)) << md;
    std::ifstream in(md);
    std::string first, text;
    std::getline(in, first);
    EXPECT_EQ(first, "---");
    for (std::string line; std::getline(in, line);) text += line + "\n";
    const size_t desc = text.find("description: ");
    ASSERT_NE(desc, std::string::npos);
    EXPECT_NE(text.substr(desc, text.find('\n', desc) - desc).find("lathe eval"), std::string::npos);
    EXPECT_NE(text.find("lathe eval TASK NEW_KERNEL --baseline OLD_KERNEL"), std::string::npos);
  }
  // Import into a fresh workspace: the same cards, still candidates there; a second import
  // changes nothing.
  const json imp = parse(run_lathe(ws("ws2") + "skills import '" + doc.string() + "' --json"));
  EXPECT_EQ(imp.value("schema", ""), "lathe.import/1");
  const json list2 = parse(run_lathe(ws("ws2") + "skills list --json"));
  EXPECT_EQ(list2["cards"].size(), list["cards"].size());
  const json imp2 = parse(run_lathe(ws("ws2") + "skills import '" + doc.string() + "' --json"));
  for (const auto& e : imp2["entries"]) EXPECT_EQ(e.value("action", ""), "unchanged") << e.dump();

  // --prior puts a mechanism first: the walk above began with omp_parallel; with the prior its
  // one step takes out simd (the expert's check is reused: no init).
  ASSERT_FALSE(l["steps"].empty());
  ASSERT_EQ(l["steps"][0].value("action", ""), "omp_parallel.remove");
  const run_result prior = run_lathe(ws() + "decompose '" + task_.string() +
                                     "' expert --proposer rules --json --prior simd "
                                     "--max-steps 1 --no-time --no-forward --no-induce");
  ASSERT_EQ(prior.code, 0) << prior.err.substr(0, 2000);
  const json p = parse(prior);
  EXPECT_FALSE(p.value("ran_init", true));
  ASSERT_EQ(p["lineage"]["steps"].size(), 1u);
  EXPECT_EQ(p["lineage"]["steps"][0].value("action", ""), "simd_intrinsics.remove");
}

}  // namespace
