// What the tests that replay a recorded model run share (model_replay_test, modelnew_replay_test):
// a workspace answering from a copy of a recording's cassettes, and how a call the cassettes
// could not answer shows.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include "lathe_cli_json.h"

namespace lathe::testing {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}

// `ws` made anew with the recording's lathe.toml (provider "replay", templates pinned) and a copy
// of its cassettes, which a test may change without touching the recording.
inline void make_replay_workspace(const std::filesystem::path& recording, const std::filesystem::path& ws) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(ws, ec);
  fs::create_directories(ws / ".lathe");
  fs::copy(recording / "lathe.toml", ws / ".lathe/lathe.toml");
  fs::copy(recording / "cassettes", ws / ".lathe/cassettes", fs::copy_options::recursive);
}

// A call the cassettes could not answer, as the replay provider reports it on stderr.
inline bool unanswered(const run_result& r) { return r.err.find("lathe: replay:") != std::string::npos; }

}  // namespace lathe::testing
