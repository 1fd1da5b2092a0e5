// lathe.library/1 (skills/interchange.h): a library exported from one store and imported into a
// fresh one arrives complete (lineages, cards, trials, kernel sources); a second import changes
// nothing; clashes are reported, never overwritten; a tampered kernel is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/json.h"
#include "core/json_card.h"
#include "core/json_lineage.h"
#include "skills/interchange.h"
#include "spec/bundle.h"
#include "store/raw_db.h"
#include "store/sample_data.h"
#include "store/temp_dir.h"

namespace lathe::skills {
namespace {

using lathe::testing::temp_dir;
using nlohmann::json;

store open_ok(const std::filesystem::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

kernel_bundle bundle(const std::string& name, const std::string& body) {
  kernel_bundle k;
  k.name = name;
  k.manifest.lang = language::cpp;
  k.manifest.entry = "kernel.cpp";
  k.manifest.files = {"kernel.cpp"};
  k.manifest.flags = {"-O3"};
  // A latin-1 byte: sources are bytes, and must come back byte for byte.
  k.sources = {{"kernel.cpp", "// caf\xe9\nextern \"C\" int lathe_launch(const void*) { " + body + " }\n"}};
  k.hash = bundle_hash(k);
  return k;
}

struct library_fixture {
  std::vector<kernel_bundle> kernels;
  std::vector<int64_t> evals;
  lineage l;
  skill_card simd, tile;
};

// A small library in `s`: three kernels, a two-step lineage, two cards (one with two trials).
library_fixture fill(store& s) {
  library_fixture f;
  for (int i = 0; i < 3; ++i) {
    f.kernels.push_back(bundle("k" + std::to_string(i), "return " + std::to_string(i) + ";"));
    EXPECT_TRUE(s.put_kernel(f.kernels.back()).has_value());
  }
  for (int i = 0; i < 3; ++i) f.evals.push_back(s.add_evaluation(testing::sample_evaluation("gemm")).value());
  lineage& l = f.l;
  l.id = "gemm/abc/run-1";
  l.task = l.op = "gemm";
  l.expert = "expert";
  l.target = "x86-64-v3";
  l.run_id = "run-1";
  for (const auto& k : f.kernels) l.kernels.push_back(k.hash);
  l.features = {{}, {feature{"gemm_kernel/k", "simd", {}, detection_method::source}},
                {feature{"gemm_kernel/k", "simd", {}, detection_method::source},
                 feature{"gemm_kernel", "omp_parallel", {}, detection_method::source}}};
  for (int i = 0; i < 2; ++i) {
    transition t;
    t.from_kernel = l.kernels[i];
    t.to_kernel = l.kernels[i + 1];
    t.action = i == 0 ? "simd" : "omp_parallel";
    t.speedup = 1.5 + i;
    t.evaluations = {f.evals[i]};
    t.prov = {"rules", t.action + ".remove", false};
    t.forward.status = forward_status::identity_roundtrip;
    t.forward.kernel = l.kernels[i + 1];
    t.forward.evaluations = {f.evals[2]};
    t.forward.prov = {"rules", t.action + ".add", true};
    l.steps.push_back(t);
  }
  l.term = termination::complete;
  l.reason = "naive reached";
  EXPECT_TRUE(s.put_lineage(l).has_value());

  skill_card& c = f.simd;
  c.id = "card-simd";
  c.name = "add-simd";
  c.intent = "Add simd";
  c.op = "gemm";
  c.carriers["rules"] = R"({"rule":"simd.add","anchor":"gemm_kernel/k","params":{}})";
  c.declared_ratio = 1.5;
  c.evidence = {f.evals[0]};
  c.sources = {l.id + "#0"};
  c.status = card_status::replay_admitted;
  c.status_reason = "two rule replays reproduced it";
  c.prov = {"rules", "abstract_card", false};
  c.verification_log = {"abstracted by the rule engine"};
  EXPECT_TRUE(s.put_card(c).has_value());
  for (const char* task : {"layernorm", "transpose"}) {
    card_trial t;
    t.task = task;
    t.kernel_before = f.kernels[0].hash;
    t.kernel_after = std::string(task) == "layernorm" ? "0123456789abcdef0123456789abcdef" : "";
    t.outcome = "ok";
    t.ratio = 1.2;
    t.evaluations = {f.evals[1]};
    t.verdict = trial_verdict::reproduced;
    t.prov = {"rules", "simd.add", true};
    EXPECT_TRUE(s.add_card_trial(c.id, t).has_value());
  }
  c = s.get_card(c.id).value().value();

  f.tile = f.simd;
  f.tile.id = "card-tile";
  f.tile.name = "tile-loops";
  f.tile.sources = {};
  f.tile.evidence = {};
  f.tile.status = card_status::candidate;
  f.tile.trials.clear();
  EXPECT_TRUE(s.put_card(f.tile).has_value());
  return f;
}

json card_json(const store& s, const std::string& id) { return json(s.get_card(id).value().value()); }

TEST(interchange, export_then_import_into_a_fresh_store_is_complete_and_idempotent) {
  temp_dir dir;
  store a = open_ok(dir / "a.db");
  const library_fixture f = fill(a);
  auto doc = export_library(a, {{}, {}, true, "/work/a/.lathe"});
  ASSERT_TRUE(doc.has_value()) << doc.error().message;
  EXPECT_EQ(doc->lineages.size(), 1u);
  ASSERT_EQ(doc->cards.size(), 2u);
  EXPECT_EQ(doc->kernels.size(), 3u);
  // The trial's "after" kernel was never stored: named as missing, not silently dropped.
  EXPECT_EQ(doc->missing_kernels, std::vector<std::string>{"0123456789abcdef0123456789abcdef"});
  EXPECT_EQ(doc->evaluations.size(), 3u);
  EXPECT_EQ(doc->evaluations[0].task, "gemm");

  // Through text, as the CLI writes and reads it.
  const std::string text = library_text(*doc);
  const json as_json = json::parse(text);
  // The fields docs/schemas.md documents, and no others.
  std::set<std::string> keys;
  for (auto& [k, v] : as_json.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"schema", "source", "exported_at", "lineages", "cards",
                                         "kernels", "evaluations", "missing_kernels"}));
  EXPECT_EQ(as_json["schema"], "lathe.library/1");
  EXPECT_EQ(as_json["source"], "/work/a/.lathe");
  EXPECT_EQ(as_json["cards"][0]["trials"].size(), 2u);
  const json& k0 = as_json["kernels"][0];
  EXPECT_TRUE(k0.contains("hash") && k0.contains("name") && k0.contains("manifest"));
  EXPECT_TRUE(k0["sources"]["kernel.cpp"].contains("base64"));  // the latin-1 file
  for (const char* field : {"id", "created_at", "task", "kernel_hash", "kernel_name", "outcome",
                            "provenance", "target", "speedup"})
    EXPECT_TRUE(as_json["evaluations"][0].contains(field)) << field;
  auto parsed = parse_library(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
  EXPECT_EQ(parsed->kernels[0].sources, doc->kernels[0].sources);  // the latin-1 byte survived

  store b = open_ok(dir / "b.db");
  auto report = import_library(b, *parsed);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->count("kernel", import_action::added), 3u);
  EXPECT_EQ(report->count("kernel", import_action::refused), 1u);  // the missing one, named
  EXPECT_EQ(report->count("lineage", import_action::added), 1u);
  EXPECT_EQ(report->count("card", import_action::added), 2u);
  EXPECT_EQ(report->count("trial", import_action::added), 2u);

  // Kernels: byte for byte, so they still hash to their names.
  for (const auto& k : f.kernels) {
    auto got = b.get_kernel(k.hash);
    ASSERT_TRUE(got.has_value()) << k.hash;
    EXPECT_EQ(got->sources, k.sources);
    EXPECT_EQ(bundle_hash(*got), k.hash);
  }
  // The lineage: everything but the evaluation ids, which name rows of the other store.
  const lineage l = b.get_lineage(f.l.id).value().value();
  lineage expect = f.l;
  for (auto& s : expect.steps) {
    s.evaluations.clear();
    s.forward.evaluations.clear();
  }
  EXPECT_EQ(json(l), json(expect));
  // The card keeps its status and says where it came from; its trials arrive with it.
  const skill_card c = b.get_card("add-simd").value().value();
  EXPECT_EQ(c.status, card_status::replay_admitted);
  EXPECT_EQ(c.status_reason, f.simd.status_reason);
  EXPECT_TRUE(c.evidence.empty());
  ASSERT_EQ(c.verification_log.size(), 2u);
  EXPECT_EQ(c.verification_log[0], "abstracted by the rule engine");
  EXPECT_NE(c.verification_log[1].find("imported from /work/a/.lathe (lathe.library/1, exported "),
            std::string::npos) << c.verification_log[1];
  EXPECT_NE(c.verification_log[1].find("gate evaluations there: " + std::to_string(f.evals[0])),
            std::string::npos);
  ASSERT_EQ(c.trials.size(), 2u);
  EXPECT_EQ(c.trials[0].task, "layernorm");
  EXPECT_EQ(c.trials[0].verdict, trial_verdict::reproduced);
  EXPECT_EQ(c.trials[0].prov.detail, "simd.add");
  EXPECT_TRUE(c.trials[0].evaluations.empty());
  EXPECT_NE(c.trials[0].reason.find("[trial recorded " + f.simd.trials[0].created_at), std::string::npos)
      << c.trials[0].reason;

  // A second import changes nothing: not a record, not a timestamp.
  const json card_before = card_json(b, "card-simd");
  auto raw = lathe::testing::open_raw(dir / "b.db");
  const std::string cards_before = lathe::testing::query(raw.get(), "SELECT group_concat(updated_at || json) FROM cards");
  auto again = import_library(b, *parse_library(text));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->count("card", import_action::unchanged), 2u);
  EXPECT_EQ(again->count("lineage", import_action::unchanged), 1u);
  EXPECT_EQ(again->count("kernel", import_action::unchanged), 3u);
  EXPECT_EQ(again->count("trial", import_action::added), 0u);
  EXPECT_FALSE(again->has(import_action::added));
  EXPECT_EQ(card_json(b, "card-simd"), card_before);
  EXPECT_EQ(lathe::testing::query(raw.get(), "SELECT group_concat(updated_at || json) FROM cards"), cards_before);
  EXPECT_EQ(lathe::testing::query_int(raw.get(), "SELECT count(*) FROM card_trials"), 2);

  // Restoring a store's own export into it changes nothing either.
  auto restore = import_library(a, *parsed);
  ASSERT_TRUE(restore.has_value());
  EXPECT_EQ(restore->count("card", import_action::unchanged), 2u);
  EXPECT_EQ(restore->count("lineage", import_action::unchanged), 1u);
  EXPECT_EQ(restore->count("trial", import_action::added), 0u);
  EXPECT_EQ(a.get_card("card-simd").value()->trials.size(), 2u);

  json report_json = *again;
  EXPECT_EQ(report_json["schema"], "lathe.import/1");
  EXPECT_EQ(report_json["format"], "lathe.library/1");
  EXPECT_EQ(report_json["source"], "/work/a/.lathe");
  EXPECT_EQ(report_json["counts"]["card"]["unchanged"], 2);
  for (const char* field : {"kind", "id", "name", "action", "reason", "unmapped"})
    EXPECT_TRUE(report_json["entries"][0].contains(field)) << field;
}

TEST(interchange, clashes_are_reported_and_kept_unless_replace_is_asked) {
  temp_dir dir;
  store a = open_ok(dir / "a.db");
  fill(a);
  const library_document doc = export_library(a, {{}, {}, true, "a"}).value();

  store c = open_ok(dir / "c.db");
  // "add-simd" is taken here by another card; "card-tile" is here with other content.
  skill_card holder;
  holder.id = "local-simd";
  holder.name = "add-simd";
  holder.intent = "mine";
  ASSERT_TRUE(c.put_card(holder).has_value());
  skill_card tile = doc.cards[1];
  tile.intent = "a local edit";
  tile.status = card_status::admitted;
  ASSERT_TRUE(c.put_card(tile).has_value());

  auto r = import_library(c, doc);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->count("card", import_action::name_clash), 1u);
  EXPECT_EQ(r->count("card", import_action::kept_different), 1u);
  EXPECT_EQ(r->count("trial", import_action::added), 0u);  // the clashing card's trials stay out
  for (const auto& e : r->entries)
    if (e.action == import_action::name_clash) {
      EXPECT_EQ(e.id, "card-simd");
      EXPECT_NE(e.reason.find("local-simd"), std::string::npos) << e.reason;
    }
  EXPECT_EQ(c.get_card("add-simd").value()->id, "local-simd");
  EXPECT_EQ(c.get_card("add-simd").value()->intent, "mine");
  EXPECT_FALSE(c.get_card("card-simd").value().has_value());
  EXPECT_EQ(c.get_card("card-tile").value()->intent, "a local edit");

  // Asked to, the file's version replaces the present one (the name clash still stands).
  auto replaced = import_library(c, doc, {true});
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->count("card", import_action::updated), 1u);
  EXPECT_EQ(replaced->count("card", import_action::name_clash), 1u);
  EXPECT_EQ(c.get_card("card-tile").value()->intent, "Add simd");
  EXPECT_EQ(c.get_card("card-tile").value()->status, card_status::candidate);
}

TEST(interchange, selections_bring_their_lineages_and_bad_documents_are_refused) {
  temp_dir dir;
  store a = open_ok(dir / "a.db");
  const library_fixture f = fill(a);
  auto one = export_library(a, {{}, {"add-simd"}, true, ""});
  ASSERT_TRUE(one.has_value()) << one.error().message;
  ASSERT_EQ(one->cards.size(), 1u);
  EXPECT_EQ(one->cards[0].id, "card-simd");
  ASSERT_EQ(one->lineages.size(), 1u);  // the lineage it was induced from
  EXPECT_EQ(one->lineages[0].id, f.l.id);
  auto bare = export_library(a, {{}, {"add-simd"}, false, ""});
  ASSERT_TRUE(bare.has_value());
  EXPECT_TRUE(bare->lineages.empty());
  EXPECT_EQ(bare->kernels.size(), 1u);  // only the trials' kernel
  auto missing = export_library(a, {{}, {"no-such-card"}, true, ""});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);

  // A kernel whose sources no longer hash to its name is not the kernel that was measured.
  library_document tampered = *one;
  tampered.kernels[0].sources["kernel.cpp"] += "// extra\n";
  store b = open_ok(dir / "b.db");
  auto r = import_library(b, tampered);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->count("kernel", import_action::refused), 2u);  // the tampered one and the missing one
  EXPECT_FALSE(b.get_kernel(tampered.kernels[0].hash).has_value());

  for (const std::string& text : {std::string(R"({"schema": "lathe.library/2", "cards": []})"),
                                 std::string(R"({"cards": []})"), std::string("[1, 2]"), std::string("{oops")}) {
    auto p = parse_library(text);
    EXPECT_FALSE(p.has_value()) << text;
  }
  auto v2 = parse_library(R"({"schema": "lathe.library/2"})");
  ASSERT_FALSE(v2.has_value());
  EXPECT_NE(v2.error().message.find("found \"lathe.library/2\""), std::string::npos) << v2.error().message;
  EXPECT_FALSE(parse_library(R"({"schema": "lathe.library/1", "cards": [{"id": "", "name": "x"}]})").has_value());
}

}  // namespace
}  // namespace lathe::skills
