// Helpers shared by the json*.cpp files of core/ (not a public header: it pulls in the full
// nlohmann header, which json.h keeps out of every other translation unit).
#pragma once

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_parse.h"
#include "core/json.h"

namespace lathe::json_detail {

// A type error that names the key, in nlohmann's own exception type so callers catch one kind.
[[noreturn]] inline void bad_value(const json& j, const char* key, const std::string& what) {
  throw json::type_error::create(302, std::string("'") + key + "': " + what, &j);
}

// Reads `key` when present and not null; otherwise leaves `out` (its default) alone, so records
// written by an older lathe, which lack newer fields, still load.
template <class T>
void get(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) it->get_to(out);
}

// Doubles: nlohmann writes NaN and infinities as null; read null back as NaN (not as "absent"),
// because an error figure that was NaN must not turn into a clean 0.
inline void get_double(const json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  out = it->is_null() ? std::numeric_limits<double>::quiet_NaN() : it->get<double>();
}

// Optionals are written as null and read back as nullopt when missing or null.
template <class T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v)
    j[key] = *v;
  else
    j[key] = nullptr;
}
template <class T>
void get_opt(const json& j, const char* key, std::optional<T>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    out.reset();
  else
    out = it->get<T>();
}

// Enums as their names (to_string / parse_enum).
template <class E>
void get_enum(const json& j, const char* key, E& out, E last) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_string()) bad_value(j, key, "expected a string");
  const auto name = it->get<std::string>();
  auto e = parse_enum(name, last);
  if (!e) bad_value(j, key, "unknown value '" + name + "'");
  out = *e;
}

// Optional enums of fields that were strings before they were enums: the name, "" for none.
template <class E>
std::string word_or_empty(const std::optional<E>& e) {
  return e ? std::string(to_string(*e)) : std::string();
}
template <class E>
void get_word(const json& j, const char* key, std::optional<E>& out, E last) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_string()) bad_value(j, key, "expected a string");
  const auto name = it->get<std::string>();
  if (name.empty()) return out.reset();
  auto e = parse_enum(name, last);
  if (!e) bad_value(j, key, "unknown value '" + name + "'");
  out = *e;
}

}  // namespace lathe::json_detail
