// The edits of one code-writing reply (docs/proposer.md "Replies"): the JSON's `edits` string
// first, then edit blocks written in the reply text outside the JSON (what the `command` provider
// appends for an agent CLI's working-directory changes, docs/edits.md). Both apply exactly or the
// reply is refused with the edit's own message, which goes back to the model.
#pragma once

#include <string>
#include <string_view>

#include "agent/edit.h"

namespace lathe::agent {

struct applied_edits {
  kernel_bundle kernel;  // the edited bundle (hash recomputed, no origin)
  std::string edits;     // what was applied, in the docs/edits.md format
};

// Whether the text has a line that opens an edit block ("@@@ …", "<<<<<<< SEARCH"). Lines of a
// JSON object never do: JSON strings hold no raw newlines, so an `edits` value is never split
// into lines of the reply.
bool has_edit_blocks(std::string_view text);

// Applies `json_edits` (may be empty), then the edit blocks of `reply_text` (may have none) to
// `base`. An agent CLI that both wrote its edits into the JSON and made them in its working
// directory reports the same change twice: a WHOLE block equal to the file as the JSON's edits
// left it, or a DELETE of a file they already deleted, is dropped rather than refused. A reply with
// no edit anywhere fails with the format's message.
edit_result<applied_edits> apply_reply_edits(const kernel_bundle& base, std::string_view json_edits,
                                             std::string_view reply_text);

}  // namespace lathe::agent
