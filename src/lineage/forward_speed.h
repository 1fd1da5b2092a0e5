// The speed rule of a forward re-derivation (forward.cpp): the forward result is timed against
// the successor it should reproduce; a step whose A/A noise margin is too wide to tell a quarter
// of its speed lost from none is timed once more, and left undecided if it stays that wide. A
// pure function of the timings, so that the rule is tested without building or timing a kernel.
#pragma once

#include <algorithm>
#include <optional>

#include "core/lineage.h"

namespace lathe::lineages::detail {

// The widest noise margin under which a forward step's speed is decided: a ratio of 0.934 was
// accepted against 1 - 0.754 (a margin of 0.754 accepts anything above 0.25x).
constexpr double undecided_margin = 0.25;
// Timings of one forward step at most: the first, and one more when its margin was too wide.
constexpr int forward_timings = 2;

// One timing of the forward result against the successor: successor time / forward time, and
// the noise margin the decision rule allows it (gate_verifier.cpp margin).
struct forward_timing {
  double ratio = 0;
  double margin = 0;
};

struct forward_speed {
  forward_status status = forward_status::undecided;  // accepted, rejected or undecided
  forward_timing last;                                // the timing the status comes from
  int timings = 0;                                    // how many were taken
};

// `time_once()` times the step once more; nullopt when the timing failed (the caller's rejection,
// returned as nullopt here too). Accepted when the ratio clears 1 - margin, rejected below it,
// undecided when the margin stayed at or past undecided_margin after forward_timings timings.
template <class F>
std::optional<forward_speed> decide_forward_speed(F&& time_once) {
  forward_speed s;
  for (s.timings = 1; s.timings <= forward_timings; ++s.timings) {
    const std::optional<forward_timing> t = time_once();
    if (!t) return std::nullopt;
    s.last = *t;
    if (t->margin < undecided_margin) break;
  }
  s.timings = std::min(s.timings, forward_timings);
  if (s.last.margin >= undecided_margin) s.status = forward_status::undecided;
  else s.status = s.last.ratio >= 1 - s.last.margin ? forward_status::accepted : forward_status::rejected;
  return s;
}

}  // namespace lathe::lineages::detail
