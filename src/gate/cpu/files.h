// The private folders' random names (build.cpp, python_build.cpp). Files in those folders are
// read and written with spec/safe_file.h: a candidate's steps ran in them.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
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

// The temporary directory private folders are made in: TMPDIR, else /tmp.
inline std::filesystem::path scratch_root() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir && *tmpdir ? std::filesystem::path(tmpdir) : std::filesystem::path("/tmp");
}

// A private folder of the temporary directory ("lathe-<what>-XXXXXX" in scratch_root()) for a
// step that runs a candidate's code in a jail: torch's build gives the compiler absolute paths,
// and the jailed user may not walk lathe's own folders above a cache. None when it cannot be made
// (errno says why).
inline std::optional<std::filesystem::path> scratch_folder(const char* what) {
  std::string tmpl = (scratch_root() / (std::string("lathe-") + what + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) return std::nullopt;
  return std::filesystem::path(tmpl);
}

}  // namespace lathe::gate
