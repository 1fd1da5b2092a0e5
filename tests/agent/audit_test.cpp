// Feature audits: the model's citations are verified against the source; comments and blank lines
// are not evidence, and any verdict lathe cannot verify is unknown, which fails the audit.
#include "agent/audit.h"

#include <gtest/gtest.h>

#include "scripted.h"

namespace lathe::agent::test {
namespace {

json verdict(const std::string& name, const std::string& status, json citations,
             const std::string& note = "") {
  return {{"name", name},
          {"status", status},
          {"locus", status == "absent" ? "" : "lathe_launch/r"},
          {"citations", citations},
          {"note", note}};
}
json cite(const std::string& file, int32_t first, int32_t last) {
  return {{"file", file}, {"first", first}, {"last", last}};
}

TEST(code_lines, comments_blank_lines_and_literals) {
  const std::string src =
      "// a comment\n"                           // 1: comment
      "\n"                                       // 2: blank
      "int a = 1; // trailing\n"                 // 3: code
      "/* block\n"                               // 4: comment
      "   still block */\n"                      // 5: comment
      "/* x */ int b; /* y\n"                    // 6: code
      "*/\n"                                     // 7: comment
      "const char* s = \"// not a comment\";\n"  // 8: code
      "   \t  \n"                                // 9: blank
      "#pragma omp simd\n"                       // 10: code
      "const char* r = R\"x(\n"                  // 11: code
      "// inside a raw string\n"                 // 12: code (a string's text)
      ")x\";\n"                                  // 13: code
      "  /* one */ /* two */\n"                  // 14: comment
      "char c = '\"'; /* \" */\n"                // 15: code
      "/* after */ // and more";                 // 16: comment, no final newline
  const std::vector<bool> code = code_lines(src);
  const std::vector<bool> want = {false, false, false, true, false, false, true, false, true,
                                  false, true,  true,  true, true,  false, true, false};
  EXPECT_EQ(code, want);
  EXPECT_EQ(code_lines("").size(), 1u);
  EXPECT_EQ(code_lines("x\n").size(), 2u);
}

TEST(citations, every_rule_of_the_contract) {
  const kernel_bundle k = softmax_expert();
  const std::string& src = k.sources.at("kernel.cpp");
  const int32_t omp = line_of(src, "#pragma omp parallel for");
  const int32_t lines = static_cast<int32_t>(code_lines(src).size()) - 1;
  ASSERT_GT(omp, 0);
  EXPECT_FALSE(citation_problem(k, {"kernel.cpp", omp, omp + 1}));
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.cpp", 1, 3}), "only comments or blank lines"));
  EXPECT_TRUE(
      has(*citation_problem(k, {"kernel.cpp", 25, 25}), "only comments or blank lines"));  // blank
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.cpp", lines, lines + 1}), "outside"));
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.cpp", 0, 2}), "outside"));
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.cpp", 30, 29}), "outside"));
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.cpp", omp - 20, omp}), "more than 20"));
  EXPECT_FALSE(citation_problem(k, {"kernel.cpp", omp - 19, omp}));  // exactly 20
  EXPECT_TRUE(has(*citation_problem(k, {"kernel.toml", 1, 1}), "not a file of the kernel"));
}

class audit : public ::testing::Test {
 protected:
  audit()
      : k(softmax_expert()),
        src(k.sources.at("kernel.cpp")),
        omp(line_of(src, "#pragma omp parallel for")) {}
  audit_request request(std::vector<std::string> names) {
    audit_request r;
    r.t = &softmax();
    r.kernel = k;
    r.features = std::move(names);
    return r;
  }
  op_result<audit_result> run(json verdicts, std::vector<std::string> names = {"omp_parallel"}) {
    model.say(json{{"verdicts", verdicts}});
    llm_proposer p(model, prompts());
    return p.audit_features(request(std::move(names)));
  }
  kernel_bundle k;
  std::string src;
  int32_t omp;
  scripted model;
};

TEST_F(audit, a_cited_line_of_code_passes) {
  auto got = run({verdict("omp_parallel", "present", {cite("kernel.cpp", omp, omp)}),
                  verdict("smem_tiling", "absent", json::array(), "no shared memory on a CPU")},
                 {"omp_parallel", "smem_tiling"});
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(got->passed());
  ASSERT_EQ(got->verdicts.size(), 2u);
  EXPECT_EQ(got->verdicts[0].status, presence::present);
  EXPECT_EQ(got->verdicts[1].status, presence::absent);
  EXPECT_TRUE(got->demoted.empty());
  EXPECT_EQ(to_string(got->prov), "llm:scripted/test");
  // The model saw numbered lines and each asked name's definition.
  const std::string& u = model.seen[0].messages[0].content;
  char numbered[64];
  std::snprintf(numbered, sizeof numbered, "%5d| #pragma omp parallel for", omp);
  EXPECT_TRUE(has(u, numbered));
  EXPECT_TRUE(has(u, "    1| // Expert row softmax"));
  EXPECT_TRUE(has(u, "- omp_parallel: a loop distributed across threads"));
  EXPECT_EQ(model.first_user_line(0), "lathe-operation: audit_features v2");
  EXPECT_TRUE(has(model.seen[0].system, "comments are not evidence"));
}

TEST_F(audit, a_comment_line_is_not_evidence) {
  const int32_t comment = line_of(src, "// Rows are independent: OpenMP");
  ASSERT_GT(comment, 0);
  auto got = run({verdict("omp_parallel", "present", {cite("kernel.cpp", comment, comment)})});
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->passed());
  EXPECT_EQ(got->verdicts[0].status, presence::unknown);
  ASSERT_EQ(got->demoted.size(), 1u);
  EXPECT_TRUE(has(got->demoted[0], "omp_parallel: "));
  EXPECT_TRUE(has(got->demoted[0], "comments are not evidence"));
  EXPECT_TRUE(has(got->verdicts[0].note, "demoted by lathe"));
}

TEST_F(audit, blank_lines_out_of_range_and_long_spans_are_demoted) {
  const int32_t blank = omp - 1;  // the blank line before the pragma
  ASSERT_TRUE(code_lines(src)[static_cast<size_t>(blank)] == false);
  const std::vector<std::pair<json, std::string>> cases = {
      {cite("kernel.cpp", blank, blank), "only comments or blank lines"},
      {cite("kernel.cpp", omp, 5000), "outside"},
      {cite("kernel.cpp", omp - 25, omp), "more than 20"},
  };
  for (const auto& [c, why] : cases) {
    scripted m;
    m.say(json{{"verdicts", {verdict("omp_parallel", "present", {c})}}});
    llm_proposer p(m, prompts());
    auto got = p.audit_features(request({"omp_parallel"}));
    ASSERT_TRUE(got);
    EXPECT_FALSE(got->passed()) << why;
    EXPECT_EQ(got->verdicts[0].status, presence::unknown) << why;
    ASSERT_EQ(got->demoted.size(), 1u);
    EXPECT_TRUE(has(got->demoted[0], why)) << got->demoted[0];
  }
  // One good citation does not save a verdict that also cites a comment.
  auto mixed = run({verdict("omp_parallel", "present",
                            {cite("kernel.cpp", omp, omp), cite("kernel.cpp", 1, 2)})});
  ASSERT_TRUE(mixed);
  EXPECT_FALSE(mixed->passed());
}

TEST_F(audit, present_without_citation_missing_and_unasked_verdicts) {
  auto got =
      run({verdict("omp_parallel", "present", json::array()),
           verdict("simd", "present", {cite("kernel.cpp", omp, omp)})},  // not asked: ignored
          {"omp_parallel", "restrict"});                                 // restrict: no verdict
  ASSERT_TRUE(got);
  ASSERT_EQ(got->verdicts.size(), 2u);
  EXPECT_EQ(got->verdicts[0].name, "omp_parallel");
  EXPECT_EQ(got->verdicts[0].status, presence::unknown);
  EXPECT_EQ(got->verdicts[1].name, "restrict");
  EXPECT_EQ(got->verdicts[1].status, presence::unknown);
  EXPECT_EQ(got->verdicts[1].note, "no verdict was given");
  EXPECT_EQ(got->demoted.size(), 1u);  // only the verdict lathe demoted
  EXPECT_FALSE(got->passed());
  // The model's own "unknown" fails the audit too, without a demotion.
  auto unsure = run({verdict("omp_parallel", "unknown", json::array())});
  ASSERT_TRUE(unsure);
  EXPECT_FALSE(unsure->passed());
  EXPECT_TRUE(unsure->demoted.empty());
}

TEST_F(audit, names_outside_the_registry_are_repaired_or_never_asked) {
  model.say(json{{"verdicts", {verdict("openmp", "present", {cite("kernel.cpp", omp, omp)})}}});
  auto got = run({verdict("omp_parallel", "present", {cite("kernel.cpp", omp, omp)})});
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_TRUE(got->passed());
  EXPECT_EQ(got->calls, 2);
  EXPECT_TRUE(has(model.last_message(1), "$.verdicts[0].name 'openmp'"));
  llm_proposer p(model, prompts());
  auto bad = p.audit_features(request({"openmp"}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, failure_kind::unsupported);
  EXPECT_EQ(model.seen.size(), 2u);
}

}  // namespace
}  // namespace lathe::agent::test
