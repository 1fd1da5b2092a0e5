// `lathe rules list` and `lathe rules apply` as a user runs them (the lathe binary): JSON schemas,
// the gate's verdicts on every backward result of the softmax expert (no timing: the checks
// decide), --rule filtering, and the usage errors.
#include "lathe_cli_run.h"
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::run_lathe;
using lathe::testing::run_result;

class rules_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-rules-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string ws() const { return "--workspace '" + dir_.string() + "' "; }
  fs::path dir_;
};

}  // namespace

TEST_F(rules_cli, list_json_names_every_rule) {
  auto r = run_lathe("rules list --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "lathe.rules_list/1");
  bool found = false;
  for (const auto& x : j.at("rules")) {
    for (const char* k : {"name", "direction", "feature", "description", "preconditions", "assumed"})
      EXPECT_TRUE(x.contains(k)) << k;
    if (x.at("name") == "omp_parallel.add") {
      found = true;
      EXPECT_EQ(x.at("direction"), "forward");
      EXPECT_EQ(x.at("feature"), "omp_parallel");
      EXPECT_FALSE(x.at("assumed").empty());
    }
  }
  EXPECT_TRUE(found);
  auto text = run_lathe("rules list");
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("omp_parallel.remove"), std::string::npos);
  EXPECT_NE(text.out.find("assumes: "), std::string::npos);
}

TEST_F(rules_cli, apply_backward_on_the_softmax_expert_is_gated) {
  auto r = run_lathe(ws() + "rules apply softmax expert --backward --no-time --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("schema"), "lathe.rules_apply/1");
  EXPECT_EQ(j.at("task"), "softmax");
  EXPECT_NE(j.at("label").get<std::string>().find("mechanical"), std::string::npos);
  ASSERT_FALSE(j.at("results").empty());
  bool omp = false;
  for (const auto& x : j.at("results")) {
    EXPECT_EQ(x.at("outcome"), "ok") << x.dump(2);
    EXPECT_EQ(x.at("provenance").get<std::string>().rfind("rules:" + x.at("rule").get<std::string>(), 0), 0u);
    EXPECT_TRUE(x.at("evaluation").is_number()) << "stored like eval's evaluations";
    EXPECT_TRUE(x.at("ratio").is_null());  // --no-time
    EXPECT_TRUE(x.at("rule").get<std::string>().ends_with(".remove"));
    omp = omp || x.at("rule") == "omp_parallel.remove";
  }
  EXPECT_TRUE(omp);
  // The features no rule touched: none on softmax (docs/rules.md coverage: simd and
  // vector_access go with simd_intrinsics.remove).
  std::vector<std::string> untouched;
  for (const auto& u : j.at("untouched")) untouched.push_back(u.at("name"));
  EXPECT_EQ(std::find(untouched.begin(), untouched.end(), "simd"), untouched.end());
  EXPECT_EQ(std::find(untouched.begin(), untouched.end(), "omp_parallel"), untouched.end());
}

TEST_F(rules_cli, apply_rule_filter_and_usage_errors) {
  auto r = run_lathe(ws() + "rules apply softmax expert --rule omp_parallel.remove --no-time --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.at("results").size(), 1u);
  EXPECT_EQ(j.at("results")[0].at("rule"), "omp_parallel.remove");
  EXPECT_EQ(j.at("results")[0].at("outcome"), "ok");
  EXPECT_EQ(j.at("results")[0].at("carrier").at("rule"), "omp_parallel.remove");

  auto human = run_lathe(ws() + "rules apply softmax expert --rule omp_parallel.remove --no-time");
  EXPECT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("ratio [95% CI]"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("untouched"), std::string::npos);

  auto unknown = run_lathe(ws() + "rules apply softmax expert --rule no_such.rule");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("no rule named 'no_such.rule'"), std::string::npos) << unknown.err;
  auto wrong_dir = run_lathe(ws() + "rules apply softmax expert --forward --rule omp_parallel.remove");
  EXPECT_EQ(wrong_dir.code, 2);
  EXPECT_EQ(run_lathe(ws() + "rules apply softmax expert --forward --backward").code, 2);
  EXPECT_EQ(run_lathe("rules").code, 2);
}
