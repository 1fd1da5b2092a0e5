#include <cstdint>
#include "store/sql.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <utility>

#include "store/migrations.h"

namespace lathe::sql {

namespace {

// SQLite binds a null pointer as NULL even with length 0; an empty string or blob must stay
// empty (a zero-byte kernel source is not a missing one).
const char* non_null(std::string_view v) {
  return v.data() ? v.data() : "";
}

std::string short_sql(std::string_view sql) {
  constexpr size_t keep = 60;
  std::string s(sql.substr(0, keep));
  for (char& c : s)
    if (c == '\n') c = ' ';
  return sql.size() > keep ? s + "…" : s;
}

}  // namespace

void statement::closer::operator()(sqlite3_stmt* s) const {
  sqlite3_finalize(s);
}

statement::statement(sqlite3* db, sqlite3_stmt* s, std::string sql)
    : db_(db), s_(s), sql_(std::move(sql)) {}

result<statement> statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK) {
    sqlite3_finalize(s);
    return fail(errc::store_error, sqlite_message(db, "cannot prepare `" + short_sql(sql) + "`"));
  }
  return statement(db, s, std::string(sql));
}

statement& statement::bind(int i, std::string_view text) {
  int rc =
      sqlite3_bind_text64(s_.get(), i, non_null(text), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

statement& statement::bind(int i, int64_t v) {
  int rc = sqlite3_bind_int64(s_.get(), i, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

statement& statement::bind(int i, double v) {
  int rc = sqlite3_bind_double(s_.get(), i, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

statement& statement::bind_blob(int i, std::string_view bytes) {
  int rc = sqlite3_bind_blob64(s_.get(), i, non_null(bytes), bytes.size(), SQLITE_TRANSIENT);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

statement& statement::bind_null(int i) {
  int rc = sqlite3_bind_null(s_.get(), i);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

result<bool> statement::step() {
  if (bind_rc_ != SQLITE_OK)
    return fail(errc::store_error,
                sqlite_message(db_, "cannot bind a value of `" + short_sql(sql_) +
                                        "`: " + sqlite3_errstr(bind_rc_)));
  int rc = sqlite3_step(s_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail(errc::store_error, sqlite_message(db_, "`" + short_sql(sql_) + "` failed"));
}

result<void> statement::run() {
  auto r = step();
  if (!r) return tl::unexpected(r.error());
  return {};
}

result<void> statement::reset() {
  sqlite3_reset(s_.get());
  sqlite3_clear_bindings(s_.get());
  bind_rc_ = SQLITE_OK;
  return {};
}

std::string statement::text(int col) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_.get(), col));
  int n = sqlite3_column_bytes(s_.get(), col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

std::string statement::blob(int col) const {
  auto* p = static_cast<const char*>(sqlite3_column_blob(s_.get(), col));
  int n = sqlite3_column_bytes(s_.get(), col);  // after column_blob, as SQLite documents
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

int64_t statement::int64(int col) const {
  return sqlite3_column_int64(s_.get(), col);
}

std::optional<double> statement::real(int col) const {
  if (is_null(col)) return std::nullopt;
  return sqlite3_column_double(s_.get(), col);
}

bool statement::is_null(int col) const {
  return sqlite3_column_type(s_.get(), col) == SQLITE_NULL;
}

result<void> exec(sqlite3* db, std::string_view sql) {
  char* msg = nullptr;
  std::string text(sql);  // sqlite3_exec needs a terminated string
  if (sqlite3_exec(db, text.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string why = msg ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    return fail(errc::store_error, db_file(db) + ": `" + short_sql(sql) + "` failed: " + why);
  }
  return {};
}

namespace {
// The writers' queue of the database `db` (an in-memory one has none): -1 when it cannot be
// opened (BEGIN IMMEDIATE and its busy timeout still serialize the writers then). A blocking
// flock: the kernel wakes the waiters when it is released, where polling every millisecond cost
// 64 waiting processes more than half of the write rate on two cores. The holder is inside one
// transaction, which waits on nothing; a holder that dies releases it.
int writers_lock(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  if (!file || !*file) return -1;
  const std::string path = std::string(file) + "-writers";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  int r;
  while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (r != 0) {
    close(fd);
    return -1;
  }
  return fd;
}
}  // namespace

result<transaction> transaction::begin(sqlite3* db) {
  const int fd = writers_lock(db);
  if (auto r = exec(db, "BEGIN IMMEDIATE"); !r) {
    if (fd >= 0) close(fd);
    return tl::unexpected(r.error());
  }
  return transaction(db, fd);
}

transaction::transaction(transaction&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)), lock_fd_(std::exchange(o.lock_fd_, -1)) {}

void transaction::unlock() {
  if (lock_fd_ >= 0) close(lock_fd_);  // closing the descriptor releases its flock
  lock_fd_ = -1;
}

transaction::~transaction() {
  // Rolling back is best effort: SQLite may already have rolled back after an I/O error.
  if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  unlock();
}

result<void> transaction::commit() {
  // On failure db_ is kept, so the destructor rolls back whatever COMMIT left open.
  auto r = exec(db_, "COMMIT");
  if (r) {
    db_ = nullptr;
    unlock();
  }
  return r;
}

result<int64_t> query_int(sqlite3* db, std::string_view sql) {
  auto s = statement::prepare(db, sql);
  if (!s) return tl::unexpected(s.error());
  auto row = s->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row)
    return fail(errc::store_error, sqlite_message(db, "`" + short_sql(sql) + "` gave no row"));
  return s->int64(0);
}

}  // namespace lathe::sql
