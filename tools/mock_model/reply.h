// The reply writer: the answer's object as one JSON object in a ```json fence, its code change as
// the `edits` string (blocks mode) or as changed files in the working directory (files mode),
// and the faults this call was chosen to carry (docs/proposer.md, "The mock model"):
//   bad edit  the first SEARCH of the edit is altered so that it occurs nowhere in the file
//             (its first line re-indented), the way a model misquotes code;
//   invalid   the object breaks its schema: a required key missing, a value of the wrong type,
//             or a feature name outside the registry.
#pragma once

#include <ostream>

#include "answers.h"

namespace lathe::mock {

// Returns an exit status (options.h): exit_ok, or exit_write_failed when files mode could not
// write the working directory.
int write_reply(const context& c, answer a, std::ostream& out, std::ostream& err);

}  // namespace lathe::mock
