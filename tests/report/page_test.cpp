// The report page without a run: hostile strings from kernels and models stay text, a script
// error is caught by the tests' own detection (so that a broken page cannot pass), and the line
// diff the page shows.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>

#include "chromium.h"
#include "report/diff.h"
#include "report/html.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using lathe::testing::count_of;
using lathe::testing::page_errors;
using lathe::testing::render_page;
using lathe::testing::rendered;

// What a hostile kernel or model reply might write, everywhere the page shows text.
const std::string evil_script = "</script><script>document.body.setAttribute('data-pwned','script')</script>";
const std::string evil_img = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">";
const std::string evil_svg = "\"><svg onload=\"document.body.setAttribute('data-pwned','svg')\"></svg>";

json hostile_model() {
  const std::string h = evil_script + evil_img + evil_svg + " <!-- &amp; \xff\xfe";
  json ev{{"id", 7}, {"task", h}, {"kernel_hash", "aa11"}, {"kernel_name", h}, {"baseline_hash", "bb22"},
          {"baseline_name", h}, {"outcome", "wrong_result"}, {"message", h}, {"diagnostics", h},
          {"provenance", {{"kind", "llm"}, {"detail", h}, {"mechanical", false}}}, {"target", h},
          {"checks", {{"total", 3}, {"passed", 2}, {"max_abs_err", 0.5}, {"max_rel_err", 0.25}, {"norm_err", 0.1},
                      {"first_mismatches", {h}}}},
          {"median_seconds", 1e-3}, {"baseline_median_seconds", 2e-3}, {"dispersion", 0.02}, {"roofline_fraction", nullptr},
          {"timing_shape", h}, {"wall_seconds", 1.0}, {"stage_seconds", {{{"stage", h}, {"seconds", 0.1}}}},
          {"paired", {{"a_label", h}, {"b_label", h}, {"ratio", 2.0}, {"ci_low", 1.9}, {"ci_high", 2.1}, {"rse", 0.01},
                      {"stop_reason", h}, {"a_method", h}, {"a_seconds", {1e-3, 1.1e-3}}, {"b_seconds", {2e-3, 2.1e-3}}}},
          {"aa", nullptr}};
  json card{{"id", "c1"}, {"name", h}, {"intent", h}, {"anchor", h}, {"action", h}, {"operator", h},
            {"carriers", {{h, h}}}, {"preconditions", {h}}, {"constraints", {{{"what", h}, {"value", h}}}},
            {"effect", h}, {"risk", h}, {"scope", h}, {"declared_ratio", 1.5}, {"evidence", {7}},
            {"verification_log", {h}}, {"requires", {h}}, {"provides", {h}}, {"conflicts", json::array()},
            {"sources", {h}}, {"source_tasks", {h}}, {"target", h}, {"status", h}, {"status_reason", h},
            {"provenance", {{"kind", "llm"}, {"detail", h}}}, {"trials", json::array()}, {"used_in_run", h}};
  return {{"schema", "lathe.report/1"}, {"kind", "run"}, {"generated_at", h}, {"events", 3},
          {"run", {{"id", h}, {"kind", "optimize"}, {"task", h}, {"state", "finished"}, {"message", h},
                   {"created_at", h}, {"updated_at", h}, {"summary", {{"proposer", h}, {"stop", h}}}}},
          {"provenance", {{"proposer", h}, {"kinds", {"llm"}}, {"machinery_only", true}, {"note", h}}},
          {"graph", {{"nodes", {{{"id", "aa11"}, {"label", h}, {"name", h}, {"role", h}, {"features", {h}},
                                 {"median_seconds", 1e-3}, {"time_evaluation", 7}},
                                {{"id", "cc33"}, {"label", h}, {"name", h}, {"role", "step"}, {"features", {h}},
                                 {"median_seconds", nullptr}, {"time_evaluation", nullptr}}}},
                     {"edges", {{{"from", "aa11"}, {"to", "cc33"}, {"action", h}, {"locus", h}, {"speedup", 1.2},
                                 {"provenance", h}, {"mechanical", false}, {"evaluations", {7}}, {"forward", h},
                                 {"forward_reason", h}, {"features_added", {h}}}}},
                     {"rejected", {{{"from", "aa11"}, {"kernel", "dd44"}, {"step", 1}, {"stage", h}, {"outcome", h},
                                    {"summary", h}, {"provenance", h}}}}}},
          {"progress", {{"title", h}, {"x_label", h}, {"y_label", h}, {"x_max", 3}, {"budget", 4},
                        {"origin", {{"x", 0}, {"y", 1.0}, {"label", h}}},
                        {"points", {{{"x", 2}, {"y", 1.2}, {"kernel", "cc33"}, {"label", h}, {"measured", true}}}}}},
          {"evolve", nullptr},
          {"cards", {card}},
          {"evaluations", {ev}},
          {"diffs", {{{"from", "aa11"}, {"to", "cc33"}, {"from_label", h}, {"to_label", h}, {"action", h}, {"added", 1},
                      {"removed", 1}, {"truncated", false}, {"missing", json::array()},
                      {"files", {{{"path", h}, {"change", "modified"}, {"added", 1}, {"removed", 1}, {"whole", false},
                                  {"hunks", {{{"lines", {{{"op", "-"}, {"text", h}, {"old", 1}, {"new", 0}},
                                                         {{"op", "+"}, {"text", h}, {"old", 0}, {"new", 1}}}}}}}}}}}}},
          {"notes", {h}}};
}

class report_page : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-report-page-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }
  fs::path write(const std::string& name, const std::string& html) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << html;
    return p;
  }
  fs::path dir_;
};

TEST_F(report_page, hostile_strings_stay_text) {
  const std::string html = lathe::report::render_html(hostile_model());
  // Exactly the page's own three script elements close; the data cannot close one.
  EXPECT_EQ(count_of(html, "</script>"), 3u);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  const fs::path shot = fs::path(LATHE_BINARY_DIR) / "artifacts" / "report" / "hostile.png";
  fs::create_directories(shot.parent_path());
  fs::remove(shot);
  const rendered r = render_page(write("hostile.html", html), shot);
  EXPECT_TRUE(fs::exists(shot)) << shot;
  ASSERT_EQ(r.code, 0) << r.log.substr(0, 2000);
  EXPECT_EQ(page_errors(r), "");
  // The strings quote `setAttribute('data-pwned', …)` as text; only a handler that ran sets it.
  EXPECT_EQ(r.dom.find("data-pwned=\""), std::string::npos) << "an injected handler ran";
  EXPECT_EQ(r.dom.find("<img"), std::string::npos);
  EXPECT_EQ(r.dom.find("<svg onload"), std::string::npos);
  // The strings are shown, as text, in the graph, the card, the evaluation and the diff.
  EXPECT_GE(count_of(r.dom, "&lt;img src=x onerror="), 10u);
  EXPECT_NE(r.dom.find("data-card=\"" + std::string("&lt;/script&gt;")), std::string::npos);
  EXPECT_NE(r.dom.find("<span class=\"del\">"), std::string::npos);
  EXPECT_EQ(count_of(r.dom, "<g class=\"node "), 3u);  // two kernels and the rejected attempt
}

TEST_F(report_page, a_script_error_is_caught_by_the_tests) {
  json model = hostile_model();
  const std::string good = lathe::report::render_html(model);
  // An error thrown outside the report's own code: the page's error hook and the console both see it.
  std::string injected = good;
  injected.insert(injected.rfind("</body>"), "<script>window.no_such_object.field = 1;</script>\n");
  const rendered a = render_page(write("injected.html", injected));
  ASSERT_EQ(a.code, 0);
  EXPECT_NE(page_errors(a).find("error box"), std::string::npos) << page_errors(a);
  EXPECT_NE(page_errors(a).find("console: Uncaught"), std::string::npos) << page_errors(a);
  // A model one section cannot draw: that section reports, the others still draw.
  model["graph"]["nodes"] = json::object({{"not", "a list"}});
  const rendered b = render_page(write("broken.html", lathe::report::render_html(model)));
  ASSERT_EQ(b.code, 0);
  EXPECT_NE(page_errors(b).find("graph data: TypeError"), std::string::npos) << page_errors(b);
  EXPECT_NE(b.dom.find("id=\"evaluation-table\""), std::string::npos);
  EXPECT_NE(b.dom.find("data-rendered=\"lathe\""), std::string::npos);
}

// The tune chart (review, 2026-12-07): an interval with a bound JSON keeps as null (a
// non-finite one) is drawn without its whisker instead of breaking the section, and every bar
// starts at the default's 1, so that a slower configuration's runs left of it.
TEST_F(report_page, the_tune_chart_bars_start_at_the_default_and_survive_a_null_bound) {
  json model = hostile_model();
  auto row = [](const std::string& label, json speedup, json interval, bool deflt, bool winner) {
    return json{{"label", label}, {"outcome", speedup.is_null() ? "wrong_result" : "ok"}, {"speedup", speedup},
                {"interval", interval}, {"evaluation", 7}, {"quick", false}, {"cached", false},
                {"default", deflt}, {"winner", winner}};
  };
  model["tune"] = {{"title", "Each configuration against the default"}, {"x_label", "paired speedup"},
                   {"default", "BLOCK=32"}, {"winner", "BLOCK=64"}, {"improved", true},
                   {"configurations", {row("BLOCK=64", 1.3, {1.2, 1.4}, false, true),
                                       row("BLOCK=32", 1.0, {1.0, 1.0}, true, false),
                                       row("BLOCK=8", 0.8, {nullptr, 0.9}, false, false),
                                       row("BLOCK=4", nullptr, nullptr, false, false)}}};
  const rendered r = render_page(write("tune.html", lathe::report::render_html(model)));
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(page_errors(r), "");
  const size_t at = r.dom.find("id=\"configuration-chart\"");
  ASSERT_NE(at, std::string::npos) << r.dom.substr(0, 2000);
  const std::string svg = r.dom.substr(at, r.dom.find("</svg>", at) - at);
  const std::smatch axis = [&] {
    std::smatch m;
    std::regex_search(svg, m, std::regex("<line class=\"axis\" x1=\"([0-9.]+)\" x2=\"([0-9.]+)\""));
    return m;
  }();
  ASSERT_EQ(axis.size(), 3u) << svg;
  const double one = std::stod(axis[1].str());
  const std::regex bar("<rect class=\"bar[^\"]*\" x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
  std::vector<std::pair<double, double>> bars;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    bars.push_back({std::stod((*it)[1].str()), std::stod((*it)[2].str())});
  ASSERT_EQ(bars.size(), 3u) << svg;  // the failed configuration has no bar
  EXPECT_NEAR(bars[0].first, one, 0.01);                    // faster: from 1 rightwards
  EXPECT_GT(bars[0].second, 10.0);
  EXPECT_NEAR(bars[2].first + bars[2].second, one, 0.01);  // slower: from 1 leftwards
  EXPECT_GT(bars[2].second, 10.0);
  EXPECT_EQ(count_of(svg, "class=\"whisker\""), 2u) << svg;  // none for the null bound
  EXPECT_NE(svg.find("wrong_result"), std::string::npos);
}

TEST(report_diff, aligns_lines_and_keeps_context) {
  using lathe::report::diff_lines;
  using lathe::report::line_op;
  const auto d = diff_lines("a\nb\nc\nd\ne\nf\ng\nh\ni\n", "a\nb\nc\nd\nX\nf\ng\nh\ni\nj\n", 1);
  EXPECT_EQ(d.added, 2);
  EXPECT_EQ(d.removed, 1);
  ASSERT_EQ(d.hunks.size(), 2u);  // e->X with one line around it, then j appended
  ASSERT_EQ(d.hunks[0].lines.size(), 4u);
  EXPECT_EQ(d.hunks[0].lines[0].text, "d");
  EXPECT_EQ(d.hunks[0].lines[1].op, line_op::removed);
  EXPECT_EQ(d.hunks[0].lines[1].text, "e");
  EXPECT_EQ(d.hunks[0].lines[1].old_no, 5);
  EXPECT_EQ(d.hunks[0].lines[2].op, line_op::added);
  EXPECT_EQ(d.hunks[0].lines[2].new_no, 5);
  EXPECT_EQ(d.hunks[1].lines.back().text, "j");
  EXPECT_EQ(d.hunks[1].lines.back().new_no, 10);
  // Identical texts: nothing; an insertion in the middle is aligned, not a replacement.
  EXPECT_TRUE(diff_lines("x\ny\n", "x\ny\n").hunks.empty());
  const auto ins = diff_lines("1\n2\n3\n4\n", "1\n2\nnew\n3\n4\n");
  EXPECT_EQ(ins.added, 1);
  EXPECT_EQ(ins.removed, 0);
  // Past the alignment bound the middle is replaced whole, and says so.
  const auto big = diff_lines("a\nb\nc\n", "x\ny\nz\n", 3, 4);
  EXPECT_TRUE(big.whole);
  EXPECT_EQ(big.added, 3);
  EXPECT_EQ(big.removed, 3);
}

TEST(report_html, escaping_and_embedding) {
  EXPECT_EQ(lathe::report::escape_html("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  const json j{{"s", "</script><!-- & \xe2\x80\xa8"}};
  const std::string safe = lathe::report::script_safe_json(j);
  EXPECT_EQ(safe.find('<'), std::string::npos);
  EXPECT_EQ(safe.find('&'), std::string::npos);
  EXPECT_EQ(json::parse(safe), j);
}

}  // namespace
