// Reading what lathe sent (docs/proposer.md "Prompts"; llm/command.h's stdin): the system prompt,
// a blank line, the user message, or a conversation with each message under a `### <role>` line.
// The first line of the first user message is `lathe-operation: <op> v<N>`; a later user message
// starting `lathe-feedback:` (or any later user message) asks for a repair round.
//
// Fields are found by their names, as a template shows them: a heading line naming the field
// (`## kernel`, `kernel:`, `**Kernel**`, `<kernel>`, `=== kernel ===`), or `name: value` on one
// line. Kernels are the `=== FILE <path> ===` sections, numbered (`   12| code`) or not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

namespace lathe::mock {

struct prompt {
  std::string system;
  std::string user;       // the first user message: the operation and its fields
  std::string operation;  // "propose_backward"
  int32_t version = 0;
  bool repair = false;   // a later user message asks for the answer again
  std::string feedback;  // that message
  uint64_t hash = 0;     // of system + user only, so a repair round redoes the same choice
  // The first line of the user message's `## language` section (v3 prompts): "modelnew" or
  // "c-abi"; "c-abi" when there is none (v1 and v2 prompts).
  std::string language = "c-abi";
};

tl::expected<prompt, std::string> read_prompt(std::string_view input);

// The fields each operation's template has (docs/proposer.md): a field's value ends where the
// next of these begins.
const std::vector<std::string>& operation_fields(std::string_view operation);

// The value of `name` in `message`, or nullopt when no heading names it.
std::optional<std::string> field(std::string_view message, std::string_view name,
                                 std::string_view operation);

// Whether a prompt's `target` field names a CUDA device: its `platform: cuda` (lineage/init.cpp,
// agent/kernel_text.cpp), or, where no platform word is written, an sm_ architecture. Not any
// "cuda" in it: a CPU's model name or a path could hold the letters.
bool target_is_cuda(std::string_view target);

struct kernel_file {
  std::string path;
  std::string text;  // numbering removed, always ending in '\n'
};

struct kernel_text {
  std::vector<kernel_file> files;
  std::vector<std::string> flags;
  bool flags_shown = false;  // a flags line was found
  bool numbered = false;     // the files were shown with line numbers
  std::string entry;         // from an `entry:` line of the manifest, when shown
};

// Every `=== FILE <path> ===` section of `text`, and the manifest's flags when a flags line is
// there (`flags: -O3 -fopenmp`, `flags = ["-O3"]`).
kernel_text read_kernel(std::string_view text);

struct feature_line {
  std::string name, locus, params;  // `name @ locus (params)`
};
// Lines `name @ locus (params)` whose name is a registry name, in order.
std::vector<feature_line> feature_lines(std::string_view text);

// Registry names mentioned in `text` (as whole words), in order of first mention.
std::vector<std::string> registry_names_in(std::string_view text);

std::vector<std::string> split_lines(std::string_view text);

}  // namespace lathe::mock
