// The store's schema history. Migration i takes a database from version i-1 to i; each runs in
// its own immediate transaction and records its number in `PRAGMA user_version`, so a crash
// between two migrations leaves a database at a version this binary still knows how to finish.
// Migrations are never edited once released: tests/store/fixtures/schema_v<N>.sql freezes each.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "core/error.h"

struct sqlite3;

namespace lathe {

struct migration {
  int version = 0;       // the version this migration produces
  std::string_view why;  // one line, for error messages
  std::string_view sql;  // statements run before `fixup`
  // Runs inside the migration's transaction, between `sql` and `sql_after` (backfills that
  // need C++, e.g. parsing stored JSON). May be null.
  result<void> (*fixup)(sqlite3* db) = nullptr;
  std::string_view sql_after;
};

// Every migration, in order: migrations()[i].version == i + 1.
std::span<const migration> migrations();

// The database's user_version (0 for a new, empty file).
result<int> schema_version_of(sqlite3* db);

// Refuses a database whose version is newer than the newest migration, before anything writes
// to it (a newer lathe's data must not be half-understood or "repaired" by an older one).
result<void> check_known_version(sqlite3* db);

// Brings `db` to version `target` (at most the newest migration). Safe when several processes
// open one new database at once: the version is re-read under the write lock before each step.
// A database newer than the newest migration is refused without being touched.
result<void> migrate(sqlite3* db, int target);

// The database's file name, for messages (":memory:" for an in-memory one).
std::string db_file(sqlite3* db);

// "<db file>: <what>: <sqlite3_errmsg>" — the message every store error carries.
std::string sqlite_message(sqlite3* db, std::string_view what);

}  // namespace lathe
