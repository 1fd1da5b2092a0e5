// How a verb fails: "lathe: <message>" on stderr, and the exit code it returns (2: the user's
// arguments or workspace, 1: the work itself). One definition for every verb's file.
#pragma once

#include <cstdio>
#include <string>

#include "core/error.h"

namespace lathe::cli {

inline int fail_with(const std::string& message, int code) {
  std::fprintf(stderr, "lathe: %s\n", message.c_str());
  return code;
}

inline int fail_with(const error& e, int code) { return fail_with(e.message, code); }

}  // namespace lathe::cli
