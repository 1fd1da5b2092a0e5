// The `command` provider (DESIGN.md "Two proposers"): an agent CLI the user already has
// (`codex exec -`, `claude -p`) used as a model. The prompt goes to its stdin, its stdout is the
// reply. It runs with a clean environment (only the variables its configuration names: API keys
// reach it only when listed for that command), under a wall-clock timeout, in a fresh temporary
// directory holding a copy of the kernel bundle; whatever it changed there comes back as edits,
// written into the reply in the format of docs/edits.md (WHOLE / DELETE blocks), so that one
// parser (agent/edit.h) and one cassette format serve every provider. Nothing it says about
// performance is read: only its text and its files come back, and the gate measures.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel.h"
#include "llm/provider.h"

namespace lathe::llm {

// A provider that can work on files: the kernel bundle is its working directory. Providers that
// only return text (replay of such a call included) ignore the bundle or are not one of these.
class workspace_provider : public provider {
 public:
  virtual call_result call_in(const request& r, const kernel_bundle& bundle,
                              const cancel_token* cancel = nullptr) = 0;
};

struct command_config {
  std::string name;               // provenance: "command/<name>"
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in lathe's PATH
  // Variables copied from lathe's environment into the command's; nothing else is set (list
  // PATH and HOME for real CLIs: they find their tools and their login through them). An API
  // key reaches the command only when its variable is listed here.
  std::vector<std::string> env;
  double timeout_seconds = 900;                  // wall clock, from start to exit
  uint64_t max_reply_bytes = uint64_t{8} << 20;  // stdout beyond this fails the call
};

class command_provider final : public workspace_provider {
 public:
  explicit command_provider(command_config config);
  std::string name() const override;
  // In an empty working directory: files the command creates still come back as edits.
  call_result call(const request& r, const cancel_token* cancel = nullptr) override;
  call_result call_in(const request& r, const kernel_bundle& bundle,
                      const cancel_token* cancel = nullptr) override;

 private:
  call_result run(const request& r, const kernel_bundle* bundle, const cancel_token* cancel);
  command_config config_;
};

// What the command reads on stdin: the system prompt, a blank line, then the user message; a
// conversation of several messages has each one under a "### <role>" line.
std::string command_prompt(const request& r);

// Valid UTF-8 without NUL bytes: what can travel as reply text and JSON (cassettes).
bool is_utf8_text(std::string_view s);

}  // namespace lathe::llm
