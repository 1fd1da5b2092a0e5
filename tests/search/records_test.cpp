// Run records with a typed outcome (issue 43, step 1): an optimize `evaluation` event and an evolve
// `child` event as an older lathe wrote them (outcome as text) read back and written again byte
// for byte, so that a stored run resumes and replays the same.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "search/evolve.h"
#include "search/records.h"
#include "search/verdict.h"

namespace lathe::search {
namespace {

using nlohmann::json;

// The verdict part of evaluation events stored by optimize before the outcome was typed (the
// model-replay run of CI at be29fb3; the second one's outcome made a failure, the third an older
// record without an outcome).
const char* const kOldVerdicts[] = {
    R"({"against_seconds":0.0083852275,"diagnostics":"$ g++ -shared -fPIC -std=c++20 -O3 src/kernel.cpp -o kernel.so\n","floor":0.0003546063026733399,"id":13,"inspection":"median 0.00163 s; 21.7% of the roofline bound","margin":0.4803494070820045,"message":"correct on every shape set and seed; timed","outcome":"ok","passed":true,"ratio":5.150783308114171,"seconds":0.0016346989999999999})",
    R"({"diagnostics":"","id":14,"inspection":"","margin":0.05,"message":"output y: 3 mismatches","outcome":"wrong_result","passed":false,"ratio":null})",
    R"({"diagnostics":"","id":15,"inspection":"","margin":0.05,"message":"","passed":false,"ratio":null})",
};

TEST(records, an_old_optimize_evaluation_record_is_written_back_byte_for_byte) {
  for (const char* text : kOldVerdicts) {
    const detail::verdict v = detail::verdict_from(json::parse(text));
    json back = detail::verdict_json(v);
    if (!json::parse(text).contains("outcome")) {
      EXPECT_FALSE(v.outcome.has_value());
      back.erase("outcome");  // written as "" from now on; the older record had none
    }
    EXPECT_EQ(back.dump(), text);
  }
  EXPECT_EQ(detail::verdict_from(json::parse(kOldVerdicts[0])).outcome, outcome::ok);
  EXPECT_EQ(detail::verdict_from(json::parse(kOldVerdicts[1])).outcome, outcome::wrong_result);
}

// A record from before the decision was kept decides by its point ratio, as its run did; one
// with the gate's decision decides by it (issue 43, step 10), and keeps it and the interval.
TEST(records, an_old_verdict_decides_by_its_point_ratio_and_a_new_one_by_the_gates_decision) {
  const detail::verdict old = detail::verdict_from(json::parse(kOldVerdicts[0]));  // 5.15x, margin 0.48
  EXPECT_FALSE(old.decision.has_value());
  EXPECT_TRUE(old.faster());
  EXPECT_EQ(old.reading().rfind("5.151x: faster (clears 1 + 0.480)", 0), 0u) << old.reading();

  detail::verdict v = old;
  v.decision = decision::same;  // the interval reached below 1 + margin
  v.ci_low = 1.3;
  v.ci_high = 9.0;
  EXPECT_FALSE(v.faster());
  const json j = detail::verdict_json(v);
  EXPECT_EQ(j.at("decision"), "same");
  EXPECT_EQ(j.at("interval"), json({1.3, 9.0}));
  const detail::verdict back = detail::verdict_from(j);
  EXPECT_EQ(back.decision, decision::same);
  EXPECT_EQ(back.ci_low, 1.3);
  EXPECT_EQ(back.ci_high, 9.0);
  EXPECT_EQ(detail::verdict_json(back).dump(), j.dump());
  EXPECT_NE(back.reading().find("the interval reaches below 1 + 0.480"), std::string::npos) << back.reading();
  v.decision = decision::faster;
  EXPECT_TRUE(v.faster());
  v.passed = false;
  EXPECT_FALSE(v.faster());
}

// A recorded proposer failure reads back as its kind; `waiting` (never recorded) and a kind lathe
// does not know read as `refused`.
TEST(records, a_recorded_proposer_failure_reads_back_its_kind) {
  auto kind_of = [](const char* k) {
    return detail::failure_from(json{{"failure", {{"kind", k}, {"message", "m"}}}}).kind;
  };
  EXPECT_EQ(kind_of("call"), agent::failure_kind::call);
  EXPECT_EQ(kind_of("budget"), agent::failure_kind::budget);
  EXPECT_EQ(kind_of("invalid_reply"), agent::failure_kind::invalid_reply);
  EXPECT_EQ(kind_of("edit_not_applied"), agent::failure_kind::edit_not_applied);
  EXPECT_EQ(kind_of("unsupported"), agent::failure_kind::unsupported);
  EXPECT_EQ(kind_of("waiting"), agent::failure_kind::refused);
  EXPECT_EQ(kind_of("no such kind"), agent::failure_kind::refused);
  EXPECT_EQ(detail::failure_from(json{{"failure", {{"kind", "call"}, {"message", "m"}}}}).message, "m");
  EXPECT_EQ(detail::failure_from(json::object()).kind, agent::failure_kind::refused);
}

// child_json's fields as the older lathe wrote them: a placed child, and one whose proposer failed
// (no kernel, outcome "").
const char* const kOldChildren[] = {
    R"({"action":"vectorize","cards":[],"contest_ratio":null,"duplicate":false,"edits":"@@ kernel.cpp","evaluations":[7,8],"failure":"","generation":2,"index":1,"inspirations":["ab12"],"island":0,"kernel":"c0ffee","kind":"child","outcome":"ok","parent":"beef","parent_speedup":1.25,"placed":true,"placement":"new_cell","prompt_context":"Evolutionary search","provenance":{"detail":"replay/cassettes","kind":"llm","mechanical":false},"rationale":"wider loads","score":2.5,"speedup":1.5})",
    R"({"action":"","cards":[],"contest_ratio":null,"duplicate":false,"edits":"","evaluations":[],"failure":"invalid_reply: no code block","generation":1,"index":0,"inspirations":[],"island":1,"kernel":"","kind":"child","outcome":"","parent":"beef","parent_speedup":null,"placed":false,"placement":"failed","prompt_context":"","provenance":{"detail":"","kind":"human","mechanical":false},"rationale":"","score":0.0,"speedup":null})",
    R"({"action":"unroll","cards":["c1"],"contest_ratio":0.97,"duplicate":true,"edits":"","evaluations":[9],"failure":"","generation":3,"index":2,"inspirations":[],"island":0,"kernel":"d00d","kind":"child","outcome":"load_error","parent":"beef","parent_speedup":1.0,"placed":false,"placement":"failed","prompt_context":"","provenance":{"detail":"","kind":"human","mechanical":false},"rationale":"","score":0.0,"speedup":null})",
};

TEST(records, an_old_evolve_child_record_is_written_back_byte_for_byte) {
  for (const char* text : kOldChildren) EXPECT_EQ(child_json(child_from(json::parse(text))).dump(), text);
  EXPECT_EQ(child_from(json::parse(kOldChildren[0])).outcome, outcome::ok);
  EXPECT_FALSE(child_from(json::parse(kOldChildren[1])).outcome.has_value());
  EXPECT_EQ(child_from(json::parse(kOldChildren[2])).outcome, outcome::load_error);
  EXPECT_EQ(child_from(json::parse(kOldChildren[0])).kind, child_kind::child);
  EXPECT_EQ(child_from(json::parse(kOldChildren[0])).placement, placement::new_cell);
  EXPECT_EQ(child_from(json::parse(kOldChildren[1])).placement, placement::failed);
}

TEST(records, a_child_record_with_a_kind_or_placement_lathe_does_not_know_is_refused) {
  json j = json::parse(kOldChildren[0]);
  j["kind"] = "mutant";
  EXPECT_THROW(child_from(j), json::type_error);
  j = json::parse(kOldChildren[0]);
  j["placement"] = "replaced";
  EXPECT_THROW(child_from(j), json::type_error);
  for (const char* k : {"initial", "child", "migrant", "translation"}) {
    j = json::parse(kOldChildren[0]);
    j["kind"] = k;
    EXPECT_EQ(child_json(child_from(j)).dump(), j.dump());
  }
  for (const char* p : {"new_cell", "contest", "kept", "failed"}) {
    j = json::parse(kOldChildren[0]);
    j["placement"] = p;
    EXPECT_EQ(child_json(child_from(j)).dump(), j.dump());
  }
}

}  // namespace
}  // namespace lathe::search
