// Edits a proposer returns (DESIGN.md contracts, "Edits"): per-file SEARCH/REPLACE blocks or
// whole-file contents, deletions, plus compiler-flag and target-ISA changes, in the text format of
// docs/edits.md.
// Edits apply exactly or not at all: an edit that does not apply is outcome::edit_not_applied,
// with a message written for the model (what failed, where, and what the file really holds), fed
// back to it. Nothing is fuzzed: no whitespace-insensitive matching, no "closest match" applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <vector>

#include "core/kernel.h"
#include "core/outcome.h"

namespace lathe::agent {

// Markers of the format, each alone on its line (docs/edits.md). llm/command.cpp writes the same
// WHOLE / DELETE / INVALID lines for an agent CLI's working-directory changes; the command test
// parses its output with parse_edits, so the two cannot drift apart unnoticed. (FLAGS and ISA are
// never written there: an agent changes them by printing the block on stdout.)
inline constexpr std::string_view marker_file = "@@@ FILE ";
inline constexpr std::string_view marker_whole = "@@@ WHOLE ";
inline constexpr std::string_view marker_delete = "@@@ DELETE ";
inline constexpr std::string_view marker_invalid = "@@@ INVALID ";
inline constexpr std::string_view marker_flags = "@@@ FLAGS";
inline constexpr std::string_view marker_isa = "@@@ ISA ";  // one line: "@@@ ISA x86-64-v2"
inline constexpr std::string_view marker_end = "@@@ END";
inline constexpr std::string_view marker_search = "<<<<<<< SEARCH";
inline constexpr std::string_view marker_divider = "=======";
inline constexpr std::string_view marker_replace = ">>>>>>> REPLACE";

// The size caps of a bundle (spec/bundle.cpp's loader: sources, not data), so that an edited
// bundle always loads again after write_bundle.
inline constexpr uint64_t max_file_bytes = uint64_t{16} << 20;
inline constexpr uint64_t max_bundle_bytes = uint64_t{64} << 20;
// New files: sources and headers only (a model that writes a data file or a build script into a
// kernel is wrong, and the screen would not look at it).
inline constexpr std::string_view new_file_extensions[] = {".cpp", ".cc", ".cxx", ".cu",  ".h",
                                                           ".hpp", ".hh", ".cuh", ".inl", ".inc"};

struct search_replace {
  std::string search;  // exact text, whole lines, each ending in '\n'
  std::string replace;
  int32_t reply_line = 0;  // where the block starts in the reply (1-based), for messages
};

enum class file_edit_kind : uint8_t {
  blocks,   // SEARCH/REPLACE blocks, applied in order, each to the result of the previous one
  whole,    // the file's complete new contents (creates the file when it is new)
  remove,   // the file is deleted
  invalid,  // a change that cannot be an edit (llm/command: a symlink, a binary file); `contents`
            // says why, and apply refuses it
};

struct file_edit {
  std::string path;  // relative to the bundle, as written in the reply
  file_edit_kind kind = file_edit_kind::blocks;
  std::vector<search_replace> blocks;  // kind == blocks
  std::string contents;                // kind == whole: the contents; invalid: the reason
  int32_t reply_line = 0;
};

struct flag_edit {
  bool add = true;  // "+ -O3" adds, "- -O2" removes
  std::string flag;
};

struct edit_set {
  std::vector<file_edit> files;  // in reply order
  std::vector<flag_edit> flags;  // in reply order
  // The manifest's new `isa` ("@@@ ISA x86-64-v2"); at most one per reply. Which level is
  // allowed is the gate's decision (unsupported_target above the host), not apply's.
  std::optional<std::string> isa;
  bool empty() const { return files.empty() && flags.empty() && !isa; }
};

struct edit_error {
  std::string path;     // the file concerned; empty when the reply as a whole is at fault
  int32_t block = 0;    // 1-based SEARCH/REPLACE block of that file edit; 0 when not a block
  std::string message;  // for the model: self-contained, names the file and the block
  lathe::outcome verdict = lathe::outcome::edit_not_applied;
};

template <class T>
using edit_result = tl::expected<T, edit_error>;

// Parses every edit in a model's reply; prose around the blocks is ignored. A reply with no edit,
// or a block that is malformed (a SEARCH without its REPLACE, a WHOLE without its END), fails.
edit_result<edit_set> parse_edits(std::string_view reply);

// Applies `edits` to the bundle's own files, in order. Fails when any edit does not apply exactly
// (SEARCH found zero or several times, a path outside the bundle, a new file of a kind a bundle
// must not hold, a size cap, a flag that is not there to remove, an ISA that is not a level or is
// the manifest's already, a result identical to the input).
// The result has its file list, hash and `bare` updated and no origin (it lies nowhere yet).
edit_result<kernel_bundle> apply(const kernel_bundle& bundle, const edit_set& edits);

// parse_edits then apply.
edit_result<kernel_bundle> apply_reply(const kernel_bundle& bundle, std::string_view reply);

// The text form of `edits` (parse_edits(render_edits(e)) gives `e` back, reply lines aside).
std::string render_edits(const edit_set& edits);

}  // namespace lathe::agent
