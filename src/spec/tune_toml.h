// Internal to spec/: the `[tune]` section of kernel.toml read and written (bundle.cpp); the
// format is docs/tune.md's.
#pragma once

#include <map>
#include <string>

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include "core/error.h"
#include "core/kernel.h"

namespace lathe::detail {

// `node` is kernel.toml's `tune` entry; `defines` the manifest's (a tunable's integer define is
// its default when [tune] names none). Errors are "file:line: what".
result<tune_space> read_tune_section(const toml::node& node, const std::map<std::string, std::string>& defines,
                                     const std::string& file);
// The section as write_bundle writes it: loading it again gives the same space.
toml::table tune_table(const tune_space& s);

}  // namespace lathe::detail
