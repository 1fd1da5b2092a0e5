// Where this build of lathe came from: its source tree and its build folder. The CLI falls back
// to the source tree for tasks/, include/, prompts/ and python/ when it runs uninstalled; the
// tests find their fixtures and the built binaries through them (LATHE_SOURCE_DIR and
// LATHE_BINARY_DIR, cmake/lathe_test.cmake).
//
// They are defined in one generated source (build_paths.cpp.in) and not as -D definitions: a
// path on a compile line is part of ccache's hash, so every file that carried one missed the
// cache in a fresh clone at another path (63 misses of a warm CI build, issue 41).
#pragma once

#include <string>

namespace lathe::build_paths {

std::string source_dir();
std::string binary_dir();

}  // namespace lathe::build_paths
