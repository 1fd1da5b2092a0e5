// Test fixtures of the proposer tests: a scripted model (queued replies, every request and bundle
// it was given recorded) and the real prompts, tasks and kernels of the repository.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/llm_proposer.h"
#include "agent/prompt.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "llm/command.h"

namespace lathe::agent::test {

namespace fs = std::filesystem;
using nlohmann::json;

// A model that answers from a queue and remembers what it was asked. A workspace provider, like
// the command provider, so that the bundle the proposer passes on is seen too.
class scripted : public llm::workspace_provider {
 public:
  std::deque<llm::call_result> replies;
  std::vector<llm::request> seen;
  std::vector<std::string> bundles;  // the hash of the bundle of each call ("" for call())

  std::string name() const override { return "scripted/test"; }
  llm::call_result call(const llm::request& r, const llm::cancel_token*) override {
    bundles.emplace_back();
    return next(r);
  }
  llm::call_result call_in(const llm::request& r, const kernel_bundle& b,
                           const llm::cancel_token*) override {
    bundles.push_back(b.hash);
    return next(r);
  }
  void say_text(const std::string& text, int64_t tokens_in = 100, int64_t tokens_out = 50) {
    llm::response r;
    r.text = text;
    r.tokens_in = tokens_in;
    r.tokens_out = tokens_out;
    r.model = "scripted-1";
    replies.push_back(r);
  }
  void say(const json& reply) { say_text("```json\n" + reply.dump(2) + "\n```\n"); }
  // The first line of the last user message of call `i`.
  std::string first_user_line(size_t i) const {
    const std::string& u = seen.at(i).messages.front().content;
    return u.substr(0, u.find('\n'));
  }
  const std::string& last_message(size_t i) const { return seen.at(i).messages.back().content; }

 private:
  llm::call_result next(const llm::request& r) {
    seen.push_back(r);
    if (replies.empty())
      return tl::unexpected(llm::call_failure{llm::call_error::server, "no reply queued", 500, 1});
    auto c = replies.front();
    replies.pop_front();
    return c;
  }
};

inline fs::path source_dir() {
  return LATHE_SOURCE_DIR;
}

inline const prompt_library& prompts() {
  static const prompt_library lib = [] {
    auto l = prompt_library::load(source_dir() / "prompts");
    if (!l) throw std::runtime_error(l.error().message);
    return *l;
  }();
  return lib;
}

inline task load(const fs::path& dir) {
  auto t = load_task(dir);
  if (!t) throw std::runtime_error(t.error().message);
  return *t;
}

inline kernel_bundle bundle(const fs::path& p) {
  auto b = load_bundle(p);
  if (!b) throw std::runtime_error(b.error().message);
  return *b;
}

inline const task& axpy() {
  static const task t = load(source_dir() / "tests/integration/tasks/axpy");
  return t;
}
inline const task& softmax() {
  static const task t = load(source_dir() / "tasks/softmax");
  return t;
}
inline kernel_bundle axpy_naive() {
  return bundle(source_dir() / "tests/integration/tasks/axpy/kernels/naive.cpp");
}
inline kernel_bundle softmax_expert() {
  return bundle(source_dir() / "tasks/softmax/kernels/expert");
}

// A JSON string holding one SEARCH/REPLACE block on `file`.
inline std::string search_replace(const std::string& file, const std::string& search,
                                  const std::string& replace) {
  return "@@@ FILE " + file + "\n<<<<<<< SEARCH\n" + search + "=======\n" + replace +
         ">>>>>>> REPLACE\n@@@ END\n";
}

// The 1-based number of the first line of `text` that contains `part` (0: none).
inline int32_t line_of(const std::string& text, const std::string& part) {
  int32_t n = 1;
  for (size_t at = 0; at < text.size(); ++n) {
    size_t eol = text.find('\n', at);
    if (eol == std::string::npos) eol = text.size();
    if (text.substr(at, eol - at).find(part) != std::string::npos) return n;
    at = eol + 1;
  }
  return 0;
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace lathe::agent::test
