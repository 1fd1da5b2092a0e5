// The reader of lathe.toml's fields, shared by config.cpp (the file) and config_tables.cpp (its
// tables): every error is "file:line: field: what". Internal to llm/.
#pragma once

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include "llm/config.h"

namespace lathe::llm::detail {

inline bool is_env_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

inline const char* type_name(const toml::node& n) {
  if (n.is_string()) return "a string";
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a float";
  if (n.is_boolean()) return "a boolean";
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a date/time";
}

inline uint32_t line_of(const toml::node& n) {
  return n.source().begin.line > 0 ? n.source().begin.line : 1;  // the root table reports 0
}

inline std::string join(std::initializer_list<std::string_view> items) {
  std::string out;
  for (auto i : items) out += (out.empty() ? "" : ", ") + std::string(i);
  return out;
}

// Reads one lathe.toml; every error is "file:line: field: what".
class reader {
 public:
  explicit reader(std::string file) : file_(std::move(file)) {}

  tl::unexpected<error> err(uint32_t line, const std::string& field,
                            const std::string& what) const {
    std::string m = file_ + ":" + std::to_string(line) + ": ";
    if (!field.empty()) m += field + ": ";
    return fail(errc::parse_error, m + what);
  }

  static std::string path(const std::string& table, std::string_view key) {
    return table.empty() ? std::string(key) : table + "." + std::string(key);
  }

  result<void> check_keys(const toml::table& t, std::initializer_list<std::string_view> allowed,
                          const std::string& table) const {
    for (const auto& [k, v] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end())
        return err(line_of(v), path(table, k.str()),
                   "unknown key (expected one of: " + join(allowed) + ")");
    }
    return {};
  }

  result<std::optional<std::string>> str(const toml::table& t, std::string_view key,
                                         const std::string& table) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<std::string>{};
    if (!n->is_string())
      return err(line_of(*n), path(table, key),
                 std::string("must be a string, not ") + type_name(*n));
    return std::optional<std::string>{n->as_string()->get()};
  }

  result<std::optional<int64_t>> integer(const toml::table& t, std::string_view key,
                                         const std::string& table, int64_t lo, int64_t hi) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<int64_t>{};
    if (!n->is_integer())
      return err(line_of(*n), path(table, key),
                 std::string("must be a whole number, not ") + type_name(*n));
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      return err(line_of(*n), path(table, key),
                 "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return std::optional<int64_t>{v};
  }

  // A finite number >= lo (> lo when `strict`).
  result<std::optional<double>> number(const toml::table& t, std::string_view key,
                                       const std::string& table, double lo, bool strict) const {
    const toml::node* n = t.get(key);
    if (!n) return std::optional<double>{};
    double v;
    if (n->is_integer())
      v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point())
      v = n->as_floating_point()->get();
    else
      return err(line_of(*n), path(table, key),
                 std::string("must be a number, not ") + type_name(*n));
    std::ostringstream bound;
    bound << lo;
    if (!std::isfinite(v) || v < lo || (strict && v == lo))
      return err(line_of(*n), path(table, key),
                 std::string("must be a finite number ") + (strict ? "> " : ">= ") + bound.str());
    return std::optional<double>{v};
  }

  result<std::vector<std::string>> strings(const toml::table& t, std::string_view key,
                                           const std::string& table) const {
    std::vector<std::string> out;
    const toml::node* n = t.get(key);
    if (!n) return out;
    if (!n->is_array())
      return err(line_of(*n), path(table, key),
                 std::string("must be an array of strings, not ") + type_name(*n));
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_string())
        return err(line_of(e), path(table, key),
                   std::string("must hold strings, not ") + type_name(e));
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  // A sub-table; absent -> nullptr.
  result<const toml::table*> table(const toml::table& t, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) return static_cast<const toml::table*>(nullptr);
    if (!n->is_table())
      return err(line_of(*n), std::string(key),
                 std::string("must be a table ([") + std::string(key) + "]), not " + type_name(*n));
    return n->as_table();
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};


#define LATHE_TRY(var, expr) \
  auto var = (expr);         \
  if (!var) return tl::unexpected(var.error())

// The tables of lathe.toml (config_tables.cpp), each into `c`.
result<void> read_prices(const reader& r, const toml::table& root, config& c);
result<void> read_limits(const reader& r, const toml::table& root, config& c);
result<void> read_transport(const reader& r, const toml::table& root, config& c);
result<void> read_command(const reader& r, const toml::table& root, config& c);
result<void> read_cassettes(const reader& r, const toml::table& root, config& c);
result<void> read_sampling(const reader& r, const toml::table& root, config& c);

}  // namespace lathe::llm::detail
