// Raw SQLite access for tests: what another program (or a user with the sqlite3 shell) could do
// to the file behind the store's back.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>

namespace lathe::testing {

struct raw_closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using raw_db = std::unique_ptr<sqlite3, raw_closer>;

inline raw_db open_raw(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  sqlite3_busy_timeout(db, 10'000);
  return raw_db(db);
}

struct exec_result {
  int rc = SQLITE_OK;
  std::string message;
};

inline exec_result exec(sqlite3* db, const std::string& sql) {
  char* msg = nullptr;
  exec_result r;
  r.rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  if (msg) r.message = msg;
  sqlite3_free(msg);
  return r;
}

// The first column of the first row as text ("" when there is no row).
inline std::string query(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    if (p) out = p;
  }
  sqlite3_finalize(s);
  return out;
}

inline double query_double(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  double out = -1.0;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    out = sqlite3_column_double(s, 0);
  sqlite3_finalize(s);
  return out;
}

inline long long query_int(sqlite3* db, const std::string& sql) {
  std::string v = query(db, sql);
  return v.empty() ? 0 : std::stoll(v);
}

}  // namespace lathe::testing
