// The candidate language a search writes (`optimize`, `evolve`: --language), issue 44: asked, or
// `modelnew` by default for a bare KernelBench problem (a problem file with no baseline kernel),
// `c-abi` otherwise. A ModelNew search starts from the problem's own Model as a ModelNew and
// pairs against it (eager PyTorch, spec/problem.h eager_baseline).
#pragma once

#include <optional>
#include <string>

#include "core/candidate_language.h"
#include "core/error.h"
#include "core/task.h"

namespace lathe::cli {

struct search_language {
  candidate_language lang = candidate_language::c_abi;
  std::optional<kernel_bundle> eager;  // modelnew: the problem's Model as a ModelNew
};

// `asked`: the option's value, empty for the default. Refused with what to do instead: a language
// the search cannot write, or modelnew on a task without a KernelBench Model on the CPU.
result<search_language> pick_search_language(const task& t, const std::string& asked);

// A start kernel given on the command line must be written in a ModelNew search's language. A
// C-ABI search takes what it took before (a task's Python kernels included): not checked.
result<void> check_start_language(const kernel_bundle& start, const search_language& sl);

}  // namespace lathe::cli
