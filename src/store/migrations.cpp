#include "store/migrations.h"

#include <sqlite3.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "core/evaluation.h"
#include "core/json.h"
#include "store/sql.h"

namespace lathe {

namespace {

// Version 1. Frozen: tests/store/fixtures/schema_v1.sql holds the same DDL, and store_test
// checks that the two agree statement for statement.
constexpr std::string_view v1_sql = R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE blobs (
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE kernels (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  language TEXT NOT NULL,
  manifest_json TEXT NOT NULL,
  sources_blob TEXT NOT NULL REFERENCES blobs(hash)
);
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  task TEXT NOT NULL,
  kernel_hash TEXT NOT NULL,
  kernel_name TEXT NOT NULL,
  baseline_hash TEXT NOT NULL,
  outcome TEXT NOT NULL,
  message TEXT NOT NULL,
  result_json TEXT NOT NULL
);
CREATE TABLE samples (
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id),
  series TEXT NOT NULL CHECK (series IN ('candidate', 'baseline', 'aa_a', 'aa_b')),
  round INTEGER NOT NULL,
  seconds REAL,
  PRIMARY KEY (evaluation_id, series, round)
);
CREATE TRIGGER blobs_no_update BEFORE UPDATE ON blobs
BEGIN SELECT RAISE(ABORT, 'append-only: blobs are content-addressed and never change'); END;
CREATE TRIGGER blobs_no_delete BEFORE DELETE ON blobs
BEGIN SELECT RAISE(ABORT, 'append-only: blobs are never deleted'); END;
CREATE TRIGGER kernels_no_update BEFORE UPDATE ON kernels
BEGIN SELECT RAISE(ABORT, 'append-only: a kernel version is immutable'); END;
CREATE TRIGGER kernels_no_delete BEFORE DELETE ON kernels
BEGIN SELECT RAISE(ABORT, 'append-only: kernels are never deleted'); END;
CREATE TRIGGER evaluations_no_update BEFORE UPDATE ON evaluations
BEGIN SELECT RAISE(ABORT, 'append-only: evaluations are never changed'); END;
CREATE TRIGGER evaluations_no_delete BEFORE DELETE ON evaluations
BEGIN SELECT RAISE(ABORT, 'append-only: evaluations are never deleted, failures included'); END;
CREATE TRIGGER samples_no_update BEFORE UPDATE ON samples
BEGIN SELECT RAISE(ABORT, 'append-only: raw samples are never changed'); END;
CREATE TRIGGER samples_no_delete BEFORE DELETE ON samples
BEGIN SELECT RAISE(ABORT, 'append-only: raw samples are never deleted'); END;
INSERT INTO meta (key, value) VALUES ('created_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
)sql";

// Version 2: provenance and target as columns (reports filter on them without parsing JSON),
// the measurement cache, and indexes for the two lookups every verb makes. The update trigger on
// evaluations is lifted only inside this transaction, for the backfill of the new columns.
constexpr std::string_view v2_sql = R"sql(
ALTER TABLE evaluations ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
ALTER TABLE evaluations ADD COLUMN target_arch TEXT NOT NULL DEFAULT '';
CREATE TABLE measurements (
  key TEXT PRIMARY KEY,
  json TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX evaluations_task ON evaluations(task);
CREATE INDEX evaluations_kernel_hash ON evaluations(kernel_hash);
DROP TRIGGER evaluations_no_update;
)sql";

constexpr std::string_view v2_sql_after = R"sql(
CREATE TRIGGER evaluations_no_update BEFORE UPDATE ON evaluations
BEGIN SELECT RAISE(ABORT, 'append-only: evaluations are never changed'); END;
)sql";

// Fills provenance and target_arch of version-1 rows from their stored evaluation. A row whose
// JSON does not parse keeps '' rather than failing the migration: refusing to open a workspace
// over one odd old record would lock the user out of all the others.
result<void> backfill_v2(sqlite3* db) {
  auto select = sql::statement::prepare(db, "SELECT id, result_json FROM evaluations");
  auto update = sql::statement::prepare(
      db, "UPDATE evaluations SET provenance = ?1, target_arch = ?2 WHERE id = ?3");
  if (!select) return tl::unexpected(select.error());
  if (!update) return tl::unexpected(update.error());
  for (;;) {
    auto row = select->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return {};
    evaluation e;
    try {
      nlohmann::json::parse(select->text(1)).get_to(e);
    } catch (const std::exception&) {
      continue;
    }
    update->reset();
    update->bind(1, to_string(e.prov)).bind(2, e.tgt.arch).bind(3, select->int64(0));
    if (auto r = update->run(); !r) return r;
  }
}

// Version 3: hardware profiles (the gate's profile stage, gate/profile.h), append-only like
// evaluations. Bound to the kernel hash and the device; the profiler's raw output is a blob.
constexpr std::string_view v3_sql = R"sql(
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  kernel_hash TEXT NOT NULL,
  task TEXT NOT NULL,
  shape_set TEXT NOT NULL,
  target_device TEXT NOT NULL,
  target_arch TEXT NOT NULL,
  tool TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  raw_blob TEXT NOT NULL REFERENCES blobs(hash),
  profile_json TEXT NOT NULL
);
CREATE INDEX profiles_kernel_hash ON profiles(kernel_hash);
CREATE TRIGGER profiles_no_update BEFORE UPDATE ON profiles
BEGIN SELECT RAISE(ABORT, 'append-only: profiles are never changed'); END;
CREATE TRIGGER profiles_no_delete BEFORE DELETE ON profiles
BEGIN SELECT RAISE(ABORT, 'append-only: profiles are never deleted'); END;
)sql";

// Version 4: every model call (llm/call_log.h), append-only, so that a run can be audited and
// replayed. run_id is NULL for a call outside any run (`lathe doctor`); runs have no table yet,
// so it is plain text rather than a reference. cost_usd is NULL when no price was configured for
// the model: 0 would claim the call was free. The prompt is the rendered request as JSON, never
// its headers; reply_blob is NULL when no reply came (a timeout, a refused key).
constexpr std::string_view v4_sql = R"sql(
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  run_id TEXT,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  template_id TEXT NOT NULL,
  template_version INTEGER NOT NULL,
  fields_hash TEXT NOT NULL,
  prompt_blob TEXT NOT NULL REFERENCES blobs(hash),
  reply_blob TEXT REFERENCES blobs(hash),
  tokens_in INTEGER NOT NULL CHECK (tokens_in >= 0),
  tokens_out INTEGER NOT NULL CHECK (tokens_out >= 0),
  cost_usd REAL CHECK (cost_usd >= 0),
  latency_seconds REAL NOT NULL,
  finish_reason TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message TEXT NOT NULL,
  attempts INTEGER NOT NULL CHECK (attempts >= 0),
  request_id TEXT NOT NULL
);
CREATE INDEX llm_calls_run_id ON llm_calls(run_id);
CREATE TRIGGER llm_calls_no_update BEFORE UPDATE ON llm_calls
BEGIN SELECT RAISE(ABORT, 'append-only: model calls are never changed'); END;
CREATE TRIGGER llm_calls_no_delete BEFORE DELETE ON llm_calls
BEGIN SELECT RAISE(ABORT, 'append-only: model calls are never deleted, failures included'); END;
)sql";

// Version 5: the lineage side (issue 6). Runs and their events make decompose, optimize and
// evolve resumable: every accepted step, rejected attempt and card trial is appended as an event
// the moment it is known, so a killed run loses at most the work in flight. `runs`, `lineages`
// and `cards` are views that change (a run finishes, a lineage grows, a card is admitted) and
// may be updated; their history is the append-only `run_events`, `expert_checks` and
// `card_trials`.
constexpr std::string_view v5_sql = R"sql(
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  task TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  state TEXT NOT NULL,
  run_json TEXT NOT NULL
);
CREATE TABLE run_events (
  run_id TEXT NOT NULL REFERENCES runs(id),
  seq INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  kind TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE expert_checks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  task TEXT NOT NULL,
  kernel_hash TEXT NOT NULL,
  accepted INTEGER NOT NULL CHECK (accepted IN (0, 1)),
  json TEXT NOT NULL
);
CREATE INDEX expert_checks_task ON expert_checks(task, kernel_hash);
CREATE TABLE lineages (
  id TEXT PRIMARY KEY,
  task TEXT NOT NULL,
  run_id TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE cards (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  operator TEXT NOT NULL,
  status TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE card_trials (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  card_id TEXT NOT NULL REFERENCES cards(id),
  created_at TEXT NOT NULL,
  task TEXT NOT NULL,
  verdict TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX card_trials_card ON card_trials(card_id);
CREATE TRIGGER run_events_no_update BEFORE UPDATE ON run_events
BEGIN SELECT RAISE(ABORT, 'append-only: run events are never changed'); END;
CREATE TRIGGER run_events_no_delete BEFORE DELETE ON run_events
BEGIN SELECT RAISE(ABORT, 'append-only: run events are never deleted'); END;
CREATE TRIGGER expert_checks_no_update BEFORE UPDATE ON expert_checks
BEGIN SELECT RAISE(ABORT, 'append-only: expert checks are never changed'); END;
CREATE TRIGGER expert_checks_no_delete BEFORE DELETE ON expert_checks
BEGIN SELECT RAISE(ABORT, 'append-only: expert checks are never deleted'); END;
CREATE TRIGGER card_trials_no_update BEFORE UPDATE ON card_trials
BEGIN SELECT RAISE(ABORT, 'append-only: card trials are never changed'); END;
CREATE TRIGGER card_trials_no_delete BEFORE DELETE ON card_trials
BEGIN SELECT RAISE(ABORT, 'append-only: card trials are never deleted, failures included'); END;
)sql";

constexpr std::array<migration, 5> all = {{
    {1, "create the store", v1_sql, nullptr, {}},
    {2, "add provenance, target_arch, measurements and indexes", v2_sql, backfill_v2, v2_sql_after},
    {3, "add profiles", v3_sql, nullptr, {}},
    {4, "add llm_calls", v4_sql, nullptr, {}},
    {5, "add runs, run_events, expert_checks, lineages, cards and card_trials", v5_sql, nullptr, {}},
}};

}  // namespace

std::span<const migration> migrations() {
  return all;
}

std::string db_file(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  return file && *file ? file : ":memory:";
}

std::string sqlite_message(sqlite3* db, std::string_view what) {
  return db_file(db) + ": " + std::string(what) + ": " + sqlite3_errmsg(db);
}

result<int> schema_version_of(sqlite3* db) {
  auto v = sql::query_int(db, "PRAGMA user_version");
  if (!v) return tl::unexpected(v.error());
  return static_cast<int>(*v);
}

namespace {

tl::unexpected<error> too_new(sqlite3* db, int found) {
  return fail(errc::unsupported, db_file(db) + ": schema version " + std::to_string(found) +
                                     " was written by a newer lathe; this one knows versions up "
                                     "to " +
                                     std::to_string(all.size()) +
                                     ". Use the newer lathe, or another workspace (--workspace "
                                     "DIR). The file was left untouched");
}

}  // namespace

result<void> check_known_version(sqlite3* db) {
  auto v = schema_version_of(db);
  if (!v) return tl::unexpected(v.error());
  if (*v > static_cast<int>(all.size())) return too_new(db, *v);
  return {};
}

result<void> migrate(sqlite3* db, int target) {
  const int newest = static_cast<int>(all.size());
  if (target < 0 || target > newest)
    return fail(errc::internal, "migrate: no schema version " + std::to_string(target));
  for (;;) {
    // A cheap read first, so that opening an up-to-date database never takes the write lock.
    auto v = schema_version_of(db);
    if (!v) return tl::unexpected(v.error());
    if (*v > newest) return too_new(db, *v);
    if (*v >= target) return {};

    auto tx = sql::transaction::begin(db);
    if (!tx) return tl::unexpected(tx.error());
    // Re-read under the write lock: another process may have migrated since the read above.
    v = schema_version_of(db);
    if (!v) return tl::unexpected(v.error());
    if (*v > newest) return too_new(db, *v);
    if (*v >= target) return {};

    const migration& m = all[static_cast<size_t>(*v)];
    auto step_failed = [&](const error& e) {
      return fail(errc::store_error, "migrating to schema version " + std::to_string(m.version) +
                                         " (" + std::string(m.why) + "): " + e.message);
    };
    if (auto r = sql::exec(db, m.sql); !r) return step_failed(r.error());
    if (m.fixup)
      if (auto r = m.fixup(db); !r) return step_failed(r.error());
    if (!m.sql_after.empty())
      if (auto r = sql::exec(db, m.sql_after); !r) return step_failed(r.error());
    auto set = sql::exec(db, "PRAGMA user_version = " + std::to_string(m.version));
    if (!set) return step_failed(set.error());
    if (auto r = tx->commit(); !r) return step_failed(r.error());
  }
}

}  // namespace lathe
