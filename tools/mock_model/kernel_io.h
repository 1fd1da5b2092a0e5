// Where the mock's kernel comes from and where its changes go. A command provider runs the mock
// in a copy of the kernel bundle (llm/command.h), so the working directory is the truth when it
// holds a kernel.toml; otherwise the kernel is read back from the prompt's `=== FILE` sections.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "prompt_reader.h"

namespace lathe::mock {

struct mock_bundle {
  std::map<std::string, std::string> files;  // path -> contents
  std::vector<std::string> flags;
  bool flags_known = false;  // from a manifest, or a flags line in the prompt
  std::string entry;         // the entry file ("" when unknown)
  bool cuda = false;         // any .cu/.cuh file
  bool numbered = false;     // read from a numbered (audit) listing
};

bool operator==(const mock_bundle& a, const mock_bundle& b);

// The bundle in `dir` (its kernel.toml), or an error saying why not.
tl::expected<mock_bundle, std::string> bundle_from_dir(const std::filesystem::path& dir);
// The bundle shown in `text` (FILE sections); an error when there is none.
tl::expected<mock_bundle, std::string> bundle_from_text(std::string_view text);

// The kernel an operation works on: the working directory's bundle when `prefer_dir` and there
// is one, else the prompt's `kernel` field (or the whole user message), else the directory.
tl::expected<mock_bundle, std::string> operation_kernel(const prompt& p,
                                                        const std::filesystem::path& dir,
                                                        bool prefer_dir);

// Writes every file of `after` that differs from `before` into `dir` (files mode).
tl::expected<void, std::string> write_changed_files(const mock_bundle& before,
                                                    const mock_bundle& after,
                                                    const std::filesystem::path& dir);

}  // namespace lathe::mock
