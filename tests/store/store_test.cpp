#include <cstdint>
#include "store/store.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/hash.h"
#include "core/json.h"
#include "store/raw_db.h"
#include "store/sample_data.h"
#include "store/temp_dir.h"

namespace lathe {
namespace {

using testing::temp_dir;

store open_ok(const std::filesystem::path& file) {
  auto s = store::open(file);
  if (!s) ADD_FAILURE() << s.error().message;
  return std::move(*s);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(store, fresh_open_is_current_version_in_wal_mode) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  ASSERT_EQ(s.version().value(), store::schema_version);
  EXPECT_EQ(store::schema_version, 5);
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query(raw.get(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(testing::query_int(raw.get(), "PRAGMA user_version"), 5);
}

TEST(store, reopen_is_idempotent) {
  temp_dir dir;
  std::string blob;
  {
    store s = open_ok(dir / "lathe.db");
    blob = s.put_blob("kept").value();
    ASSERT_TRUE(s.add_evaluation(testing::sample_evaluation("t")).has_value());
  }
  auto raw = testing::open_raw(dir / "lathe.db");
  std::string schema =
      testing::query(raw.get(), "SELECT group_concat(sql, ';') FROM sqlite_master");
  for (int i = 0; i < 3; ++i) {
    store s = open_ok(dir / "lathe.db");
    EXPECT_EQ(s.version().value(), store::schema_version);
    EXPECT_EQ(s.get_blob(blob).value(), "kept");
    EXPECT_EQ(s.list_evaluations("", 0).value().size(), 1u);
  }
  EXPECT_EQ(testing::query(raw.get(), "SELECT group_concat(sql, ';') FROM sqlite_master"), schema);
}

TEST(store, append_only_tables_refuse_update_and_delete) {
  temp_dir dir;
  {
    store s = open_ok(dir / "lathe.db");
    ASSERT_TRUE(s.put_kernel(testing::sample_kernel()).has_value());
    ASSERT_TRUE(s.add_evaluation(testing::sample_evaluation("t")).has_value());
    ASSERT_TRUE(s.add_profile(testing::sample_profile(content_hash("k"))).has_value());
    ASSERT_TRUE(s.add_llm_call(testing::sample_llm_call("run-1")).has_value());
  }
  auto raw = testing::open_raw(dir / "lathe.db");
  for (const char* table :
       {"blobs", "kernels", "evaluations", "samples", "profiles", "llm_calls"}) {
    SCOPED_TRACE(table);
    long long before = testing::query_int(raw.get(), std::string("SELECT count(*) FROM ") + table);
    ASSERT_GT(before, 0);
    auto upd = testing::exec(raw.get(), std::string("UPDATE ") + table + " SET rowid = rowid");
    EXPECT_NE(upd.rc, SQLITE_OK);
    EXPECT_NE(upd.message.find("append-only"), std::string::npos) << upd.message;
    auto del = testing::exec(raw.get(), std::string("DELETE FROM ") + table);
    EXPECT_NE(del.rc, SQLITE_OK);
    EXPECT_NE(del.message.find("append-only"), std::string::npos) << del.message;
    EXPECT_EQ(testing::query_int(raw.get(), std::string("SELECT count(*) FROM ") + table), before);
  }
  // The measurement cache is the one table that may change.
  EXPECT_EQ(testing::exec(raw.get(), "DELETE FROM measurements").rc, SQLITE_OK);
}

TEST(store, put_blob_dedups_by_content_hash) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  const std::string bytes("a\0b\xff", 4);  // NUL and a non-UTF-8 byte survive
  std::string h1 = s.put_blob(bytes).value();
  std::string h2 = s.put_blob(bytes).value();
  EXPECT_EQ(h1, content_hash(bytes));
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(s.get_blob(h1).value(), bytes);
  std::string empty = s.put_blob("").value();
  EXPECT_EQ(s.get_blob(empty).value(), "");
  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM blobs"), 2);

  auto missing = s.get_blob(std::string(32, '0'));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);
  EXPECT_NE(missing.error().message.find("lathe.db"), std::string::npos);
}

TEST(store, kernel_round_trip) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  kernel_bundle k = testing::sample_kernel();
  ASSERT_TRUE(s.put_kernel(k).has_value());
  ASSERT_TRUE(s.put_kernel(k).has_value());  // same content again: a no-op, not an error
  kernel_bundle got = s.get_kernel(k.hash).value();
  EXPECT_EQ(got.hash, k.hash);
  EXPECT_EQ(got.name, k.name);
  EXPECT_EQ(got.sources, k.sources);
  EXPECT_EQ(json(got.manifest), json(k.manifest));

  auto missing = s.get_kernel("nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);

  kernel_bundle unhashed = k;
  unhashed.hash.clear();
  EXPECT_FALSE(s.put_kernel(unhashed).has_value());
}

TEST(store, evaluation_round_trip_keeps_fields_and_samples) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  evaluation e = testing::sample_evaluation("vector_add");
  int64_t id = s.add_evaluation(e).value();
  EXPECT_GT(id, 0);
  evaluation got = s.get_evaluation(id).value();
  EXPECT_EQ(got.id, id);
  e.id = id;
  EXPECT_EQ(json(got), json(e));
  ASSERT_TRUE(got.paired && got.aa);
  EXPECT_EQ(got.paired->a_seconds, e.paired->a_seconds);
  EXPECT_EQ(got.aa->b_seconds, e.aa->b_seconds);

  auto raw = testing::open_raw(dir / "lathe.db");
  const std::string where = " FROM samples WHERE evaluation_id = " + std::to_string(id);
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*)" + where),
            static_cast<long long>(e.paired->a_seconds.size() + e.paired->b_seconds.size() +
                                   e.aa->a_seconds.size() + e.aa->b_seconds.size()));
  EXPECT_EQ(testing::query_double(
                raw.get(), "SELECT seconds" + where + " AND series = 'baseline' AND round = 1"),
            e.paired->b_seconds[1]);
  EXPECT_EQ(testing::query(raw.get(), "SELECT provenance FROM evaluations"), "rules:unroll");
  EXPECT_EQ(testing::query(raw.get(), "SELECT target_arch FROM evaluations"), "x86-64-v3");

  // Failures are stored too (PROTOCOL.md), with no samples.
  evaluation bad = testing::sample_evaluation("vector_add");
  bad.result = outcome::compile_error;
  bad.paired.reset();
  bad.aa.reset();
  bad.diagnostics = std::string("error: \xc3\x28 not utf-8");
  int64_t bad_id = s.add_evaluation(bad).value();
  evaluation got_bad = s.get_evaluation(bad_id).value();
  EXPECT_EQ(got_bad.result, outcome::compile_error);
  EXPECT_FALSE(got_bad.paired.has_value());

  auto missing = s.get_evaluation(9999);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::not_found);
}

// A profile comes back whole, raw output included, bound to its kernel hash; other kernels'
// profiles stay apart, and a kernel never profiled has none.
TEST(store, profile_round_trip_by_kernel_hash) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  const std::string kh = content_hash("kernel a"), other = content_hash("kernel b");
  profile p = testing::sample_profile(kh);
  const int64_t first = s.add_profile(p).value();
  profile q = testing::sample_profile(other);
  q.raw_csv = "other output";
  ASSERT_TRUE(s.add_profile(q).has_value());
  profile again = p;
  again.launches = 5;
  const int64_t second = s.add_profile(again).value();
  EXPECT_GT(second, first);

  auto got = s.profiles_for(kh).value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, first);
  EXPECT_EQ(got[1].id, second);
  EXPECT_FALSE(got[0].created_at.empty());
  EXPECT_EQ(got[0].raw_csv, p.raw_csv);
  EXPECT_EQ(got[1].launches, 5u);
  profile expect = p;
  expect.id = got[0].id;
  expect.created_at = got[0].created_at;
  EXPECT_EQ(json(got[0]), json(expect));
  ASSERT_EQ(got[0].kernels.size(), 2u);
  EXPECT_FALSE(got[0].kernels[1].achieved_occupancy_pct.has_value());  // gaps stay gaps
  EXPECT_EQ(got[0].kernels[0].stalls.front().reason, "long_scoreboard");
  EXPECT_TRUE(s.profiles_for(content_hash("never profiled")).value().empty());

  auto raw = testing::open_raw(dir / "lathe.db");
  EXPECT_EQ(testing::query(raw.get(), "SELECT target_device FROM profiles WHERE id = " +
                                          std::to_string(first)),
            "NVIDIA H200");
  EXPECT_EQ(testing::query(raw.get(), "SELECT target_arch FROM profiles WHERE id = " +
                                          std::to_string(first)),
            "sm_90");
  // The raw output is a blob, shared by the two profiles that have the same one.
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(DISTINCT raw_blob) FROM profiles"), 2);

  profile unbound = p;
  unbound.kernel_hash.clear();
  auto refused = s.add_profile(unbound);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, errc::invalid_argument);
}

TEST(store, list_evaluations_filters_by_task_newest_first) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  std::vector<int64_t> ids;
  for (const char* task : {"a", "b", "a", "b", "a"})
    ids.push_back(s.add_evaluation(testing::sample_evaluation(task)).value());
  auto a = s.list_evaluations("a", 0).value();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].id, ids[4]);
  EXPECT_EQ(a[2].id, ids[0]);
  EXPECT_EQ(a[0].task, "a");
  EXPECT_EQ(a[0].outcome, "ok");
  EXPECT_EQ(a[0].kernel_name, "vector_add_v2");
  EXPECT_FALSE(a[0].created_at.empty());
  ASSERT_TRUE(a[0].speedup.has_value());
  EXPECT_DOUBLE_EQ(*a[0].speedup, 1.25);
  EXPECT_EQ(s.list_evaluations("", 0).value().size(), 5u);
  EXPECT_EQ(s.list_evaluations("", 2).value().size(), 2u);
  EXPECT_TRUE(s.list_evaluations("nope", 10).value().empty());
}

TEST(store, measurements_put_get_overwrite) {
  temp_dir dir;
  store s = open_ok(dir / "lathe.db");
  EXPECT_FALSE(s.get_measurement("copy_bw/host").value().has_value());
  ASSERT_TRUE(s.put_measurement("copy_bw/host", R"({"bytes_per_s": 1e10})").has_value());
  EXPECT_EQ(s.get_measurement("copy_bw/host").value(), R"({"bytes_per_s": 1e10})");
  ASSERT_TRUE(s.put_measurement("copy_bw/host", R"({"bytes_per_s": 2e10})").has_value());
  EXPECT_EQ(s.get_measurement("copy_bw/host").value(), R"({"bytes_per_s": 2e10})");
  auto bad = s.put_measurement("x", "{not json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, errc::invalid_argument);
}

// Two lathe processes on one workspace: both create the database at the same moment, then write
// evaluations interleaved. Every write must land; none may fail with "database is locked".
TEST(store, two_processes_write_concurrently) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  constexpr int per_process = 40;
  std::vector<pid_t> children;
  for (const char* task : {"p0", "p1"}) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      {
        auto s = store::open(file);
        if (!s) {
          fprintf(stderr, "child open: %s\n", s.error().message.c_str());
          _exit(2);
        }
        for (int i = 0; i < per_process && rc == 0; ++i) {
          auto id = s->add_evaluation(testing::sample_evaluation(task));
          auto m = s->put_measurement(std::string(task) + "/" + std::to_string(i % 3), "{}");
          if (!id || !m) {
            fprintf(stderr, "child write: %s\n", (!id ? id.error() : m.error()).message.c_str());
            rc = 3;
          }
        }
      }
      _exit(rc);  // no gtest teardown, no atexit handlers of the parent in the child
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  store s = open_ok(file);
  EXPECT_EQ(s.list_evaluations("p0", 0).value().size(), size_t{per_process});
  EXPECT_EQ(s.list_evaluations("p1", 0).value().size(), size_t{per_process});
  auto raw = testing::open_raw(file);
  const auto e = testing::sample_evaluation("x");
  const auto per_eval = e.paired->a_seconds.size() * 2 + e.aa->a_seconds.size() * 2;
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM samples"),
            static_cast<long long>(2 * per_process * per_eval));
  EXPECT_EQ(testing::query_int(raw.get(), "SELECT count(*) FROM measurements"), 6);
}

// Writers queue on "<database>-writers" (sql.h transaction): an add waits while another process
// holds it and lands once it is released. (SQLite's own busy handler alone, under 32-64 writers,
// left adds waiting past its 10 s timeout: bench/store/store_writes.)
TEST(store, writers_queue_on_the_writers_lock_and_land_when_it_is_released) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  { store s = open_ok(file); }
  const int fd = open((file.string() + "-writers").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto s = store::open(file);
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = s && s->add_evaluation(testing::sample_evaluation("queued")).has_value();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const char c = ok && waited >= 0.25 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    _exit(0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(open_ok(file).list_evaluations("queued", 0).value().size(), 0u);  // still waiting
  flock(fd, LOCK_UN);
  close(fd);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(c, 'y') << "the add did not wait for the writers' lock, or failed";
  EXPECT_EQ(open_ok(file).list_evaluations("queued", 0).value().size(), 1u);
}

// A link planted where the writers' lock goes is not followed (O_NOFOLLOW): nothing is created or
// locked through it, and writes still land (serialized by SQLite's own lock).
TEST(store, a_link_in_place_of_the_writers_lock_is_not_followed) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  const auto target = dir / "elsewhere";
  std::filesystem::create_symlink(target, file.string() + "-writers");
  store s = open_ok(file);
  ASSERT_TRUE(s.add_evaluation(testing::sample_evaluation("t")).has_value());
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(target)));
  EXPECT_EQ(s.list_evaluations("t", 0).value().size(), 1u);
}

TEST(store, newer_database_is_refused_and_left_untouched) {
  temp_dir dir;
  const auto file = dir / "lathe.db";
  {
    auto raw = testing::open_raw(file);
    ASSERT_EQ(testing::exec(raw.get(), "CREATE TABLE future (x); PRAGMA user_version = " +
                                           std::to_string(store::schema_version + 1)).rc,
              SQLITE_OK);
  }
  const std::string before = read_file(file);
  auto s = store::open(file);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, errc::unsupported);
  EXPECT_NE(s.error().message.find(file.string()), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("newer"), std::string::npos) << s.error().message;
  EXPECT_EQ(read_file(file), before);
  EXPECT_FALSE(std::filesystem::exists(dir / "lathe.db-wal"));
}

TEST(store, unusable_files_give_actionable_errors) {
  temp_dir dir;
  {
    std::ofstream(dir / "junk.db") << "this is not a database, just some text that is long "
                                      "enough to have a header page";
  }
  auto junk = store::open(dir / "junk.db");
  ASSERT_FALSE(junk.has_value());
  EXPECT_NE(junk.error().message.find("junk.db"), std::string::npos);
  EXPECT_NE(junk.error().message.find("not a database"), std::string::npos) << junk.error().message;

  auto nodir = store::open(dir / "missing" / "lathe.db");
  ASSERT_FALSE(nodir.has_value());
  EXPECT_NE(nodir.error().message.find("missing/lathe.db"), std::string::npos);
}

}  // namespace
}  // namespace lathe
