// The lineage side of the store (schema version 5): runs and their append-only events, expert
// checks, lineages, cards and their append-only trials. Raw SQL pokes at the file behind the
// store's back where a rule is enforced by a trigger rather than by the API.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/card.h"
#include "core/json.h"
#include "core/json_lineage.h"
#include "core/run.h"
#include "store/raw_db.h"
#include "store/store.h"
#include "store/temp_dir.h"

namespace lathe {
namespace {

using testing::temp_dir;

store open_ok(const std::filesystem::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

// created_at has millisecond resolution: records written a few milliseconds apart order
// without ties.
void tick() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

void expect_append_only(sqlite3* db, const std::string& table, const std::string& column) {
  std::string update = "UPDATE ";
  update.append(table).append(" SET ").append(column).append(" = 'x'");
  std::string remove = "DELETE FROM ";
  remove.append(table);
  for (const std::string& sql : {update, remove}) {
    auto r = testing::exec(db, sql);
    EXPECT_NE(r.rc, SQLITE_OK) << sql;
    EXPECT_NE(r.message.find("append-only"), std::string::npos) << sql << ": " << r.message;
  }
}

run sample_run(const std::string& id, run_kind kind, const std::string& task) {
  run r;
  r.id = id;
  r.kind = kind;
  r.task = task;
  r.limits.steps = 8;
  r.args = R"({"task": ")" + task + R"("})";
  return r;
}

lineage sample_lineage(const std::string& id, const std::string& task, size_t steps) {
  lineage l;
  l.id = id;
  l.task = task;
  l.op = task;
  l.expert = "expert";
  l.target = "x86-64-v3";
  l.run_id = "run-1";
  for (size_t i = 0; i <= steps; ++i) {
    // Appended rather than "k" + to_string(i): GCC 12's -Wrestrict misfires on the latter.
    l.kernels.push_back(std::to_string(i).insert(0, 1, 'k'));
    l.features.push_back({});
  }
  for (size_t i = 0; i < steps; ++i) {
    transition t;
    t.from_kernel = l.kernels[i];
    t.to_kernel = l.kernels[i + 1];
    t.action = "simd";
    t.added = {feature{"gemm_kernel/k", "simd", {}, detection_method::source}};
    t.speedup = 1.5;
    t.evaluations = {int64_t(i) + 1};
    t.prov = {"rules", "simd.add", false};
    l.steps.push_back(t);
  }
  l.term = termination::complete;
  l.reason = "naive reached";
  return l;
}

skill_card sample_card(const std::string& id, const std::string& name, const std::string& op) {
  skill_card c;
  c.id = id;
  c.name = name;
  c.op = op;
  c.intent = "Add simd";
  c.carriers["rules"] = R"({"rule":"simd.add","anchor":"gemm_kernel/k","params":{}})";
  c.constraints = {{"isa", "x86-64-v3"}};
  c.declared_ratio = 1.4;
  c.prov = {"rules", "abstract_card", false};
  return c;
}

card_trial sample_trial(const std::string& task, trial_verdict v) {
  card_trial t;
  t.task = task;
  t.kernel_before = "b";
  t.kernel_after = "a";
  t.outcome = "ok";
  t.ratio = 1.3;
  t.evaluations = {7};
  t.verdict = v;
  t.reason = "paired ratio 1.3";
  t.prov = {"rules", "simd.add", false};
  return t;
}

TEST(lineage_store, runs_upsert_keeps_identity_and_lists_newest_first) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  ASSERT_TRUE(s.put_run(sample_run("r1", run_kind::decompose, "gemm")).has_value());
  const run first = s.get_run("r1").value().value();
  EXPECT_FALSE(first.created_at.empty());
  EXPECT_EQ(first.created_at, first.updated_at);
  EXPECT_EQ(first.state, run_state::running);
  ASSERT_TRUE(first.limits.steps.has_value());
  EXPECT_EQ(*first.limits.steps, 8);
  tick();
  ASSERT_TRUE(s.put_run(sample_run("r2", run_kind::optimize, "softmax")).has_value());
  tick();
  // The store sets created_at: a caller's (here a stale one) is not taken.
  run stale = sample_run("r0", run_kind::decompose, "conv2d");
  stale.created_at = "1999-01-01T00:00:00.000Z";
  stale.updated_at = "1999-01-01T00:00:00.000Z";
  ASSERT_TRUE(s.put_run(stale).has_value());
  EXPECT_GT(s.get_run("r0").value()->created_at, first.created_at);
  tick();

  // An update changes state, summary and updated_at; kind, task and created_at stay as first
  // written, whatever the caller sends.
  run later = sample_run("r1", run_kind::evolve, "other");
  later.state = run_state::finished;
  later.summary = R"({"steps": 3})";
  ASSERT_TRUE(s.put_run(later).has_value());
  const run updated = s.get_run("r1").value().value();
  EXPECT_EQ(updated.kind, run_kind::decompose);
  EXPECT_EQ(updated.task, "gemm");
  EXPECT_EQ(updated.created_at, first.created_at);
  EXPECT_GT(updated.updated_at, first.updated_at);
  EXPECT_EQ(updated.state, run_state::finished);
  EXPECT_EQ(updated.summary, R"({"steps": 3})");

  // Newest first by creation (r1's update does not move it), filtered by kind, limited.
  auto all = s.list_runs("", 0).value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "r0");
  EXPECT_EQ(all[1].id, "r2");
  EXPECT_EQ(all[2].id, "r1");
  auto decompose = s.list_runs("decompose", 0).value();
  ASSERT_EQ(decompose.size(), 2u);
  EXPECT_EQ(decompose[0].id, "r0");
  EXPECT_EQ(decompose[1].id, "r1");
  auto one = s.list_runs("", 1).value();
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, "r0");

  EXPECT_FALSE(s.get_run("missing").value().has_value());
  auto nameless = s.put_run(run{});
  ASSERT_FALSE(nameless.has_value());
  EXPECT_EQ(nameless.error().code, errc::invalid_argument);
}

// The run a --resume names (the one check the verbs and the search shared two copies of): a
// missing one says how to list them, one of another kind says both kinds with their articles.
TEST(lineage_store, a_run_to_resume_must_exist_and_be_of_the_kind_asked) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  ASSERT_TRUE(s.put_run(sample_run("e1", run_kind::evolve, "gemm")).has_value());
  auto ok = s.run_to_resume("e1", run_kind::evolve);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->task, "gemm");
  auto missing = s.run_to_resume("nope", run_kind::optimize);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_EQ(missing.error().message, "no run 'nope' to resume (`lathe runs list --kind optimize`)");
  auto other = s.run_to_resume("e1", run_kind::bench);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, errc::invalid_argument);
  EXPECT_EQ(other.error().message, "run 'e1' is an evolve run, not a bench run");
}

TEST(lineage_store, run_events_are_numbered_per_run_and_append_only) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  ASSERT_TRUE(s.put_run(sample_run("a", run_kind::decompose, "gemm")).has_value());
  ASSERT_TRUE(s.put_run(sample_run("b", run_kind::decompose, "softmax")).has_value());
  EXPECT_EQ(s.add_run_event("a", "backward_accepted", R"({"step": 1})").value(), 1);
  EXPECT_EQ(s.add_run_event("b", "backward_rejected", R"({"why": "slower"})").value(), 1);
  EXPECT_EQ(s.add_run_event("a", "forward", R"({"status": "accepted"})").value(), 2);
  EXPECT_EQ(s.add_run_event("a", "card", "{}").value(), 3);

  auto events = s.run_events("a").value();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].seq, 1);
  EXPECT_EQ(events[0].kind, "backward_accepted");
  EXPECT_EQ(nlohmann::json::parse(events[0].json)["step"], 1);
  EXPECT_EQ(events[1].kind, "forward");
  EXPECT_EQ(events[2].seq, 3);
  EXPECT_FALSE(events[2].created_at.empty());
  EXPECT_EQ(s.run_events("b").value().size(), 1u);
  EXPECT_TRUE(s.run_events("none").value().empty());

  // No event for a run that does not exist, nor one whose body is not JSON; neither is written.
  auto orphan = s.add_run_event("none", "card", "{}");
  ASSERT_FALSE(orphan.has_value());
  EXPECT_EQ(orphan.error().code, errc::not_found);
  auto garbled = s.add_run_event("a", "card", "{not json");
  ASSERT_FALSE(garbled.has_value());
  EXPECT_EQ(garbled.error().code, errc::invalid_argument);
  EXPECT_EQ(s.run_events("a").value().size(), 3u);

  auto raw = testing::open_raw(dir / "lathe.db");
  expect_append_only(raw.get(), "run_events", "kind");
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM run_events"), 4);
  // Finishing the run does not touch its history.
  run done = sample_run("a", run_kind::decompose, "gemm");
  done.state = run_state::finished;
  ASSERT_TRUE(s.put_run(done).has_value());
  EXPECT_EQ(s.run_events("a").value().size(), 3u);
}

TEST(lineage_store, expert_checks_newest_first_per_task_and_kernel) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  EXPECT_FALSE(s.latest_expert_check("gemm", "k1").value().has_value());
  expert_check refused;
  refused.task = "gemm";
  refused.kernel = "k1";
  refused.kernel_name = "expert";
  refused.accepted = false;
  refused.reason = "links libopenblas.so.0";
  refused.findings = {{"library", "libopenblas.so.0", "ldd", false}};
  const int64_t id1 = s.add_expert_check(refused).value();
  tick();
  expert_check accepted = refused;
  accepted.accepted = true;
  accepted.reason = "accepted";
  accepted.findings.clear();
  accepted.ratio = 4.5;
  accepted.remeasured_ratio = 4.4;
  accepted.features = {feature{"gemm_kernel/k", "simd", {}, detection_method::source}};
  const int64_t id2 = s.add_expert_check(accepted).value();
  EXPECT_GT(id2, id1);
  expert_check other = refused;
  other.kernel = "k2";
  ASSERT_TRUE(s.add_expert_check(other).has_value());

  const expert_check latest = s.latest_expert_check("gemm", "k1").value().value();
  EXPECT_EQ(latest.id, id2);
  EXPECT_TRUE(latest.accepted);
  EXPECT_FALSE(latest.created_at.empty());
  ASSERT_TRUE(latest.remeasured_ratio.has_value());
  EXPECT_DOUBLE_EQ(*latest.remeasured_ratio, 4.4);
  ASSERT_EQ(latest.features.size(), 1u);
  EXPECT_EQ(latest.features[0].name, "simd");
  EXPECT_FALSE(s.latest_expert_check("gemm", "k2").value()->accepted);
  EXPECT_FALSE(s.latest_expert_check("softmax", "k1").value().has_value());

  auto raw = testing::open_raw(dir / "lathe.db");
  expect_append_only(raw.get(), "expert_checks", "task");
}

TEST(lineage_store, lineages_upsert_by_id_and_list_oldest_first) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  const lineage g1 = sample_lineage("gemm/abc/r1", "gemm", 1);
  ASSERT_TRUE(s.put_lineage(g1).has_value());
  ASSERT_TRUE(s.put_lineage(sample_lineage("softmax/def/r2", "softmax", 2)).has_value());
  ASSERT_TRUE(s.put_lineage(sample_lineage("gemm/abc/r3", "gemm", 0)).has_value());

  const lineage got = s.get_lineage("gemm/abc/r1").value().value();
  EXPECT_EQ(json(got), json(g1));

  // A lineage grows during its run: the same id is replaced, and keeps its place in the list.
  const lineage grown = sample_lineage("gemm/abc/r1", "gemm", 3);
  ASSERT_TRUE(s.put_lineage(grown).has_value());
  EXPECT_EQ(s.get_lineage("gemm/abc/r1").value()->steps.size(), 3u);
  auto all = s.list_lineages("").value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "gemm/abc/r1");
  EXPECT_EQ(all[0].steps.size(), 3u);
  EXPECT_EQ(all[1].id, "softmax/def/r2");
  EXPECT_EQ(all[2].id, "gemm/abc/r3");
  auto gemm = s.list_lineages("gemm").value();
  ASSERT_EQ(gemm.size(), 2u);
  EXPECT_EQ(gemm[1].id, "gemm/abc/r3");
  EXPECT_FALSE(s.get_lineage("nope").value().has_value());
  EXPECT_FALSE(s.put_lineage(lineage{}).has_value());
}

TEST(lineage_store, card_names_are_unique_and_cards_read_by_id_or_name) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  ASSERT_TRUE(s.put_card(sample_card("id-b", "add-simd", "gemm")).has_value());
  ASSERT_TRUE(s.put_card(sample_card("id-a", "tile-smem", "softmax")).has_value());

  // Another card may not take a name in use; the refusal names the holder and writes nothing.
  auto clash = s.put_card(sample_card("id-c", "add-simd", "conv2d"));
  ASSERT_FALSE(clash.has_value());
  EXPECT_EQ(clash.error().code, errc::invalid_argument);
  EXPECT_NE(clash.error().message.find("add-simd"), std::string::npos) << clash.error().message;
  EXPECT_NE(clash.error().message.find("id-b"), std::string::npos) << clash.error().message;
  EXPECT_FALSE(s.get_card("id-c").value().has_value());

  // The same card may be replaced, renamed and change status.
  skill_card renamed = sample_card("id-b", "add-simd-loops", "gemm");
  renamed.status = card_status::admitted;
  ASSERT_TRUE(s.put_card(renamed).has_value());
  EXPECT_FALSE(s.get_card("add-simd").value().has_value());
  const skill_card by_name = s.get_card("add-simd-loops").value().value();
  EXPECT_EQ(by_name.id, "id-b");
  EXPECT_TRUE(by_name.admitted());
  EXPECT_EQ(by_name.constraints.size(), 1u);
  ASSERT_TRUE(by_name.declared_ratio.has_value());
  EXPECT_EQ(s.get_card("id-a").value()->name, "tile-smem");
  // The freed name can be taken now.
  ASSERT_TRUE(s.put_card(sample_card("id-c", "add-simd", "conv2d")).has_value());

  // Listed by name; filtered by operator.
  auto all = s.list_cards("").value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "add-simd");
  EXPECT_EQ(all[1].name, "add-simd-loops");
  EXPECT_EQ(all[2].name, "tile-smem");
  auto gemm = s.list_cards("gemm").value();
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(gemm[0].id, "id-b");
  EXPECT_FALSE(s.put_card(skill_card{}).has_value());
}

TEST(lineage_store, trials_live_in_their_own_table_and_fill_cards) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  skill_card c = sample_card("id-1", "add-simd", "gemm");
  c.trials = {sample_trial("ignored", trial_verdict::reproduced)};  // put_card does not store these
  ASSERT_TRUE(s.put_card(c).has_value());
  ASSERT_TRUE(s.put_card(sample_card("id-2", "tile-smem", "gemm")).has_value());
  EXPECT_TRUE(s.get_card("id-1").value()->trials.empty());

  const int64_t t1 = s.add_card_trial("id-1", sample_trial("layernorm", trial_verdict::reproduced)).value();
  const int64_t t2 = s.add_card_trial("id-1", sample_trial("transpose", trial_verdict::gate_failed)).value();
  EXPECT_GT(t2, t1);
  ASSERT_TRUE(s.add_card_trial("id-2", sample_trial("transpose", trial_verdict::not_applicable)).has_value());

  auto got = s.get_card("add-simd").value().value();
  ASSERT_EQ(got.trials.size(), 2u);
  EXPECT_EQ(got.trials[0].task, "layernorm");
  EXPECT_EQ(got.trials[0].verdict, trial_verdict::reproduced);
  EXPECT_FALSE(got.trials[0].created_at.empty());
  ASSERT_TRUE(got.trials[0].ratio.has_value());
  EXPECT_DOUBLE_EQ(*got.trials[0].ratio, 1.3);
  EXPECT_EQ(got.trials[1].verdict, trial_verdict::gate_failed);
  auto listed = s.list_cards("").value();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].trials.size(), 2u);
  ASSERT_EQ(listed[1].trials.size(), 1u);
  EXPECT_EQ(listed[1].trials[0].verdict, trial_verdict::not_applicable);

  // Replacing the card keeps its trials: they are history, not part of the card's body.
  skill_card again = sample_card("id-1", "add-simd", "gemm");
  again.status = card_status::admitted;
  ASSERT_TRUE(s.put_card(again).has_value());
  EXPECT_EQ(s.get_card("id-1").value()->trials.size(), 2u);

  auto orphan = s.add_card_trial("no-such-card", sample_trial("layernorm", trial_verdict::reproduced));
  ASSERT_FALSE(orphan.has_value());
  EXPECT_EQ(orphan.error().code, errc::not_found);
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM card_trials"), 3);
  expect_append_only(raw.get(), "card_trials", "task");
}

}  // namespace
}  // namespace lathe
