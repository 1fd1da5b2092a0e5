// Thin RAII over the SQLite C API, private to store/: prepared statements, multi-statement exec
// and immediate transactions. Every failure becomes a lathe::error naming the database file and
// carrying sqlite3_errmsg, so a user can tell "disk full" from "locked" from "not a database".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace lathe::sql {

class statement {
 public:
  static result<statement> prepare(sqlite3* db, std::string_view sql);

  // Binds are 1-based, like SQLite's. A failing bind is reported by the next step().
  statement& bind(int i, std::string_view text);
  statement& bind(int i, int64_t v);
  statement& bind(int i, double v);
  statement& bind_blob(int i, std::string_view bytes);
  statement& bind_null(int i);

  result<bool> step();  // true: a row is ready; false: done
  result<void> run();   // steps once and expects no row (INSERT, UPDATE, DDL)
  result<void> reset();

  std::string text(int col) const;  // NULL reads as ""
  std::string blob(int col) const;
  int64_t int64(int col) const;
  std::optional<double> real(int col) const;  // NULL (SQLite's NaN) reads as nullopt
  bool is_null(int col) const;

 private:
  struct closer {
    void operator()(sqlite3_stmt* s) const;
  };
  statement(sqlite3* db, sqlite3_stmt* s, std::string sql);
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, closer> s_;
  std::string sql_;  // for error messages
  int bind_rc_ = 0;  // the first failing bind's code, SQLITE_OK when none
};

// Runs one or more statements without results (DDL, PRAGMA … = …).
result<void> exec(sqlite3* db, std::string_view sql);

// BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that reads and then
// writes can fail with SQLITE_BUSY without waiting when another process wrote in between (the
// busy timeout cannot help it), which is how two lathe processes would lose evaluations.
// Writers queue first on an flock of "<database>-writers" (beside it, in lathe's own folder):
// SQLite's busy handler sleeps up to 100 ms between tries, so a writer that has waited long loses
// to each newcomer; 32 processes storing at once left one waiting past the busy timeout, its
// evaluation lost (bench/store/store_writes). A blocking flock, released with the transaction
// (committed, rolled back, or its process gone).
class transaction {
 public:
  static result<transaction> begin(sqlite3* db);
  transaction(transaction&& o) noexcept;
  transaction& operator=(transaction&&) = delete;
  ~transaction();  // rolls back unless committed
  result<void> commit();

 private:
  transaction(sqlite3* db, int lock_fd) : db_(db), lock_fd_(lock_fd) {}
  void unlock();
  sqlite3* db_;
  int lock_fd_ = -1;
};

// The scalar result of a one-row query such as "PRAGMA user_version".
result<int64_t> query_int(sqlite3* db, std::string_view sql);

}  // namespace lathe::sql
