// Why a search run ended (optimize, evolve): a closed set, stored as its text.
#pragma once

#include <cstdint>

namespace lathe::search {

enum class stop_reason : uint8_t {
  steps, evals, calls, tokens, usd, seconds,  // that budget limit
  exhausted,   // the proposer had nothing left to try on the best kernel
  stalled,     // max_stall steps in a row without an accepted one
  waiting,     // batch mode: a prompt is written out and waits for its answer (resumable)
};
const char* to_string(stop_reason s);

}  // namespace lathe::search
