// The line handling of the edit format (docs/edits.md), shared by reading a reply
// (edit_parse.cpp) and applying its edits (edit.cpp): trimming lines (split on core/lines.h's
// split_lines), marker lines, and the pieces every message for the model is made of. Internal to
// agent/. Inline, as they were when both sides lived in one file: GCC 12 warns (-Wrestrict,
// falsely) on `"'" + clip(path)` once clip is out of line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/edit.h"
#include "core/lines.h"

namespace lathe::agent::detail {

inline std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

inline std::string_view trim(std::string_view s) {
  s = rtrim(s);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

inline bool is_fence(std::string_view line) {
  return trim(line).starts_with("```");
}

// A marker line: the marker alone, trailing blanks (and a CR) tolerated.
inline bool is_marker(std::string_view line, std::string_view marker) {
  return rtrim(line) == marker;
}

inline std::string clip(std::string_view s, size_t n = 160) {
  return s.size() <= n ? std::string(s) : std::string(s.substr(0, n)) + "…";
}

inline edit_error err(std::string path, int32_t block, std::string message) {
  return edit_error{std::move(path), block, std::move(message)};
}

inline std::string at_line(int32_t line) {
  return "reply line " + std::to_string(line);
}

}  // namespace lathe::agent::detail
