// The gate's settings as a verb's options hold them: each verb that gates kernels binds its
// --max-time, --quick and the like straight into a gate_settings (gate/settings.h), so none
// copies them into one by hand.
#pragma once

#include "cli/context.h"

namespace lathe::cli {

// The gate's settings with `max_time` seconds per paired series: 1 s in the verbs that time many
// kernels (init, decompose, optimize, evolve, score, skills admit, bench); eval and rules apply
// keep the gate's own 3 s.
inline gate_settings gate_settings_with(double max_time) {
  gate_settings s;
  s.max_time = max_time;
  return s;
}

}  // namespace lathe::cli
