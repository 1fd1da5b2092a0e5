// Small string helpers every layer wanted its own copy of.
#pragma once

#include <chrono>
#include <cstdio>
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

// One number through a printf format ("%.3g", "%.3fx"): the formatting helper files kept writing.
inline std::string number_text(const char* fmt, double x) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, x);
  return b;
}

// Seconds with a unit that fits: "2.31 s", "464 ms", "38.1 us" (three significant digits).
inline std::string seconds_text(double s) {
  if (s >= 1) return number_text("%.3g s", s);
  if (s >= 1e-3) return number_text("%.3g ms", s * 1e3);
  return number_text("%.3g us", s * 1e6);
}

// Text that came from a candidate (its error message, its compiler's log, its output) made safe
// to print and store: newlines and tabs stay, printable ASCII and well-formed UTF-8 stay, every
// other byte becomes \xNN. A kernel's message of "\r\033[2K\033[1A..." erased lathe's outcome
// line on a terminal and printed a fake "ok 9.9x" in its place.
inline std::string escape_untrusted(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [&](unsigned char c) {
    const char* digits = "0123456789abcdef";
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A UTF-8 sequence: lead byte, then 1-3 continuation bytes; no C1 controls (U+0080-U+009F).
    const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) ok = false;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      hex(c);
      ++i;
    }
  }
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
