// SKILL.md folders (skills/render.h) and the YAML subset their front matter is read with
// (skills/render_yaml.h): the Agent Skills naming rules on good and bad examples, the checker
// on hand-made folders, and cards written as folders that the checker accepts and whose text
// says who produced each piece of evidence.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "skills/render.h"
#include "skills/render_yaml.h"
#include "store/temp_dir.h"

namespace lathe::skills {
namespace {

namespace fs = std::filesystem;
using lathe::testing::temp_dir;

bool mentions(const std::vector<std::string>& problems, const std::string& what) {
  for (const auto& p : problems)
    if (p.find(what) != std::string::npos) return true;
  return false;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// The text between "## <title>" and the next "## " heading.
std::string section(const std::string& md, const std::string& title) {
  const auto at = md.find("\n## " + title + "\n");
  if (at == std::string::npos) return "";
  const auto end = md.find("\n## ", at + 4);
  return md.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

skill_card rules_card() {
  skill_card c;
  c.id = "c0ffee0123456789";
  c.name = "add-simd";
  c.intent = "Add simd: an `omp simd` pragma on the innermost loop.";
  c.anchor = "gemm_kernel/k";
  c.action = "simd";
  c.op = "gemm";
  c.carriers["rules"] = R"({"rule":"simd.add","anchor":"gemm_kernel/k","params":{"width":"8"}})";
  c.carriers["cpp/cpu"] =
      "@@@ FILE kernel.cpp\n<<<<<<< SEARCH\n  for (int k = 0; k < K; ++k)\n=======\n"
      "  #pragma omp simd\n  for (int k = 0; k < K; ++k)\n>>>>>>> REPLACE\n@@@ END\n";
  c.preconditions = {"syntactic (simd.add): an innermost counted loop",
                     "iterations independent (assumed; checked by the gate)"};
  c.constraints = {{"isa", "x86-64-v3"}, {"divisibility", "K%8"}};
  c.effect = "measured paired ratio 1.42 on the source step";
  c.risk = "relies on iterations independent, which no rule checks";
  c.scope = "cpp kernels where simd.add has a site";
  c.declared_ratio = 1.42;
  c.evidence = {3, 5};
  c.provides_features = {"simd"};
  c.sources = {"gemm/abc/r1#0"};
  c.source_tasks = {"gemm"};
  c.target = "x86-64-v3";
  c.shape = {{"M", 256}, {"N", 256}};
  c.status = card_status::replay_admitted;
  c.status_reason = "reproduced on layernorm and transpose by rule replay";
  c.prov = {"rules", "abstract_card", false};
  c.verification_log = {"abstracted by the rule engine (mechanical)"};
  card_trial t;
  t.task = "layernorm";
  t.verdict = trial_verdict::reproduced;
  t.ratio = 1.3;
  t.outcome = "ok";
  t.prov = {"rules", "simd.add", true};
  c.trials = {t};
  return c;
}

TEST(render, skill_names_follow_the_agent_skills_rules) {
  for (const std::string& good : std::vector<std::string>{"add-simd", "a", "tile2-smem", std::string(64, 'x')})
    EXPECT_TRUE(skill_name_problems(good).empty()) << good;
  EXPECT_TRUE(mentions(skill_name_problems(""), "empty"));
  EXPECT_TRUE(mentions(skill_name_problems(std::string(65, 'x')), "at most 64"));
  EXPECT_TRUE(mentions(skill_name_problems("Add-Simd"), "a-z, 0-9"));
  EXPECT_TRUE(mentions(skill_name_problems("add_simd"), "a-z, 0-9"));
  EXPECT_TRUE(mentions(skill_name_problems("-add"), "start or end"));
  EXPECT_TRUE(mentions(skill_name_problems("add-"), "start or end"));
  EXPECT_TRUE(mentions(skill_name_problems("add--simd"), "'--'"));
  EXPECT_TRUE(mentions(skill_name_problems("claude-tiles"), "reserved word"));

  EXPECT_TRUE(skill_description_problems("Adds simd. Use when a loop is hot; N < 64 > 0.").empty());
  EXPECT_TRUE(mentions(skill_description_problems("  \n"), "empty"));
  EXPECT_TRUE(mentions(skill_description_problems(std::string(1025, 'd')), "at most 1024"));
  EXPECT_TRUE(skill_description_problems(std::string(1024, 'd')).empty());
  // Characters, not bytes: 1,024 two-byte characters are within the limit.
  std::string wide;
  for (int i = 0; i < 1024; ++i) wide += "\u00e9";
  EXPECT_TRUE(skill_description_problems(wide).empty());
  EXPECT_TRUE(mentions(skill_description_problems("Use <b>this</b> skill"), "XML"));

  EXPECT_EQ(kebab_name("Add SIMD (x86)"), "add-simd-x86");
  EXPECT_EQ(kebab_name("cuda.kv-vector-copy"), "cuda-kv-vector-copy");
  EXPECT_EQ(kebab_name("__--__"), "");
  const std::string long_name = kebab_name(std::string(50, 'a') + " " + std::string(50, 'b'));
  EXPECT_LE(long_name.size(), 64u);
  EXPECT_TRUE(skill_name_problems(long_name).empty()) << long_name;
}

TEST(render, checker_accepts_a_good_folder_and_names_each_fault) {
  temp_dir dir;
  const std::string body = "\n# add-simd\n\nDo the thing.\n";
  auto folder = [&](const std::string& name, const std::string& text) {
    write(dir / name / "SKILL.md", text);
    return dir / name;
  };
  EXPECT_TRUE(skill_md_problems(folder("add-simd", "---\nname: add-simd\ndescription: Adds simd. "
                                                   "Use when a loop is hot.\nmetadata:\n  a: \"b\"\n"
                                                   "---\n" + body))
                  .empty());
  // Folded and quoted descriptions read as the format reads them.
  EXPECT_TRUE(skill_md_problems(folder("tile-smem", "---\nname: tile-smem\ndescription: >\n  Tiles "
                                                    "loops.\n  Use when K is large.\n---\n" + body))
                  .empty());

  fs::create_directories(dir / "empty-folder");
  EXPECT_TRUE(mentions(skill_md_problems(dir / "empty-folder"), "no SKILL.md"));
  EXPECT_TRUE(mentions(skill_md_problems(dir / "nowhere"), "not a directory"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("plain", "# no front matter\n")), "front matter"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("unclosed", "---\nname: unclosed\n")), "not closed"));
  EXPECT_TRUE(mentions(
      skill_md_problems(folder("other", "---\nname: add-simd\ndescription: d\n---\n" + body)),
      "differs from the folder's name 'other'"));
  EXPECT_TRUE(mentions(
      skill_md_problems(folder("Bad_Name", "---\nname: Bad_Name\ndescription: d\n---\n" + body)),
      "a-z, 0-9"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("no-desc", "---\nname: no-desc\n---\n" + body)),
                       "no `description`"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("long-desc", "---\nname: long-desc\ndescription: " +
                                                                 std::string(1100, 'x') + "\n---\n" + body)),
                       "at most 1024"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("xml-desc", "---\nname: xml-desc\ndescription: "
                                                                "\"<example>x</example>\"\n---\n" + body)),
                       "XML"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("no-body", "---\nname: no-body\ndescription: d\n---\n\n")),
                       "no instructions"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("meta", "---\nname: meta\ndescription: d\nmetadata:\n"
                                                        "  list:\n  - a\n---\n" + body)),
                       "`metadata.list` is not a string"));
  EXPECT_TRUE(mentions(skill_md_problems(folder("compat", "---\nname: compat\ndescription: d\n"
                                                          "compatibility: " + std::string(501, 'c') +
                                                          "\n---\n" + body)),
                       "more than 500"));
}

TEST(render, cards_become_loadable_folders_that_label_their_evidence) {
  temp_dir dir;
  skill_card rules = rules_card();
  skill_card model = rules_card();
  model.id = "feedbeef00000000";
  model.name = "Tile SMEM For GEMM";  // not kebab-case: written normalized, and said so
  model.intent = "Stage <tile> loads " + std::string(1500, 'i');  // a description must still fit
  model.carriers = {{"cuda/cuda", "Stage tiles in shared memory; no edit blocks here."}};
  model.prov = {"llm", "openai/gpt-4o", false};
  model.status = card_status::candidate;
  model.trials.clear();
  skill_card mock = rules_card();
  mock.id = "abcdef0000000000";
  mock.name = "add-simd";  // the same folder name as `rules`: the second gets a suffix
  mock.prov = {"llm", "command/lathe-mock-model", false};
  skill_card reserved = rules_card();
  reserved.id = "0000000000000009";
  reserved.name = "claude-simd";

  auto written = write_skill_folders({rules, model, mock, reserved}, dir.path());
  ASSERT_TRUE(written.has_value()) << written.error().message;
  ASSERT_EQ(written->size(), 4u);
  const auto& w0 = (*written)[0];
  const auto& w1 = (*written)[1];
  const auto& w2 = (*written)[2];
  const auto& w3 = (*written)[3];
  EXPECT_TRUE(w0.written);
  EXPECT_TRUE(w0.problems.empty()) << w0.problems.front();
  EXPECT_EQ(w0.folder, dir / "add-simd");
  EXPECT_TRUE(w1.written);
  EXPECT_EQ(w1.name, "tile-smem-for-gemm");
  EXPECT_TRUE(mentions(w1.problems, "note: the card's name"));
  EXPECT_TRUE(w2.written);
  EXPECT_EQ(w2.name, "add-simd-abcdef00");
  EXPECT_FALSE(w3.written);
  EXPECT_TRUE(mentions(w3.problems, "reserved word"));
  EXPECT_FALSE(fs::exists(dir / "claude-simd"));
  for (const auto& w : {w0, w1, w2}) EXPECT_TRUE(skill_md_problems(w.folder).empty()) << w.name;

  // The rules card: every section, and nothing that reads as a model's work.
  const std::string md = read(dir / "add-simd" / "SKILL.md");
  auto fm = read_front_matter(md);
  ASSERT_TRUE(fm.has_value()) << fm.error().message;
  EXPECT_EQ(fm->fields["name"], "add-simd");
  const std::string desc = fm->fields["description"].get<std::string>();
  EXPECT_EQ(desc.find("Add simd: an `omp simd` pragma on the innermost loop. Use when"), 0u) << desc;
  EXPECT_NE(desc.find("Use when optimizing gemm kernels"), std::string::npos) << desc;  // when
  EXPECT_NE(desc.find("isa x86-64-v3"), std::string::npos) << desc;
  EXPECT_NE(desc.find("lathe status: replay-admitted"), std::string::npos) << desc;
  EXPECT_EQ(fm->fields["metadata"]["lathe-card-id"], rules.id);
  EXPECT_EQ(fm->fields["metadata"]["lathe-provenance"], "rules:abstract_card");
  EXPECT_NE(section(md, "Intent").find("Add simd"), std::string::npos);
  const std::string pre = section(md, "Preconditions");
  EXPECT_NE(pre.find("- iterations independent (assumed; checked by the gate)"), std::string::npos);
  EXPECT_NE(pre.find("- divisibility: `K%8`"), std::string::npos) << pre;
  EXPECT_NE(pre.find("provides simd"), std::string::npos);
  EXPECT_NE(section(md, "Scope").find("cpp kernels where simd.add has a site"), std::string::npos);
  EXPECT_NE(section(md, "Risk").find("no rule checks"), std::string::npos);
  const std::string effect = section(md, "Effect and evidence");
  EXPECT_NE(effect.find("Declared ratio: 1.42x"), std::string::npos) << effect;
  EXPECT_NE(effect.find("Abstracted by: rule engine (rules:abstract_card): mechanical"), std::string::npos) << effect;
  EXPECT_NE(effect.find("replay-admitted"), std::string::npos);
  EXPECT_NE(effect.find("only by rule replay"), std::string::npos);
  EXPECT_NE(effect.find("| layernorm | reproduced the declared effect | 1.3x | ok | rule engine (rules:simd.add"),
            std::string::npos) << effect;
  EXPECT_NE(effect.find("Gate evaluations: 3, 5"), std::string::npos);
  EXPECT_EQ(md.find("model-written"), std::string::npos);
  EXPECT_NE(section(md, "Verify before you keep it").find("lathe eval TASK NEW_KERNEL --baseline OLD_KERNEL"),
            std::string::npos);
  const std::string example = section(md, "Example configuration");
  EXPECT_NE(example.find("rule `simd.add` at anchor `gemm_kernel/k` with width=8"), std::string::npos)
      << example;
  EXPECT_NE(example.find("M=256, N=256"), std::string::npos);
  const std::string diff = section(md, "Before / after");
  const auto before = diff.find("Before (`kernel.cpp`):\n\n```cpp\n  for (int k = 0; k < K; ++k)\n```");
  const auto after = diff.find("After:\n\n```cpp\n  #pragma omp simd\n  for (int k = 0; k < K; ++k)\n```");
  EXPECT_NE(before, std::string::npos) << diff;
  EXPECT_NE(after, std::string::npos) << diff;
  EXPECT_LT(before, after);

  // The model card: labelled as a model's, its description cut to the limit with the status kept.
  const std::string md1 = read(dir / "tile-smem-for-gemm" / "SKILL.md");
  auto fm1 = read_front_matter(md1);
  ASSERT_TRUE(fm1.has_value());
  const std::string desc1 = fm1->fields["description"].get<std::string>();
  EXPECT_TRUE(skill_description_problems(desc1).empty());
  EXPECT_NE(desc1.find("lathe status: candidate. Verify every application with `lathe eval`."), std::string::npos)
      << desc1;  // kept whole at the limit: what tells an agent to check its use
  EXPECT_NE(desc1.find("Use when optimizing gemm kernels (cuda/cuda)"), std::string::npos) << desc1;
  EXPECT_EQ(desc1.find("Stage \u2039tile\u203a loads"), 0u) << desc1;  // no XML tag in it
  EXPECT_NE(md1.find("Abstracted by: model-written (llm:openai/gpt-4o)"), std::string::npos);
  EXPECT_NE(md1.find("Carrier `cuda/cuda` (as recorded"), std::string::npos);
  // The mock model is never passed off as a model.
  const std::string md2 = read(dir / "add-simd-abcdef00" / "SKILL.md");
  EXPECT_NE(md2.find("Abstracted by: mock model (llm:command/lathe-mock-model)"), std::string::npos);

  // Writing again replaces SKILL.md and keeps other files in the folder.
  write(dir / "add-simd" / "notes.txt", "mine");
  rules.intent = "Add simd, second version.";
  ASSERT_TRUE(write_skill_folders({rules}, dir.path()).has_value());
  EXPECT_NE(read(dir / "add-simd" / "SKILL.md").find("second version"), std::string::npos);
  EXPECT_EQ(read(dir / "add-simd" / "notes.txt"), "mine");
}

TEST(render_yaml, reads_what_pyyaml_and_render_write) {
  // PyYAML's safe_dump: a list of single-quoted scalars folded over lines, a nested mapping
  // with same-indent lists, quoted '*'.
  const std::string yaml =
      "skill_id: cuda.x\n"
      "preconditions:\n"
      "- 'Layout: it''s aligned, and the span is\n"
      "  contiguous.'\n"
      "- plain item\n"
      "scope:\n"
      "  cases:\n"
      "  - '*'\n"
      "  platforms: [sm90a, \"sm 120\"]\n"
      "note: |\n"
      "  line one\n"
      "    indented\n"
      "\n"
      "  line three\n"
      "folded: >-\n"
      "  a\n"
      "  b\n"
      "quoted: \"tab\\there \\u00e9\"  # a comment\n"
      "items:\n"
      "  - name: a\n"
      "    value: '1'\n"
      "  - name: b\n";
  auto j = parse_yaml_subset(yaml);
  ASSERT_TRUE(j.has_value()) << j.error().message;
  EXPECT_EQ((*j)["skill_id"], "cuda.x");
  ASSERT_EQ((*j)["preconditions"].size(), 2u);
  EXPECT_EQ((*j)["preconditions"][0], "Layout: it's aligned, and the span is contiguous.");
  EXPECT_EQ((*j)["preconditions"][1], "plain item");
  EXPECT_EQ((*j)["scope"]["cases"][0], "*");
  EXPECT_EQ((*j)["scope"]["platforms"], nlohmann::json::array({"sm90a", "sm 120"}));
  EXPECT_EQ((*j)["note"], "line one\n  indented\n\nline three\n");
  EXPECT_EQ((*j)["folded"], "a b");
  EXPECT_EQ((*j)["quoted"], "tab\there \u00e9");
  ASSERT_EQ((*j)["items"].size(), 2u);
  EXPECT_EQ((*j)["items"][0]["value"], "1");
  EXPECT_EQ((*j)["items"][1]["name"], "b");

  // What yaml_quote writes reads back exactly.
  const std::string tricky = "a \"quoted\" back\\slash\nnew line\ttab: # not a comment";
  auto back = parse_yaml_subset("k: " + yaml_quote(tricky) + "\n");
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ((*back)["k"], tricky);

  // Outside the subset: an error with the line, never a guess.
  auto anchor = parse_yaml_subset("a: 1\nb: &x 2\n");
  ASSERT_FALSE(anchor.has_value());
  EXPECT_NE(anchor.error().message.find("line 2"), std::string::npos) << anchor.error().message;
  EXPECT_FALSE(parse_yaml_subset("a: 'open\n").has_value());
  auto dup = parse_yaml_subset("a: 1\na: 2\n");
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message.find("duplicate key"), std::string::npos);
}

}  // namespace
}  // namespace lathe::skills
