// The private folders' random names (build.cpp, python_build.cpp). Files in those folders are
// read and written with spec/safe_file.h: a candidate's steps ran in them.
#pragma once

#include <random>
#include <sstream>
#include <string>

namespace lathe::gate {

// A name part no other build picks (the private folders that builds rename into the cache).
inline std::string random_suffix() {
  std::random_device rd;
  std::ostringstream ss;
  ss << std::hex << rd() << rd();
  return ss.str();
}

}  // namespace lathe::gate
