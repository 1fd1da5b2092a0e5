// lathe skills admit: candidate cards tried on the held-out tasks' kernels through the gate
// (skills/admit.h), with the proposer `--proposer` names. Its own file: the verb needs the gate,
// the proposer and the task list, which list/show/export/import do not.
#pragma once

#include "cli/verbs.h"

namespace lathe::cli {

void add_skills_admit(CLI::App* skills, const common_options& common, int& exit_code);

}  // namespace lathe::cli
