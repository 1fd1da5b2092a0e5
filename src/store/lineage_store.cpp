// The lineage side of the store (schema version 5): runs and their append-only events, lathe
// init's expert checks, lineages, cards and their append-only trials.
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "core/json_card.h"
#include "core/json_lineage.h"
#include "core/json_run.h"
#include "store/migrations.h"
#include "store/sql.h"
#include "store/store.h"

namespace lathe {

namespace {

constexpr const char* now_sql = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A stored JSON column that no longer parses is an error that names the row: silently skipping
// it would make a run or a card vanish from the user's view.
template <class T>
result<T> parse_row(sqlite3* db, const char* table, const std::string& key, const std::string& text) {
  try {
    return json::parse(text).get<T>();
  } catch (const std::exception& ex) {
    return fail(errc::store_error,
                db_file(db) + ": " + table + " '" + key + "' has unreadable JSON: " + ex.what());
  }
}

}  // namespace

// ---- runs -----------------------------------------------------------------------------------

result<void> store::put_run(const run& r) {
  if (r.id.empty()) return fail(errc::invalid_argument, "a run needs an id");
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto old = get_run(r.id);
  if (!old) return tl::unexpected(old.error());
  run body = r;
  // The store sets both times (store.h): a caller's created_at (a run copied from another
  // workspace, a stale struct) would misplace the run in list_runs' newest-first order.
  body.created_at.clear();
  if (*old) {
    body.kind = (*old)->kind;
    body.task = (*old)->task;
    body.created_at = (*old)->created_at;
  }
  auto now = sql::statement::prepare(db_.get(), std::string("SELECT ") + now_sql);
  if (!now) return tl::unexpected(now.error());
  if (auto row = now->step(); !row) return tl::unexpected(row.error());
  body.updated_at = now->text(0);
  if (body.created_at.empty()) body.created_at = body.updated_at;
  auto s = sql::statement::prepare(
      db_.get(),
      "INSERT INTO runs (id, kind, task, created_at, updated_at, state, run_json) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO UPDATE SET "
      "updated_at = excluded.updated_at, state = excluded.state, run_json = excluded.run_json");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, body.id).bind(2, to_string(body.kind)).bind(3, body.task).bind(4, body.created_at);
  s->bind(5, body.updated_at).bind(6, to_string(body.state)).bind(7, dump(json(body)));
  if (auto x = s->run(); !x) return x;
  return tx->commit();
}

result<run> store::run_to_resume(const std::string& id, run_kind kind) const {
  auto got = get_run(id);
  if (!got) return tl::unexpected(got.error());
  if (!*got)
    return fail(errc::not_found, "no run '" + id + "' to resume (`lathe runs list --kind " + to_string(kind) + "`)");
  if ((*got)->kind != kind)
    return fail(errc::invalid_argument, "run '" + id + "' is " + a_run((*got)->kind) + ", not " + a_run(kind));
  return std::move(**got);
}

result<std::optional<run>> store::get_run(const std::string& id) const {
  auto s = sql::statement::prepare(db_.get(), "SELECT run_json FROM runs WHERE id = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, id);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<run>();
  auto r = parse_row<run>(db_.get(), "run", id, s->text(0));
  if (!r) return tl::unexpected(r.error());
  return std::optional<run>(std::move(*r));
}

result<std::vector<run>> store::list_runs(const std::string& kind_filter, int limit) const {
  std::string q = "SELECT id, run_json FROM runs";
  if (!kind_filter.empty()) q += " WHERE kind = ?1";
  q += " ORDER BY created_at DESC, id DESC";
  if (limit > 0) q += " LIMIT " + std::to_string(limit);
  auto s = sql::statement::prepare(db_.get(), q);
  if (!s) return tl::unexpected(s.error());
  if (!kind_filter.empty()) s->bind(1, kind_filter);
  std::vector<run> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    auto r = parse_row<run>(db_.get(), "run", s->text(0), s->text(1));
    if (!r) return tl::unexpected(r.error());
    out.push_back(std::move(*r));
  }
}

result<int64_t> store::add_run_event(const std::string& run_id, const std::string& kind,
                                     const std::string& json_text) {
  if (!json::accept(json_text))
    return fail(errc::invalid_argument, "run event '" + kind + "' is not valid JSON");
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto exists = get_run(run_id);
  if (!exists) return tl::unexpected(exists.error());
  if (!*exists) return fail(errc::not_found, "no run '" + run_id + "' to add an event to");
  auto next = sql::statement::prepare(
      db_.get(), "SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?1");
  if (!next) return tl::unexpected(next.error());
  next->bind(1, run_id);
  if (auto row = next->step(); !row) return tl::unexpected(row.error());
  const int64_t seq = next->int64(0);
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO run_events (run_id, seq, created_at, kind, json) "
                             "VALUES (?1, ?2, ") +
                     now_sql + ", ?3, ?4)");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, run_id).bind(2, seq).bind(3, kind).bind(4, json_text);
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  if (auto r = tx->commit(); !r) return tl::unexpected(r.error());
  return seq;
}

result<std::vector<run_event>> store::run_events(const std::string& run_id) const {
  auto s = sql::statement::prepare(
      db_.get(),
      "SELECT seq, created_at, kind, json FROM run_events WHERE run_id = ?1 ORDER BY seq");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, run_id);
  std::vector<run_event> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    out.push_back({s->int64(0), s->text(1), s->text(2), s->text(3)});
  }
}

// ---- expert checks --------------------------------------------------------------------------

result<int64_t> store::add_expert_check(const expert_check& c) {
  expert_check body = c;
  body.id = 0;
  body.created_at.clear();
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO expert_checks (created_at, task, kernel_hash, accepted, "
                             "json) VALUES (") +
                     now_sql + ", ?1, ?2, ?3, ?4)");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, c.task).bind(2, c.kernel).bind(3, int64_t{c.accepted ? 1 : 0}).bind(4, dump(json(body)));
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  return sqlite3_last_insert_rowid(db_.get());
}

result<std::optional<expert_check>> store::latest_expert_check(const std::string& task,
                                                               const std::string& kernel_hash) const {
  auto s = sql::statement::prepare(
      db_.get(),
      "SELECT id, created_at, json FROM expert_checks WHERE task = ?1 AND kernel_hash = ?2 "
      "ORDER BY id DESC LIMIT 1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, task).bind(2, kernel_hash);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<expert_check>();
  auto c = parse_row<expert_check>(db_.get(), "expert check", std::to_string(s->int64(0)), s->text(2));
  if (!c) return tl::unexpected(c.error());
  c->id = s->int64(0);
  c->created_at = s->text(1);
  return std::optional<expert_check>(std::move(*c));
}

// ---- lineages -------------------------------------------------------------------------------

result<void> store::put_lineage(const lineage& l) {
  if (l.id.empty()) return fail(errc::invalid_argument, "a lineage needs an id");
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO lineages (id, task, run_id, updated_at, json) VALUES "
                             "(?1, ?2, ?3, ") +
                     now_sql +
                     ", ?4) ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, "
                     "json = excluded.json");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, l.id).bind(2, l.task).bind(3, l.run_id).bind(4, dump(json(l)));
  return s->run();
}

result<std::optional<lineage>> store::get_lineage(const std::string& id) const {
  auto s = sql::statement::prepare(db_.get(), "SELECT json FROM lineages WHERE id = ?1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, id);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<lineage>();
  auto l = parse_row<lineage>(db_.get(), "lineage", id, s->text(0));
  if (!l) return tl::unexpected(l.error());
  return std::optional<lineage>(std::move(*l));
}

result<std::vector<lineage>> store::list_lineages(const std::string& task_filter) const {
  std::string q = "SELECT id, json FROM lineages";
  if (!task_filter.empty()) q += " WHERE task = ?1";
  q += " ORDER BY rowid";
  auto s = sql::statement::prepare(db_.get(), q);
  if (!s) return tl::unexpected(s.error());
  if (!task_filter.empty()) s->bind(1, task_filter);
  std::vector<lineage> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    auto l = parse_row<lineage>(db_.get(), "lineage", s->text(0), s->text(1));
    if (!l) return tl::unexpected(l.error());
    out.push_back(std::move(*l));
  }
}

// ---- cards ----------------------------------------------------------------------------------

namespace {

result<std::vector<card_trial>> trials_of(sqlite3* db, const std::string& card_id) {
  auto s = sql::statement::prepare(
      db, "SELECT id, created_at, json FROM card_trials WHERE card_id = ?1 ORDER BY id");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, card_id);
  std::vector<card_trial> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return out;
    auto t = parse_row<card_trial>(db, "card trial", std::to_string(s->int64(0)), s->text(2));
    if (!t) return tl::unexpected(t.error());
    t->created_at = s->text(1);
    out.push_back(std::move(*t));
  }
}

}  // namespace

result<void> store::put_card(const skill_card& c) {
  if (c.id.empty() || c.name.empty())
    return fail(errc::invalid_argument, "a card needs an id and a name");
  auto tx = sql::transaction::begin(db_.get());
  if (!tx) return tl::unexpected(tx.error());
  auto clash = sql::statement::prepare(db_.get(), "SELECT id FROM cards WHERE name = ?1 AND id != ?2");
  if (!clash) return tl::unexpected(clash.error());
  clash->bind(1, c.name).bind(2, c.id);
  auto row = clash->step();
  if (!row) return tl::unexpected(row.error());
  if (*row)
    return fail(errc::invalid_argument, "card name '" + c.name + "' is already used by card " + clash->text(0));
  skill_card body = c;
  body.trials.clear();  // card_trials holds them
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO cards (id, name, operator, status, updated_at, json) "
                             "VALUES (?1, ?2, ?3, ?4, ") +
                     now_sql +
                     ", ?5) ON CONFLICT (id) DO UPDATE SET name = excluded.name, operator = "
                     "excluded.operator, status = excluded.status, updated_at = "
                     "excluded.updated_at, json = excluded.json");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, c.id).bind(2, c.name).bind(3, c.op).bind(4, to_string(c.status)).bind(5, dump(json(body)));
  if (auto r = s->run(); !r) return r;
  return tx->commit();
}

result<std::optional<skill_card>> store::get_card(const std::string& id_or_name) const {
  auto s = sql::statement::prepare(
      db_.get(), "SELECT id, json FROM cards WHERE id = ?1 OR name = ?1 ORDER BY id = ?1 DESC LIMIT 1");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, id_or_name);
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<skill_card>();
  auto c = parse_row<skill_card>(db_.get(), "card", s->text(0), s->text(1));
  if (!c) return tl::unexpected(c.error());
  auto t = trials_of(db_.get(), c->id);
  if (!t) return tl::unexpected(t.error());
  c->trials = std::move(*t);
  return std::optional<skill_card>(std::move(*c));
}

result<std::vector<skill_card>> store::list_cards(const std::string& op_filter) const {
  std::string q = "SELECT id, json FROM cards";
  if (!op_filter.empty()) q += " WHERE operator = ?1";
  q += " ORDER BY name";
  auto s = sql::statement::prepare(db_.get(), q);
  if (!s) return tl::unexpected(s.error());
  if (!op_filter.empty()) s->bind(1, op_filter);
  std::vector<skill_card> out;
  for (;;) {
    auto row = s->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    auto c = parse_row<skill_card>(db_.get(), "card", s->text(0), s->text(1));
    if (!c) return tl::unexpected(c.error());
    out.push_back(std::move(*c));
  }
  for (auto& c : out) {
    auto t = trials_of(db_.get(), c.id);
    if (!t) return tl::unexpected(t.error());
    c.trials = std::move(*t);
  }
  return out;
}

result<int64_t> store::add_card_trial(const std::string& card_id, const card_trial& t) {
  auto exists = sql::statement::prepare(db_.get(), "SELECT 1 FROM cards WHERE id = ?1");
  if (!exists) return tl::unexpected(exists.error());
  exists->bind(1, card_id);
  auto row = exists->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return fail(errc::not_found, "no card '" + card_id + "' to log a trial for");
  card_trial body = t;
  body.created_at.clear();
  auto s = sql::statement::prepare(
      db_.get(), std::string("INSERT INTO card_trials (card_id, created_at, task, verdict, json) "
                             "VALUES (?1, ") +
                     now_sql + ", ?2, ?3, ?4)");
  if (!s) return tl::unexpected(s.error());
  s->bind(1, card_id).bind(2, t.task).bind(3, to_string(t.verdict)).bind(4, dump(json(body)));
  if (auto r = s->run(); !r) return tl::unexpected(r.error());
  return sqlite3_last_insert_rowid(db_.get());
}

}  // namespace lathe
