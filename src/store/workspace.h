// The workspace: `.lathe/` found by searching upward from the current directory (like .git), or
// created there; `--workspace DIR` overrides (DESIGN.md contracts).
#pragma once

#include <filesystem>
#include <optional>

#include "core/error.h"

namespace lathe {

struct workspace {
  std::filesystem::path root;  // the .lathe directory
  std::filesystem::path db() const { return root / "lathe.db"; }
  std::filesystem::path cache() const { return root / "cache"; }
  std::filesystem::path runs() const { return root / "runs"; }
};

// With `explicit_dir`: that directory is the workspace's parent (DIR/.lathe), or DIR itself when
// it is named .lathe; created when missing. Without: search upward from `start` for .lathe/;
// when none exists, create `start/.lathe`. Directories are created 0700: candidate code, which
// runs as another user, can neither read nor write them.
result<workspace> open_workspace(const std::optional<std::filesystem::path>& explicit_dir,
                                 const std::filesystem::path& start);

}  // namespace lathe
