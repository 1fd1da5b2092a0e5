// A budget (DESIGN.md): limits on steps, gate evaluations, tokens, money and wall time. Its own
// header because the model layer's ledger (llm/budget.h) enforces it and needs nothing of runs.
#pragma once

#include <cstdint>
#include <optional>

namespace lathe {

// Each action reserves its worst case first and commits what it used.
struct budget {
  std::optional<int64_t> steps, evals, tokens;
  std::optional<double> usd, seconds;
};

}  // namespace lathe
