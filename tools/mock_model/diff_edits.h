// From two versions of a bundle to the edits of docs/edits.md: per changed file, SEARCH/REPLACE
// blocks over the changed lines with just enough context for each SEARCH to occur exactly once
// (in the file as the blocks before it left it, which is how apply() reads them); flags as +/-.
#pragma once

#include "agent/edit.h"
#include "kernel_io.h"

namespace lathe::mock {

// Files present in `after` only become WHOLE edits; files missing from `after` are DELETE edits.
agent::edit_set edits_between(const mock_bundle& before, const mock_bundle& after);

}  // namespace lathe::mock
