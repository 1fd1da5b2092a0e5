// Imports from KLineage (skills/klineage_import.h), on small fixtures written by hand in its
// formats (tests/skills/fixtures/klineage: SKILL.md cards, a saved lineage). Each mapped field
// is checked, and so is the record of what did not map.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "skills/klineage_import.h"
#include "skills/render.h"
#include "store/temp_dir.h"

namespace lathe::skills {
namespace {

namespace fs = std::filesystem;
using lathe::testing::temp_dir;
using nlohmann::json;

const fs::path fixtures = fs::path(LATHE_SOURCE_DIR) / "tests" / "skills" / "fixtures" / "klineage";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

bool mentions(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

store open_ok(const fs::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

TEST(klineage_import, a_skill_md_card_maps_field_by_field) {
  const fs::path file = fixtures / "skills" / "cuda.vector-copy-demo" / "SKILL.md";
  auto got = klineage_card_from_skill_md(read(file), "cuda.vector-copy-demo/SKILL.md");
  ASSERT_TRUE(got.has_value()) << got.error().message;
  const skill_card& c = got->card;
  EXPECT_EQ(c.name, "cuda-vector-copy-demo");
  EXPECT_EQ(c.id.rfind("klineage-", 0), 0u);
  EXPECT_EQ(c.intent, "Widen scalar global-to-shared copies into 16-byte vector transfers.");
  ASSERT_EQ(c.preconditions.size(), 3u);
  // PyYAML folds a long quoted item over two lines; it reads back as one sentence.
  EXPECT_EQ(c.preconditions[0],
            "Data types: none beyond the bits being copied; the transfer moves representation, "
            "not values, so no conversion may happen.");
  EXPECT_EQ(c.op, "demo_copy");
  EXPECT_EQ(c.source_tasks, std::vector<std::string>{"demo_copy"});
  EXPECT_EQ(c.target, "nvidia-sm90a-cuda13");
  ASSERT_EQ(c.constraints.size(), 1u);  // the architecture its scope names, as a checkable isa
  EXPECT_EQ(c.constraints[0].what, "isa");
  EXPECT_EQ(c.constraints[0].value, "sm_90a");
  EXPECT_NE(c.scope.find("platforms nvidia-sm90a-cuda13"), std::string::npos) << c.scope;
  ASSERT_EQ(c.carriers.count("cuda/cuda"), 1u);
  EXPECT_NE(c.carriers.at("cuda/cuda").find("## Before"), std::string::npos);
  EXPECT_NE(c.carriers.at("cuda/cuda").find("## Example configuration"), std::string::npos);
  EXPECT_EQ(c.status, card_status::candidate);
  EXPECT_EQ(c.prov.kind, "import");
  EXPECT_EQ(c.prov.detail, "klineage");
  EXPECT_TRUE(c.trials.empty());
  ASSERT_FALSE(c.verification_log.empty());
  EXPECT_NE(c.verification_log[0].find("imported from KLineage (SKILL.md) cuda.vector-copy-demo/SKILL.md"),
            std::string::npos) << c.verification_log[0];
  // What did not map is named: the unknown front-matter key, the renamed id, the body.
  EXPECT_TRUE(mentions(got->unmapped, "front matter reviewer"));
  EXPECT_TRUE(mentions(got->unmapped, "skill_id: 'cuda.vector-copy-demo' is written 'cuda-vector-copy-demo'"));
  EXPECT_TRUE(mentions(got->unmapped, "body: kept whole as the carrier"));
  EXPECT_TRUE(mentions(c.verification_log, "front matter reviewer"));

  // An Agent Skills folder is not a KLineage card, and the error says so.
  auto agent = klineage_card_from_skill_md("---\nname: add-simd\ndescription: d\n---\nbody\n", "x");
  ASSERT_FALSE(agent.has_value());
  EXPECT_NE(agent.error().message.find("Agent Skills"), std::string::npos) << agent.error().message;
  EXPECT_FALSE(klineage_card_from_skill_md("no front matter", "x").has_value());
}

TEST(klineage_import, a_folder_of_cards_imports_once_and_reports_clashes) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  auto first = import_klineage(s, fixtures / "skills");
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(first->format, "klineage/skill");
  EXPECT_EQ(first->count("card", import_action::added), 2u);
  ASSERT_EQ(first->entries.size(), 2u);
  EXPECT_EQ(first->entries[0].name, "cuda-vector-copy-demo");
  EXPECT_FALSE(first->entries[0].unmapped.empty());
  const auto wildcard = s.get_card("gemm-smem-staging-demo").value().value();
  EXPECT_EQ(wildcard.carriers.count("cuda/cuda"), 1u);
  EXPECT_TRUE(wildcard.constraints.empty());  // scoped to every platform: no isa
  EXPECT_TRUE(wildcard.op.empty());

  auto again = import_klineage(s, fixtures / "skills");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->count("card", import_action::unchanged), 2u);
  EXPECT_EQ(s.list_cards("").value().size(), 2u);

  // Another card under the same skill_id (KLineage keeps both; lathe names are unique).
  const fs::path other = dir / "copy" / "cuda.vector-copy-demo-2" / "SKILL.md";
  fs::create_directories(other.parent_path());
  std::string text = read(fixtures / "skills" / "cuda.vector-copy-demo" / "SKILL.md");
  text.replace(text.find("16-byte vector"), 14, "8-byte vector");
  std::ofstream(other, std::ios::binary) << text;
  auto clash = import_klineage(s, other);
  ASSERT_TRUE(clash.has_value()) << clash.error().message;
  ASSERT_EQ(clash->entries.size(), 1u);
  EXPECT_EQ(clash->entries[0].action, import_action::name_clash);
  EXPECT_EQ(s.list_cards("").value().size(), 2u);

  // An imported card renders as a loadable Agent Skills folder.
  auto written = write_skill_folders(s.list_cards("").value(), dir / "out");
  ASSERT_TRUE(written.has_value());
  for (const auto& w : *written) {
    EXPECT_TRUE(w.written) << w.name;
    EXPECT_TRUE(skill_md_problems(w.folder).empty()) << w.name;
  }
  const std::string md = read(dir / "out" / "cuda-vector-copy-demo" / "SKILL.md");
  EXPECT_NE(md.find("imported from klineage: not verified by lathe"), std::string::npos);
}

TEST(klineage_import, a_saved_lineage_maps_its_states_steps_and_cards) {
  const json j = json::parse(read(fixtures / "lineage.json"));
  auto got = klineage_lineage_from_json(j, "lineage.json");
  ASSERT_TRUE(got.has_value()) << got.error().message;
  const lineage& l = got->l;
  EXPECT_EQ(l.id, "klineage/demo_gemm/333333333333");
  EXPECT_EQ(l.task, "demo_gemm");
  EXPECT_EQ(l.expert, "demo_gemm");
  EXPECT_EQ(l.target, "sm120");
  ASSERT_EQ(l.kernels.size(), 3u);  // states = transitions + 1, chained by fingerprint
  EXPECT_EQ(l.kernels[0], "klineage:" + std::string(64, '1'));
  EXPECT_EQ(l.kernels[2], "klineage:" + std::string(64, '3'));
  ASSERT_EQ(l.features.size(), 3u);
  EXPECT_EQ(l.features[2].size(), 3u);
  EXPECT_EQ(l.features[2][2].name, "vectorize_global");
  EXPECT_EQ(l.features[2][2].method, detection_method::proposer_audit);
  ASSERT_EQ(l.steps.size(), 2u);
  const transition& s0 = l.steps[0];
  EXPECT_EQ(s0.from_kernel, l.kernels[0]);
  EXPECT_EQ(s0.to_kernel, l.kernels[1]);
  EXPECT_EQ(s0.action, "smem_tiling");
  EXPECT_EQ(s0.locus, "gemm/k");
  EXPECT_EQ(s0.edit, "read A and B from global memory in the k loop instead of shared tiles");
  ASSERT_EQ(s0.added.size(), 1u);  // loop_unroll is in every state: not added by any step
  EXPECT_EQ(s0.added[0].name, "smem_tiling");
  EXPECT_TRUE(s0.removed.empty());
  ASSERT_TRUE(s0.speedup.has_value());
  EXPECT_DOUBLE_EQ(*s0.speedup, 2.0);  // 4.0 ms before / 2.0 ms after
  EXPECT_EQ(s0.prov.kind, "import");
  EXPECT_EQ(s0.forward.status, forward_status::accepted);
  EXPECT_NE(s0.forward.reason.find("stage 32x32 tiles"), std::string::npos);
  EXPECT_EQ(l.steps[1].forward.status, forward_status::rejected);  // its round trip failed
  ASSERT_TRUE(l.steps[1].speedup.has_value());
  EXPECT_DOUBLE_EQ(*l.steps[1].speedup, 1.25);
  EXPECT_EQ(l.term, termination::step_limit);
  EXPECT_EQ(l.reason, "step budget reached before the unrolled loop was rolled back");
  EXPECT_EQ(l.remaining_features, std::vector<std::string>{"gemm/loop_unroll"});
  EXPECT_TRUE(mentions(got->unmapped, "saved_by"));
  EXPECT_TRUE(mentions(got->unmapped, "kernel sources are not stored"));
  EXPECT_TRUE(mentions(got->unmapped, "features outside lathe's registry"));

  ASSERT_EQ(got->cards.size(), 1u);
  const skill_card& c = got->cards[0].card;
  EXPECT_EQ(c.name, "vectorize-aligned-loads");
  EXPECT_EQ(c.anchor, "the global-load expression");
  EXPECT_EQ(c.action, "vectorize_global");
  EXPECT_EQ(c.preconditions, (std::vector<std::string>{"16-byte alignment", "safe tail handling"}));
  EXPECT_NE(c.effect.find("fewer global load instructions"), std::string::npos);
  EXPECT_NE(c.effect.find("not re-measured by lathe"), std::string::npos);
  EXPECT_EQ(c.risk, "misaligned vector access");
  EXPECT_EQ(c.requires_features, std::vector<std::string>{"smem_tiling"});
  EXPECT_EQ(c.provides_features, std::vector<std::string>{"vectorize_global"});
  EXPECT_EQ(c.sources, std::vector<std::string>{l.id + "#1"});
  ASSERT_TRUE(c.declared_ratio.has_value());
  EXPECT_DOUBLE_EQ(*c.declared_ratio, 1.25);  // 2.0 / 1.6
  EXPECT_EQ(c.carriers.at("cuda/cuda"), "reinterpret as aligned float4 and keep a scalar tail");
  EXPECT_EQ(c.constraints.size(), 1u);
  EXPECT_EQ(c.constraints[0].value, "sm_120");
  EXPECT_NE(c.scope.find("after the actions smem_tiling"), std::string::npos);
  EXPECT_EQ(c.status, card_status::candidate);  // KLineage admitted it; lathe has not
  EXPECT_TRUE(c.trials.empty());
  EXPECT_TRUE(mentions(c.verification_log, "KLineage trial (not a lathe trial): case heldout_gemm on sm120, "
                                           "held out yes, gates passed yes, declared effect observed yes"));
  EXPECT_TRUE(mentions(got->cards[0].unmapped, "the locus 'gemm/k' of smem_tiling"));

  // Broken chains and shapes are refused, with the reason.
  json broken = j;
  broken["transitions"][1]["before_fingerprint"] = std::string(64, '9');
  auto b = klineage_lineage_from_json(broken, "broken.json");
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message.find("does not start where transition 0 ends"), std::string::npos);
  json short_ = j;
  short_["states"].erase(0);
  EXPECT_FALSE(klineage_lineage_from_json(short_, "short.json").has_value());
}

TEST(klineage_import, a_lineage_file_imports_with_its_cards_once) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  auto r = import_klineage(s, fixtures / "lineage.json");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->format, "klineage/lineage");
  EXPECT_EQ(r->count("lineage", import_action::added), 1u);
  EXPECT_EQ(r->count("card", import_action::added), 1u);
  EXPECT_FALSE(r->entries[0].unmapped.empty());
  auto l = s.get_lineage("klineage/demo_gemm/333333333333").value();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->steps.size(), 2u);
  EXPECT_EQ(s.get_card("vectorize-aligned-loads").value()->sources[0], l->id + "#1");

  auto again = import_klineage(s, fixtures / "lineage.json");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->count("lineage", import_action::unchanged), 1u);
  EXPECT_EQ(again->count("card", import_action::unchanged), 1u);

  // A skill memory (a JSON array of cards) and its errors.
  const fs::path memory = dir / "memory.json";
  std::ofstream(memory) << json::array({json::parse(read(fixtures / "lineage.json"))["skills"][0]}).dump();
  auto mem = import_klineage(s, memory);
  ASSERT_TRUE(mem.has_value()) << mem.error().message;
  EXPECT_EQ(mem->format, "klineage/memory");
  ASSERT_EQ(mem->entries.size(), 1u);
  // The same card without its lineage: the same id (its content), but without the sources its
  // lineage gave it: present with other content, so kept and reported.
  EXPECT_EQ(mem->entries[0].action, import_action::kept_different);
  EXPECT_EQ(s.get_card("vectorize-aligned-loads").value()->sources.size(), 1u);
  std::ofstream(dir / "bad.json") << "[{\"intent\": \"no id\"}]";
  EXPECT_FALSE(import_klineage(s, dir / "bad.json").has_value());
  EXPECT_FALSE(import_klineage(s, dir / "nothing-here").has_value());
}

}  // namespace
}  // namespace lathe::skills
