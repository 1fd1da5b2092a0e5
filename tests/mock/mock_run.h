// Running lathe-mock-model the way the `command` provider does (llm/command.h): a prompt built
// from an llm::request (system prompt, blank line, user message) on stdin, a kernel bundle as
// the working directory, the reply on stdout. Prompts are rendered from real bundles in the
// documented layout (docs/proposer.md "Prompts"): each field under a `## name` heading, kernels as
// `=== FILE <path> ===` sections (numbered for audits) with a `flags:` line.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agent/ask.h"
#include "core/test_util.h"
#include "spec/bundle.h"
#include "llm/command.h"

namespace lathe::mock_test {

inline std::filesystem::path source_dir() {
  return LATHE_SOURCE_DIR;
}
inline std::filesystem::path mock_binary() {
  return LATHE_MOCK_MODEL;
}

struct run_result {
  int status = -1;
  std::string out, err;
};

// Runs the mock with `args`, `input` on stdin, in `dir`.
inline run_result run_mock(const std::vector<std::string>& args, const std::string& input,
                           const std::filesystem::path& dir) {
  test::temp_dir io;
  test::write_file(io / "in", input);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in = open((io / "in").c_str(), O_RDONLY);
    const int out = open((io / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open((io / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
        chdir(dir.c_str()) != 0)
      _exit(126);
    std::vector<std::string> all{mock_binary().string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  run_result r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = test::read_text(io / "out");
  r.err = test::read_text(io / "err");
  return r;
}

inline kernel_bundle bundle(const std::filesystem::path& rel) {
  auto b = load_bundle(source_dir() / rel);
  if (!b) throw std::runtime_error(b.error().message);
  return *b;
}

// The `kernel` field: every file under `=== FILE <path> ===`, then the manifest's flags.
inline std::string kernel_field(const kernel_bundle& b, bool numbered = false) {
  std::string out;
  for (const auto& [path, text] : b.sources) {
    out += "=== FILE " + path + " ===\n";
    if (!numbered) {
      out += text;
      if (!text.empty() && text.back() != '\n') out += "\n";
      continue;
    }
    int no = 0;
    size_t b0 = 0;
    while (b0 < text.size()) {
      auto e = text.find('\n', b0);
      if (e == std::string::npos) e = text.size();
      char num[16];
      std::snprintf(num, sizeof num, "%4d| ", ++no);
      out += num + text.substr(b0, e - b0) + "\n";
      b0 = e + 1;
    }
  }
  out += "flags:";
  for (const auto& f : b.manifest.flags) out += " " + f;
  if (b.manifest.flags.empty()) out += " (none)";
  return out + "\n";
}

using field_list = std::vector<std::pair<std::string, std::string>>;

// One user message: the operation line, then each field under its heading ("(none)" when empty).
inline std::string user_message(const std::string& op, const field_list& fields) {
  std::string out = "lathe-operation: " + op + " v1\n";
  for (const auto& [name, value] : fields)
    out += "\n## " + name + "\n" + (value.empty() ? "(none)\n" : value) +
           (value.empty() || value.back() == '\n' ? "" : "\n");
  return out;
}

inline llm::request request_for(const std::string& op, const field_list& fields) {
  llm::request r;
  r.system = "You are a careful kernel engineer. Reply with one JSON object.";
  r.messages.push_back({"user", user_message(op, fields)});
  return r;
}

inline std::string prompt_for(const std::string& op, const field_list& fields) {
  return llm::command_prompt(request_for(op, fields));
}

// The reply's JSON object (agent::extract_json, as the LLM proposer reads it).
inline nlohmann::json reply_json(const std::string& out) {
  auto j = agent::extract_json(out);
  if (!j) throw std::runtime_error("no JSON in the reply: " + j.error() + "\n" + out);
  return *j;
}

// A copy of a bundle in a fresh directory (files mode works on it).
inline void materialize(const kernel_bundle& b, const std::filesystem::path& dir) {
  auto w = write_bundle(b, dir);
  if (!w) throw std::runtime_error(w.error().message);
}

// One question to the mock in a bundle's folder: its run, and the reply's JSON when it answered.
struct reply {
  run_result run;
  nlohmann::json value;
};

inline reply ask(const std::vector<std::string>& args, const std::string& prompt, const kernel_bundle& b) {
  test::temp_dir dir;
  materialize(b, dir.path());
  reply r;
  r.run = run_mock(args, prompt, dir.path());
  EXPECT_EQ(r.run.status, 0) << r.run.err;
  if (r.run.status == 0) r.value = reply_json(r.run.out);
  return r;
}

}  // namespace lathe::mock_test
