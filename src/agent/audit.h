// Verifying a feature audit's citations (docs/proposer.md "What lathe verifies itself"): a model
// says a mechanism is present by citing lines; lathe checks that the lines exist, are few, and hold
// code. Comments are not evidence: a kernel that says "// uses cp.async" in a comment, or whose
// removed code survives as a commented-out block, must not pass an audit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/proposer.h"
#include "core/kernel.h"

namespace lathe::agent {

inline constexpr int32_t max_citation_lines = 20;

// Per line of a C/C++/CUDA source (1-based, index 0 unused): true when the line holds code,
// false when it is blank or only comment (`// …`, inside `/* … */`). Comment markers inside string
// and character literals (raw strings included) are not comments. Preprocessor lines are code.
std::vector<bool> code_lines(std::string_view source);

// Why `c` is not evidence in `k` (a file that is not in the bundle, a range outside the file,
// more than max_citation_lines lines, only blank or comment lines); nullopt when it is.
std::optional<std::string> citation_problem(const kernel_bundle& k, const citation& c);

// One verdict per asked name, in the asked order: the model's verdict for it (the first one when
// it gave several), with every citation checked. A verdict with an invalid citation, or `present`
// without a valid one, is demoted to `unknown` and its reason added to `demoted`. An asked name
// without a verdict is `unknown`. Verdicts for names not asked are ignored.
audit_result verify_audit(const kernel_bundle& k, const std::vector<std::string>& asked,
                          const std::vector<feature_verdict>& given);

}  // namespace lathe::agent
