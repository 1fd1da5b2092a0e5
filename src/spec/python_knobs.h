// Tunables of a Python kernel (issue 45; docs/tune.md): a Python kernel has no -D flags, so each
// tunable is a top-level `NAME = <integer>` assignment in its entry file (`BLOCK = 128`,
// `BLOCK: int = 128`, a comment after it allowed), and a configuration is that literal rewritten.
// The configured kernel is then an ordinary Python file: what it runs is what it reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"

namespace lathe {

// The knob lines of a Python source: name -> (line index, value) of each top-level
// `NAME = <integer>` outside triple-quoted strings, in order (a name may appear more than once).
struct python_knob {
  size_t line = 0;  // 0-based
  int64_t value = 0;
};
std::map<std::string, std::vector<python_knob>> python_knob_lines(const std::string& source);

// A Python bundle's tunables bound to its entry file: each must be a knob line exactly once; its
// default is the literal there, and a [tune.default] that says otherwise is refused (named by
// `explicit_defaults`), as a literal outside the tunable's values is. Other bundles: unchanged.
result<void> bind_python_tunables(kernel_bundle& b, const std::vector<std::string>& explicit_defaults);

// `source` with each knob of `c` set to its value (its one knob line rewritten, the rest of the
// line kept). An error when a name is not a knob line exactly once.
result<std::string> set_python_knobs(const std::string& source, const tune_config& c);

}  // namespace lathe
