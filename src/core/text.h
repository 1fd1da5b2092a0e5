// Small string helpers every layer wanted its own copy of.
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace lathe {

// The items with `sep` between them. The separator is skipped while the result is still empty,
// so leading empty items leave no separator behind.
inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out.append(sep);
    out += s;
  }
  return out;
}

// Concatenation through append, without `"literal" + std::string&&`, which trips g++ 12's
// -Wrestrict false positive.
template <class... T>
std::string cat(const T&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// The current time in UTC, ISO 8601 to the second ("2026-11-30T09:09:40Z").
inline std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace lathe
