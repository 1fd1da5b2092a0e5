// lathe skills from-tune RUN (cli/tune_card.h) as a user runs it, untimed: what it refuses and why.
// A run whose search measured only the default (--evals 1: built and checked, never timed) has
// no best and no crown, so no winner: it is refused, and nothing is stored. An unknown run is
// refused with the command that lists the tune runs. The card it makes from a run that crowned a
// winner (equal to the one tune made) needs a timed run: tests/search/tune_cli_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lathe_cli_json.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;

// Its own folder under /tmp and lock folder, and ws() (lathe_cli_run.h), the workspace made.
class tune_card_cli : public lathe::testing::cli_folder_test {
 protected:
  void SetUp() override {
    cli_folder_test::SetUp();
    fs::create_directories(dir_ / "ws/.lathe");
  }
  const std::string task = std::string(LATHE_SOURCE_DIR) + "/tests/integration/tasks/mm";
};

TEST_F(tune_card_cli, an_unknown_run_is_refused_with_how_to_list_them) {
  auto r = run_lathe(ws() + "skills from-tune tune-20261207-000000-beef");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no tune run 'tune-20261207-000000-beef'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lathe runs list --kind tune"), std::string::npos) << r.err;
  auto none = run_lathe(ws() + "skills from-tune");
  EXPECT_NE(none.code, 0);
  auto help = run_lathe(ws() + "skills from-tune --help");
  EXPECT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("tune run"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--json"), std::string::npos) << help.out;
  auto skills = run_lathe(ws() + "skills --help");
  EXPECT_NE(skills.out.find("from-tune"), std::string::npos) << skills.out;
}

TEST_F(tune_card_cli, a_run_that_crowned_no_winner_is_refused_and_stores_nothing) {
  auto t = run_lathe(ws() + "tune '" + task + "' tunable --evals 1 --json --quiet");
  ASSERT_EQ(t.code, 0) << t.err;
  const json j = lathe::testing::parse_json(t);
  ASSERT_EQ(j["points"].size(), 1u) << j.dump(2);  // the default, checked, not timed
  EXPECT_EQ(j["timed"], 0);
  EXPECT_FALSE(j["improved"].get<bool>());
  EXPECT_FALSE(j.contains("card"));
  const std::string run = j["run"];
  auto r = run_lathe(ws() + "skills from-tune " + run + " --json");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("tune run " + run + ": it crowned no winner"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the default stood"), std::string::npos) << r.err;
  auto listed = run_lathe(ws() + "skills list --json");
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_TRUE(lathe::testing::parse_json(listed)["cards"].empty());
}

// A Python kernel's tunable is a literal of its file (spec/python_knobs.h): the space lists the
// literal as the default, and the search builds and checks the default configuration (a ModelNew
// against the KernelBench problem's eager Model), untimed with --evals 1.
TEST_F(tune_card_cli, a_python_kernels_literal_knob_is_its_space_and_its_default_is_checked) {
  const std::string problem = std::string(LATHE_SOURCE_DIR) + "/tests/problems/kb_linear_gelu.py";
  const std::string kernel = std::string(LATHE_SOURCE_DIR) + "/tests/data/tune_python/chunked";
  auto space = run_lathe(ws() + "tune '" + problem + "' '" + kernel + "' --list --json");
  ASSERT_EQ(space.code, 0) << space.err;
  const json s = lathe::testing::parse_json(space);
  EXPECT_EQ(s["admitted"], 4);
  ASSERT_EQ(s["params"].size(), 1u);
  EXPECT_EQ(s["params"][0]["name"], "CHUNK");
  EXPECT_EQ(s["params"][0]["default"], 2);  // the file's literal, not the first value (1)
  auto t = run_lathe(ws() + "tune '" + problem + "' '" + kernel + "' --evals 1 --json --quiet");
  ASSERT_EQ(t.code, 0) << t.err;
  const json j = lathe::testing::parse_json(t);
  ASSERT_EQ(j["points"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["points"][0]["outcome"], "ok") << j.dump(2);
  EXPECT_EQ(j["points"][0]["config"]["CHUNK"], 2);
  // At its default the configured kernel is the kernel as written: the same bundle.
  EXPECT_EQ(j["default_hash"], s["hash"]);
}

}  // namespace
