#include <cstdint>
#include "store/store.h"

#include <sqlite3.h>

#include <chrono>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "core/hash.h"
#include "core/json.h"
#include "store/migrations.h"
#include "store/sql.h"

namespace lathe {

namespace {

// Long enough to wait out another lathe process committing an evaluation or running a
// migration (milliseconds); short enough that a stuck process is reported instead of hanging.
constexpr int busy_timeout_ms = 10'000;

constexpr const char* now_sql = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

// Compiler logs and worker stderr may hold bytes that are not UTF-8; nlohmann's default dump
// throws on them, which would lose the whole evaluation. Replacing them loses only those bytes.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// journal_mode=WAL needs a moment alone with the file; when another process is opening the same
// new database it answers with the old mode instead of waiting, so ask again for a while.
result<void> enable_wal(sqlite3* db) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  for (;;) {
    auto s = sql::statement::prepare(db, "PRAGMA journal_mode = WAL");
    if (!s) return tl::unexpected(s.error());
    auto row = s->step();
    if (row && *row && s->text(0) == "wal") return {};
    if (std::chrono::steady_clock::now() > deadline) {
      if (!row) return tl::unexpected(row.error());
      return fail(errc::store_error,
                  sqlite_message(db,
                                 "cannot switch to WAL mode (is the file on a network file "
                                 "system, or held by another program?)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The sources of a kernel as one blob: "lathe-sources 1\n", then per file "<n>:<path><m>:<text>".
// Length-prefixed rather than JSON because a source file need not be valid UTF-8.
std::string pack_sources(const std::map<std::string, std::string>& sources) {
  std::string out = "lathe-sources 1\n";
  for (const auto& [path, text] : sources) {
    out += std::to_string(path.size()) + ":" + path;
    out += std::to_string(text.size()) + ":" + text;
  }
  return out;
}

std::optional<std::map<std::string, std::string>> unpack_sources(std::string_view in) {
  constexpr std::string_view header = "lathe-sources 1\n";
  if (in.substr(0, header.size()) != header) return std::nullopt;
  in.remove_prefix(header.size());
  auto field = [&in]() -> std::optional<std::string> {
    size_t colon = in.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon > 19) return std::nullopt;
    size_t n = 0;
    for (char c : in.substr(0, colon)) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    in.remove_prefix(colon + 1);
    if (n > in.size()) return std::nullopt;
    std::string v(in.substr(0, n));
    in.remove_prefix(n);
    return v;
  };
  std::map<std::string, std::string> out;
  while (!in.empty()) {
    auto path = field();
    auto text = path ? field() : std::nullopt;
    if (!text) return std::nullopt;
    out.emplace(std::move(*path), std::move(*text));
  }
  return out;
}

// Sample series names, as the samples table's CHECK constraint spells them.
constexpr const char* candidate = "candidate";
constexpr const char* baseline = "baseline";
constexpr const char* aa_a = "aa_a";
constexpr const char* aa_b = "aa_b";

}  // namespace

void store::closer::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

store::store(sqlite3* db) : db_(db) {}
store::store(store&&) noexcept = default;
store& store::operator=(store&&) noexcept = default;
store::~store() = default;

result<store> store::open(const std::filesystem::path& db_file) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(db_file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  store s(raw);  // SQLite hands out a handle even on failure; it must be closed too
  if (rc != SQLITE_OK)
    return fail(errc::store_error, db_file.string() +
                                       ": cannot open the database (does its directory exist, and "
                                       "is it writable?): " +
                                       (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  sqlite3_extended_result_codes(raw, 1);

  // Before anything writes: switching to WAL rewrites the file header, and a database from a
  // newer lathe must be left exactly as it was. This read also rejects a file that is not a
  // database at all ("file is not a database").
  if (auto r = check_known_version(raw); !r) return tl::unexpected(r.error());
  if (auto r = enable_wal(raw); !r) return tl::unexpected(r.error());
  // Per connection, and off by default in SQLite: kernels must not point at missing blobs.
  if (auto r = sql::exec(raw, "PRAGMA foreign_keys = ON"); !r) return tl::unexpected(r.error());
  // WAL's recommended durability: a commit is written to the log without an fsync of its own
  // (the log is synced at checkpoints). A crash of lathe or of any process loses nothing
  // committed; only a power loss may lose the last commits, never the database. With an fsync per
  // commit, 32 processes storing at once took ~100 evaluations a second and one add waited past
  // the 10 s busy timeout and was lost (bench/store/store_writes, bench/results/store-writes-2026-12-07.md).
  if (auto r = sql::exec(raw, "PRAGMA synchronous = NORMAL"); !r) return tl::unexpected(r.error());
  if (auto r = migrate(raw, schema_version); !r) return tl::unexpected(r.error());
  return s;
}

result<int> store::version() const {
  return schema_version_of(db_.get());
}

result<std::string> store::put_blob(std::string_view bytes) {
  std::string hash = content_hash(bytes);
  auto s = sql::statement::prepare(db_.get(),
                                   "INSERT INTO blobs (hash, size, data) VALUES (?1, ?2, ?3) "
                                   "ON CONFLICT (hash) DO NOTHING");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, hash).bind(2, static_cast<int64_t>(bytes.size())).bind_blob(3, bytes);
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  return hash;
}

result<std::string> store::get_blob(const std::string& hash) const {
  auto s = sql::statement::prepare(db_.get(), "SELECT data FROM blobs WHERE hash = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, hash);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return fail(errc::not_found, db_file(db_.get()) + ": no blob " + hash);
  std::string data = s->blob(0);
  // Content addressing makes corruption detectable; a silently wrong kernel source would be
  // worse than an error.
  if (content_hash(data) != hash)
    return fail(errc::store_error,
                db_file(db_.get()) + ": blob " + hash + " does not match its hash (corrupt)");
  return data;
}

result<void> store::put_kernel(const kernel_bundle& k) {
  if (k.hash.empty())
    return fail(errc::invalid_argument, "put_kernel: kernel '" + k.name + "' has no hash");
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto blob = put_blob(pack_sources(k.sources));
  if (!blob) return tl::unexpected(blob.error());
  auto s = sql::statement::prepare(
      db_.get(),
      "INSERT INTO kernels (hash, name, language, manifest_json, sources_blob) "
      "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (hash) DO NOTHING");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, k.hash).bind(2, k.name).bind(3, std::string_view(to_string(k.manifest.lang)));
  s->bind(4, dump(json(k.manifest))).bind(5, *blob);
  if (auto r = s->run(); !r) return r;
  return tx->commit();
}

result<kernel_bundle> store::get_kernel(const std::string& hash) const {
  auto s = sql::statement::prepare(
      db_.get(), "SELECT name, manifest_json, sources_blob FROM kernels WHERE hash = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, hash);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return fail(errc::not_found, db_file(db_.get()) + ": no kernel " + hash);
  kernel_bundle k;
  k.name = s->text(0);
  k.hash = hash;
  try {
    json::parse(s->text(1)).get_to(k.manifest);
  } catch (const std::exception& ex) {
    return fail(errc::store_error, db_file(db_.get()) + ": kernel " + hash +
                                       " has an unreadable manifest: " + ex.what());
  }
  auto blob = get_blob(s->text(2));
  if (!blob) return tl::unexpected(blob.error());
  auto sources = unpack_sources(*blob);
  if (!sources)
    return fail(errc::store_error, db_file(db_.get()) + ": kernel " + hash +
                                       " has unreadable sources (blob " + s->text(2) + ")");
  k.sources = std::move(*sources);
  return k;
}

result<int64_t> store::add_evaluation(const evaluation& e) {
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO evaluations (created_at, task, kernel_hash, "
                             "kernel_name, baseline_hash, outcome, message, result_json, "
                             "provenance, target_arch) VALUES (") +
                     now_sql + ", ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, e.task).bind(2, e.kernel_hash).bind(3, e.kernel_name).bind(4, e.baseline_hash);
  s->bind(5, to_string(e.result)).bind(6, e.message).bind(7, dump(json(e)));
  s->bind(8, to_string(e.prov)).bind(9, e.tgt.arch);
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  int64_t id = sqlite3_last_insert_rowid(db_.get());

  auto ins = sql::statement::prepare(db_.get(),
                                     "INSERT INTO samples (evaluation_id, series, round, seconds) "
                                     "VALUES (?1, ?2, ?3, ?4)");
  if (!ins) return tl::unexpected(ins.error());
  auto put = [&](const char* series, const std::vector<double>& v) -> result<void> {
    for (size_t i = 0; i < v.size(); ++i) {
      ins->reset();
      ins->bind(1, id).bind(2, std::string_view(series)).bind(3, static_cast<int64_t>(i));
      ins->bind(4, v[i]);  // SQLite stores NaN as NULL; get_evaluation reads it back as NaN
      if (auto r = ins->run(); !r) return r;
    }
    return {};
  };
  for (const auto& [p, a, b] :
       {std::tuple{&e.paired, candidate, baseline}, std::tuple{&e.aa, aa_a, aa_b}}) {
    if (!p->has_value()) continue;
    if (auto r = put(a, (*p)->a_seconds); !r) return tl::unexpected(r.error());
    if (auto r = put(b, (*p)->b_seconds); !r) return tl::unexpected(r.error());
  }
  if (auto r = tx->commit(); !r) return tl::unexpected(r.error());
  return id;
}

result<evaluation> store::get_evaluation(int64_t id) const {
  auto s = sql::statement::prepare(db_.get(), "SELECT result_json FROM evaluations WHERE id = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, id);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row)
    return fail(errc::not_found, db_file(db_.get()) + ": no evaluation " + std::to_string(id));
  evaluation e;
  try {
    json::parse(s->text(0)).get_to(e);
  } catch (const std::exception& ex) {
    return fail(errc::store_error, db_file(db_.get()) + ": evaluation " + std::to_string(id) +
                                       " has unreadable JSON: " + ex.what());
  }
  e.id = id;

  // The sample rows are the raw record; they replace the copies inside the JSON.
  auto q =
      sql::statement::prepare(db_.get(),
                              "SELECT series, round, seconds FROM samples WHERE evaluation_id = ?1 "
                              "ORDER BY series, round");
  if (!q) return tl::unexpected(q.error());
  q->bind(1, id);
  std::map<std::string, std::vector<double>> series;
  for (;;) {
    auto r = q->step();
    if (!r) return tl::unexpected(r.error());
    if (!*r) break;
    auto& v = series[q->text(0)];
    auto round = static_cast<size_t>(q->int64(1));
    if (round >= v.size()) v.resize(round + 1, std::numeric_limits<double>::quiet_NaN());
    v[round] = q->real(2).value_or(std::numeric_limits<double>::quiet_NaN());
  }
  auto fill = [&series](std::optional<paired_series>& p, const char* a, const char* b) {
    if (!p) return;
    if (auto it = series.find(a); it != series.end()) p->a_seconds = it->second;
    if (auto it = series.find(b); it != series.end()) p->b_seconds = it->second;
  };
  fill(e.paired, candidate, baseline);
  fill(e.aa, aa_a, aa_b);
  return e;
}

result<std::vector<evaluation_summary>> store::list_evaluations(const std::string& task_filter,
                                                                int limit) const {
  // Two spellings rather than "?1 = '' OR task = ?1", which keeps SQLite off the task index.
  std::string q =
      "SELECT id, created_at, task, kernel_name, kernel_hash, outcome, result_json "
      "FROM evaluations ";
  if (!task_filter.empty()) q += "WHERE task = ?2 ";
  q += "ORDER BY id DESC LIMIT ?1";  // newest first; LIMIT -1 is SQLite for "no limit"
  auto s = sql::statement::prepare(db_.get(), q);
  if (!s) return tl::unexpected(s.error());
  s->bind(1, static_cast<int64_t>(limit > 0 ? limit : -1));
  if (!task_filter.empty()) s->bind(2, task_filter);
  std::vector<evaluation_summary> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    evaluation_summary sum{s->int64(0), s->text(1), s->text(2),  s->text(3),
                           s->text(4),  s->text(5), std::nullopt};
    // A listing should not fail over one unreadable record: that row just shows no speedup.
    try {
      evaluation e = json::parse(s->text(6)).get<evaluation>();
      if (e.paired && e.paired->ratio > 0.0) sum.speedup = e.paired->ratio;
    } catch (const std::exception&) {
    }
    out.push_back(std::move(sum));
  }
}

result<int64_t> store::add_profile(const profile& p) {
  if (p.kernel_hash.empty())
    return fail(errc::invalid_argument, "add_profile: the profile names no kernel hash");
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto raw = put_blob(p.raw_csv);
  if (!raw) return tl::unexpected(raw.error());
  // The raw output lives in its blob only; the JSON holds the parsed figures.
  profile body = p;
  body.id = 0;
  body.created_at.clear();
  body.raw_csv.clear();
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO profiles (created_at, kernel_hash, task, shape_set, "
                             "target_device, target_arch, tool, tool_version, raw_blob, "
                             "profile_json) VALUES (") +
                     now_sql + ", ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, p.kernel_hash).bind(2, p.task).bind(3, p.shape_set).bind(4, p.tgt.device);
  s->bind(5, p.tgt.arch).bind(6, p.tool).bind(7, p.tool_version).bind(8, *raw);
  s->bind(9, dump(json(body)));
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  const int64_t id = sqlite3_last_insert_rowid(db_.get());
  if (auto r = tx->commit(); !r) return tl::unexpected(r.error());
  return id;
}

result<std::vector<profile>> store::profiles_for(const std::string& kernel_hash) const {
  auto s = sql::statement::prepare(
      db_.get(),
      "SELECT id, created_at, raw_blob, profile_json FROM profiles WHERE kernel_hash = ?1 "
      "ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, kernel_hash);
  std::vector<profile> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    profile p;
    try {
      json::parse(s->text(3)).get_to(p);
    } catch (const std::exception& ex) {
      return fail(errc::store_error, db_file(db_.get()) + ": profile " +
                                         std::to_string(s->int64(0)) +
                                         " has unreadable JSON: " + ex.what());
    }
    p.id = s->int64(0);
    p.created_at = s->text(1);
    auto raw = get_blob(s->text(2));
    if (!raw) return tl::unexpected(raw.error());
    p.raw_csv = std::move(*raw);
    out.push_back(std::move(p));
  }
}

result<void> store::put_measurement(const std::string& key, const std::string& json_text) {
  if (!json::accept(json_text))
    return fail(errc::invalid_argument, "measurement '" + key + "' is not valid JSON");
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO measurements (key, json, updated_at) VALUES (?1, ?2, ") +
                     now_sql + ") ON CONFLICT (key) DO UPDATE SET json = excluded.json, " +
                     "updated_at = excluded.updated_at");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, key).bind(2, json_text);
  return s->run();
}

result<std::optional<std::string>> store::get_measurement(const std::string& key) const {
  auto s = sql::statement::prepare(db_.get(), "SELECT json FROM measurements WHERE key = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, key);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(s->text(0));
}

}  // namespace lathe
