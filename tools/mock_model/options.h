// The mock model's command line (docs/proposer.md, "The mock model").
#pragma once

#include <cstdint>
#include <optional>

#include "wrong.h"

namespace lathe::mock {

enum class edit_mode : uint8_t {
  blocks,  // SEARCH/REPLACE in the reply's `edits` string
  files,   // the working directory's files are edited; `edits` is empty (llm/command.h turns
           // the changes into edits)
};

struct options {
  uint64_t seed = 0;
  double wrong_rate = 0;     // code-writing answers that compute a wrong result
  double bad_edit_rate = 0;  // answers whose edit does not apply (SEARCH text not in the file)
  double invalid_rate = 0;   // replies that break their operation's schema
  edit_mode mode = edit_mode::blocks;
  std::optional<wrong_kind> only_kind;  // --wrong-kind: that kind of wrong result when it applies
  int32_t mutation_changes = 1;         // mutate: up to this many changes in one answer
};

// Exit statuses (documented in --help and docs/proposer.md).
enum exit_status : int {
  exit_ok = 0,            // a reply was written (a refusal or a deliberate fault included)
  exit_internal = 1,      // a bug in the mock
  exit_usage = 2,         // bad command line
  exit_bad_prompt = 3,    // no `lathe-operation:` line, or an unknown operation
  exit_no_kernel = 4,     // the operation needs a kernel and none was found
  exit_write_failed = 5,  // files mode: the working directory could not be written
};

}  // namespace lathe::mock
