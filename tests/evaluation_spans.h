// When each evaluation of a store ran, for the tests that show evaluations on several CPU slots at
// once (issue 46): the store stamps an evaluation when it is added, at its end (created_at, UTC,
// milliseconds), and the evaluation holds its own wall time, so it began wall_seconds before.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>

#include "core/evaluation.h"
#include "store/store.h"

namespace lathe::testing {

struct evaluation_span {
  evaluation e;
  double begun = 0, ended = 0;  // seconds since the epoch
};

// Seconds since the epoch of a created_at ("2026-12-07T22:06:40.123Z"); 0 when it does not parse.
inline double epoch_seconds(const std::string& at) {
  std::tm tm{};
  double sec = 0;
  if (std::sscanf(at.c_str(), "%d-%d-%dT%d:%d:%lfZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &sec) != 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + sec;
}

// Every evaluation of `db` by id.
inline std::map<int64_t, evaluation_span> evaluation_spans(const store& db) {
  std::map<int64_t, evaluation_span> out;
  auto list = db.list_evaluations("", 0);
  EXPECT_TRUE(list) << list.error().message;
  if (!list) return out;
  for (const auto& s : *list) {
    auto e = db.get_evaluation(s.id);
    EXPECT_TRUE(e) << e.error().message;
    if (!e) continue;
    const double ended = epoch_seconds(s.created_at);
    EXPECT_GT(ended, 0) << s.created_at;
    const double wall = e->wall_seconds;
    out[s.id] = {std::move(*e), ended - wall, ended};
  }
  return out;
}

// Whether two evaluations ran at the same time: each began before the other ended.
// The spans of what the workspace at `ws` stored (its .lathe/lathe.db), by evaluation id.
inline std::map<int64_t, evaluation_span> stored_spans(const std::filesystem::path& ws) {
  auto db = store::open(ws / ".lathe/lathe.db");
  EXPECT_TRUE(db) << db.error().message;
  if (!db) return {};
  return evaluation_spans(*db);
}

inline bool overlapped(const evaluation_span& a, const evaluation_span& b) {
  return a.begun < b.ended && b.begun < a.ended;
}

}  // namespace lathe::testing
