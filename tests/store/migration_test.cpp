// Databases written by earlier lathe versions must open, migrate and keep every record. Each
// earlier schema is frozen as a fixture (tests/store/fixtures/schema_v<N>.sql: the DDL as that
// version created it, plus rows as that version wrote them).
#include <cstdint>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "core/card.h"
#include "core/hash.h"
#include "core/run.h"
#include "store/migrations.h"
#include "store/raw_db.h"
#include "store/sample_data.h"
#include "store/store.h"
#include "store/temp_dir.h"

namespace lathe {
namespace {

namespace fs = std::filesystem;
using testing::temp_dir;

std::string fixture(const std::string& name) {
  std::ifstream in(fs::path(LATHE_SOURCE_DIR) / "tests" / "store" / "fixtures" / name);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), {}};
}

void build_from_fixture(const fs::path& file, const std::string& name) {
  auto raw = testing::open_raw(file);
  auto r = testing::exec(raw.get(), fixture(name));
  ASSERT_EQ(r.rc, SQLITE_OK) << r.message;
}

// Every object of the schema with its DDL, in a stable order.
std::string schema_of(sqlite3* db) {
  return testing::query(db,
                        "SELECT group_concat(type || ' ' || name || ': ' || coalesce(sql, ''), "
                        "char(10)) FROM (SELECT * FROM sqlite_master ORDER BY type, name)");
}

TEST(migrations, are_numbered_in_order) {
  auto all = migrations();
  ASSERT_EQ(static_cast<int>(all.size()), store::schema_version);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].version, static_cast<int>(i) + 1);
}

// The fixture is only a test of migration 1 if it is exactly what migration 1 creates.
TEST(migrations, v1_fixture_matches_migration_1) {
  temp_dir dir;
  build_from_fixture(dir / "fixture.db", "schema_v1.sql");
  auto migrated = testing::open_raw(dir / "migrated.db");
  ASSERT_TRUE(migrate(migrated.get(), 1).has_value());
  auto fixture_db = testing::open_raw(dir / "fixture.db");
  EXPECT_EQ(testing::query_int(fixture_db.get(), "PRAGMA user_version"), 1);
  EXPECT_EQ(testing::query_int(migrated.get(), "PRAGMA user_version"), 1);
  EXPECT_EQ(schema_of(fixture_db.get()), schema_of(migrated.get()));
}

TEST(migrations, v1_database_opens_at_the_current_version_with_its_data) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  build_from_fixture(file, "schema_v1.sql");
  auto opened = store::open(file);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  store& s = *opened;
  EXPECT_EQ(s.version().value(), store::schema_version);

  // The kernel and its sources blob survived, and the blob still matches its content hash.
  const std::string kernel_hash = "f00dfeedf00dfeedf00dfeedf00dfeed";
  kernel_bundle k = s.get_kernel(kernel_hash).value();
  EXPECT_EQ(k.name, "vector_add_v1");
  EXPECT_EQ(k.manifest.entry, "kernel.cpp");
  ASSERT_EQ(k.sources.count("kernel.cpp"), 1u);
  EXPECT_NE(k.sources["kernel.cpp"].find("lathe_launch"), std::string::npos);

  // Both evaluations survived, the failure included, with their samples.
  auto list = s.list_evaluations("", 0).value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].outcome, "compile_error");
  EXPECT_EQ(list[1].created_at, "2025-01-02T03:04:05.678Z");
  ASSERT_TRUE(list[1].speedup.has_value());
  EXPECT_DOUBLE_EQ(*list[1].speedup, 1.5);
  evaluation e = s.get_evaluation(1).value();
  EXPECT_EQ(e.task, "vector_add");
  EXPECT_EQ(e.kernel_hash, kernel_hash);
  ASSERT_TRUE(e.paired.has_value());
  EXPECT_EQ(e.paired->a_seconds, (std::vector<double>{2.0e-5, 2.1e-5, 1.9e-5}));
  EXPECT_EQ(e.paired->b_seconds, (std::vector<double>{3.0e-5, 3.1e-5, 2.9e-5}));
  ASSERT_TRUE(e.aa.has_value());
  EXPECT_EQ(e.aa->a_seconds, (std::vector<double>{3.0e-5, 3.0e-5, 3.0e-5}));

  // v2: the new columns were filled from the stored JSON, the indexes exist, the cache works.
  auto raw = testing::open_raw(file);
  EXPECT_EQ(testing::query(raw.get(), "SELECT provenance FROM evaluations WHERE id = 1"),
            "rules:unroll");
  EXPECT_EQ(testing::query(raw.get(), "SELECT target_arch FROM evaluations WHERE id = 1"),
            "x86-64-v3");
  EXPECT_EQ(testing::query_int(raw.get(),
                               "SELECT count(*) FROM sqlite_master WHERE type = "
                               "'index' AND name LIKE 'evaluations_%'"),
            2);
  ASSERT_TRUE(s.put_measurement("aa/host", R"({"half_width": 0.004})").has_value());
  EXPECT_EQ(s.get_measurement("aa/host").value(), R"({"half_width": 0.004})");

  // New records follow the old ones; blobs dedup against old content.
  int64_t id = s.add_evaluation(testing::sample_evaluation("vector_add")).value();
  EXPECT_EQ(id, 3);
  EXPECT_EQ(s.list_evaluations("vector_add", 0).value().size(), 2u);
  long long blobs = testing::query_int(raw.get(), "SELECT count(*) FROM blobs");
  std::string old_blob = testing::query(raw.get(), "SELECT data FROM blobs LIMIT 1");
  EXPECT_EQ(s.put_blob(old_blob).value(), content_hash(old_blob));
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM blobs"), blobs);

  // The update trigger lifted for the backfill is back.
  auto upd = testing::exec(raw.get(), "UPDATE evaluations SET message = 'x' WHERE id = 1");
  EXPECT_NE(upd.rc, SQLITE_OK);
  EXPECT_NE(upd.message.find("append-only"), std::string::npos) << upd.message;

  // A fresh database and a migrated one have the same schema.
  ASSERT_TRUE(store::open(dir / "fresh.db").has_value());
  auto fresh = testing::open_raw(dir / "fresh.db");
  EXPECT_EQ(schema_of(raw.get()), schema_of(fresh.get()));
}

// The fixture is only a test of migration 3 if it is exactly what migrations 1 and 2 leave.
TEST(migrations, v2_fixture_matches_migrations_1_and_2) {
  temp_dir dir;
  build_from_fixture(dir / "fixture.db", "schema_v2.sql");
  auto migrated = testing::open_raw(dir / "migrated.db");
  ASSERT_TRUE(migrate(migrated.get(), 2).has_value());
  auto fixture_db = testing::open_raw(dir / "fixture.db");
  EXPECT_EQ(testing::query_int(fixture_db.get(), "PRAGMA user_version"), 2);
  EXPECT_EQ(schema_of(fixture_db.get()), schema_of(migrated.get()));
}

TEST(migrations, v2_database_gains_profiles_and_keeps_its_data) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  build_from_fixture(file, "schema_v2.sql");
  auto opened = store::open(file);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  store& s = *opened;
  EXPECT_EQ(s.version().value(), store::schema_version);

  // Everything version 2 wrote is still there, as it was.
  auto list = s.list_evaluations("", 0).value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].outcome, "compile_error");
  evaluation e = s.get_evaluation(1).value();
  ASSERT_TRUE(e.paired.has_value());
  EXPECT_EQ(e.paired->a_seconds, (std::vector<double>{2.0e-5, 2.1e-5, 1.9e-5}));
  EXPECT_EQ(s.get_kernel("f00dfeedf00dfeedf00dfeedf00dfeed").value().name, "vector_add_v1");
  EXPECT_TRUE(s.get_measurement("ceilings/cpu/Fixture CPU/x86-64-v3/2").value().has_value());
  auto raw = testing::open_raw(file);
  EXPECT_EQ(testing::query(raw.get(), "SELECT provenance FROM evaluations WHERE id = 2"),
            "llm:openai/gpt-4o");

  // v3: profiles, empty at first, then bound to a kernel hash and append-only.
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM profiles"), 0);
  const std::string kh = "f00dfeedf00dfeedf00dfeedf00dfeed";
  EXPECT_TRUE(s.profiles_for(kh).value().empty());
  const int64_t id = s.add_profile(testing::sample_profile(kh)).value();
  EXPECT_EQ(id, 1);
  auto got = s.profiles_for(kh).value();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tgt.device, "NVIDIA H200");
  EXPECT_EQ(got[0].kernels.size(), 2u);
  for (const char* sql : {"UPDATE profiles SET task = 'x'", "DELETE FROM profiles"}) {
    auto r = testing::exec(raw.get(), sql);
    EXPECT_NE(r.rc, SQLITE_OK) << sql;
    EXPECT_NE(r.message.find("append-only"), std::string::npos) << r.message;
  }
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM profiles"), 1);
  EXPECT_EQ(testing::query_int(raw.get(),
                               "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                               "name = 'profiles_kernel_hash'"),
            1);

  // A fresh database and a migrated one have the same schema.
  ASSERT_TRUE(store::open(dir / "fresh.db").has_value());
  auto fresh = testing::open_raw(dir / "fresh.db");
  EXPECT_EQ(schema_of(raw.get()), schema_of(fresh.get()));
}

// The fixture is only a test of migration 4 if it is exactly what migrations 1 to 3 leave.
TEST(migrations, v3_fixture_matches_migrations_1_to_3) {
  temp_dir dir;
  build_from_fixture(dir / "fixture.db", "schema_v3.sql");
  auto migrated = testing::open_raw(dir / "migrated.db");
  ASSERT_TRUE(migrate(migrated.get(), 3).has_value());
  auto fixture_db = testing::open_raw(dir / "fixture.db");
  EXPECT_EQ(testing::query_int(fixture_db.get(), "PRAGMA user_version"), 3);
  EXPECT_EQ(schema_of(fixture_db.get()), schema_of(migrated.get()));
}

TEST(migrations, v3_database_gains_llm_calls_and_keeps_its_data) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  build_from_fixture(file, "schema_v3.sql");
  auto opened = store::open(file);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  store& s = *opened;
  EXPECT_EQ(s.version().value(), store::schema_version);

  // Everything version 3 wrote is still there, as it was: evaluations, kernel, measurement and
  // the profile with its raw output blob (which must still match its hash).
  auto list = s.list_evaluations("", 0).value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].outcome, "compile_error");
  evaluation e = s.get_evaluation(1).value();
  ASSERT_TRUE(e.paired.has_value());
  EXPECT_EQ(e.paired->b_seconds, (std::vector<double>{3.0e-5, 3.1e-5, 2.9e-5}));
  const std::string kh = "f00dfeedf00dfeedf00dfeedf00dfeed";
  EXPECT_EQ(s.get_kernel(kh).value().name, "vector_add_v1");
  EXPECT_TRUE(s.get_measurement("ceilings/cpu/Fixture CPU/x86-64-v3/2").value().has_value());
  auto profiles = s.profiles_for(kh).value();
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].created_at, "2025-01-02T03:10:00.000Z");
  EXPECT_EQ(profiles[0].tgt.device, "NVIDIA H200");
  EXPECT_EQ(profiles[0].kernels.size(), 2u);
  EXPECT_EQ(profiles[0].raw_csv, testing::sample_profile(kh).raw_csv);

  // v4: llm_calls, empty at first, then filled, selected by run, append-only and indexed.
  auto raw = testing::open_raw(file);
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM llm_calls"), 0);
  EXPECT_TRUE(s.llm_calls(std::nullopt).value().empty());
  EXPECT_EQ(s.add_llm_call(testing::sample_llm_call("run-1")).value(), 1);
  EXPECT_EQ(s.add_llm_call(testing::sample_llm_call(std::nullopt)).value(), 2);
  EXPECT_EQ(s.llm_calls("run-1").value().size(), 1u);
  EXPECT_EQ(s.llm_calls(std::nullopt).value().size(), 2u);
  for (const char* sql : {"UPDATE llm_calls SET model = 'x'", "DELETE FROM llm_calls"}) {
    auto r = testing::exec(raw.get(), sql);
    EXPECT_NE(r.rc, SQLITE_OK) << sql;
    EXPECT_NE(r.message.find("append-only"), std::string::npos) << r.message;
  }
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM llm_calls"), 2);
  EXPECT_EQ(testing::query_int(raw.get(),
                               "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                               "name = 'llm_calls_run_id'"),
            1);
  // A prompt blob must exist: the foreign key holds for new rows.
  auto orphan = testing::exec(
      raw.get(),
      "PRAGMA foreign_keys = ON; INSERT INTO llm_calls (created_at, provider, model, template_id, "
      "template_version, fields_hash, prompt_blob, tokens_in, tokens_out, latency_seconds, "
      "finish_reason, error_kind, error_message, attempts, request_id) VALUES ('t', 'p', 'm', "
      "'t', 1, 'h', 'no-such-blob', 0, 0, 0, 'stop', 'none', '', 1, '')");
  EXPECT_NE(orphan.rc, SQLITE_OK);

  // A fresh database and a migrated one have the same schema.
  ASSERT_TRUE(store::open(dir / "fresh.db").has_value());
  auto fresh = testing::open_raw(dir / "fresh.db");
  EXPECT_EQ(schema_of(raw.get()), schema_of(fresh.get()));
}

// The fixture is only a test of migration 5 if it is exactly what migrations 1 to 4 leave.
TEST(migrations, v4_fixture_matches_migrations_1_to_4) {
  temp_dir dir;
  build_from_fixture(dir / "fixture.db", "schema_v4.sql");
  auto migrated = testing::open_raw(dir / "migrated.db");
  ASSERT_TRUE(migrate(migrated.get(), 4).has_value());
  auto fixture_db = testing::open_raw(dir / "fixture.db");
  EXPECT_EQ(testing::query_int(fixture_db.get(), "PRAGMA user_version"), 4);
  EXPECT_EQ(schema_of(fixture_db.get()), schema_of(migrated.get()));
}

TEST(migrations, v4_database_gains_the_lineage_tables_and_keeps_its_data) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  build_from_fixture(file, "schema_v4.sql");
  auto opened = store::open(file);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  store& s = *opened;
  EXPECT_EQ(s.version().value(), store::schema_version);

  // Everything version 4 wrote is still there: evaluations, kernel, profile and the model call
  // with both its blobs (which must still match their hashes).
  ASSERT_EQ(s.list_evaluations("", 0).value().size(), 2u);
  const std::string kh = "f00dfeedf00dfeedf00dfeedf00dfeed";
  EXPECT_EQ(s.get_kernel(kh).value().name, "vector_add_v1");
  EXPECT_EQ(s.profiles_for(kh).value().size(), 1u);
  auto calls = s.llm_calls("run-7").value();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].created_at, "2025-01-02T03:20:00.000Z");
  EXPECT_EQ(calls[0].template_id, "propose_backward");
  EXPECT_EQ(calls[0].tokens_in, 1234);
  ASSERT_TRUE(calls[0].reply.has_value());
  EXPECT_EQ(*calls[0].reply, R"({"action":"unvectorize","locus":"gemm_kernel/k"})");
  EXPECT_NE(calls[0].prompt.find("Remove one optimization."), std::string::npos);

  // v5: the lineage side, empty at first, then written through the store.
  auto raw = testing::open_raw(file);
  for (const char* table :
       {"runs", "run_events", "expert_checks", "lineages", "cards", "card_trials"})
    EXPECT_EQ(testing::query_int(raw.get(), std::string("SELECT count(*) FROM ") + table), 0)
        << table;
  EXPECT_TRUE(s.list_runs("", 0).value().empty());
  EXPECT_TRUE(s.list_cards("").value().empty());
  run r;
  r.id = "run-1";
  r.kind = run_kind::decompose;
  r.task = "gemm";
  ASSERT_TRUE(s.put_run(r).has_value());
  EXPECT_EQ(s.add_run_event("run-1", "backward_accepted", R"({"step": 1})").value(), 1);
  skill_card c;
  c.id = "card-1";
  c.name = "add-simd";
  c.op = "gemm";
  ASSERT_TRUE(s.put_card(c).has_value());
  card_trial t;
  t.task = "layernorm";
  ASSERT_TRUE(s.add_card_trial("card-1", t).has_value());
  EXPECT_EQ(s.get_card("add-simd").value()->trials.size(), 1u);
  // The new append-only tables refuse UPDATE and DELETE like the old ones.
  for (const char* sql : {"UPDATE run_events SET kind = 'x'", "DELETE FROM run_events",
                          "UPDATE card_trials SET task = 'x'", "DELETE FROM card_trials"}) {
    auto x = testing::exec(raw.get(), sql);
    EXPECT_NE(x.rc, SQLITE_OK) << sql;
    EXPECT_NE(x.message.find("append-only"), std::string::npos) << x.message;
  }

  // A fresh database and a migrated one have the same schema.
  ASSERT_TRUE(store::open(dir / "fresh.db").has_value());
  auto fresh = testing::open_raw(dir / "fresh.db");
  EXPECT_EQ(schema_of(raw.get()), schema_of(fresh.get()));
}

}  // namespace
}  // namespace lathe
