// Internal to spec/: what its TOML readers share (task.toml, kernel.toml), and the `[tune]`
// section of kernel.toml read and written (bundle.cpp; the format is docs/tune.md's).
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include "core/error.h"
#include "core/kernel.h"

namespace lathe::detail {

// A C identifier: a macro name, a shape symbol.
inline bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The line a node starts on (the root table reports 0: line 1).
inline uint32_t line_of(const toml::node& n) { return n.source().begin.line > 0 ? n.source().begin.line : 1; }

// `node` is kernel.toml's `tune` entry; `defines` the manifest's (a tunable's integer define is
// its default when [tune] names none). Errors are "file:line: what".
result<tune_space> read_tune_section(const toml::node& node, const std::map<std::string, std::string>& defines,
                                     const std::string& file);
// The section as write_bundle writes it: loading it again gives the same space.
toml::table tune_table(const tune_space& s);

}  // namespace lathe::detail
