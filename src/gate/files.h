// Whole files read and written by the build steps (build.cpp, python_build.cpp): bytes as they
// are, an unreadable file read as empty, a failed write said by the return value; and the
// private folders' random names.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace lathe::gate {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

// A name part no other build picks (the private folders that builds rename into the cache).
inline std::string random_suffix() {
  std::random_device rd;
  std::ostringstream ss;
  ss << std::hex << rd() << rd();
  return ss.str();
}

}  // namespace lathe::gate
