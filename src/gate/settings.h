// How a caller asks the gate to measure (`lathe eval`'s options), in plain values: the cli binds
// its options straight into one, and every verb that gates a kernel (eval, rules apply,
// decompose, optimize, evolve, bench) measures it the same way, so its stored policy means the
// same thing. gate_config_for turns them into the gate's configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/task.h"
#include "gate/gate.h"

namespace lathe::gate {

struct gate_settings {
  bool time = true;         // false: stop after the correctness checks (--no-time)
  bool aa_control = true;   // the A/A control (--no-aa)
  uint32_t seeds = 3;       // correctness trials per shape set; at least 3
  double max_time = 3.0;    // longest paired series, seconds (--max-time)
  std::optional<double> target_rse;  // default: the platform's (gate_config_for)
  uint64_t seed = 0;        // input seed base; 0: random per evaluation
  timing_mode mode = timing_mode::decision;
  uint32_t warmup = 3, trials = 100; // kernelbench mode
  bool host_trials = false;          // CUDA: inputs and references on the host
  bool refuse_torch_fallback = false;  // a ModelNew's calls of the reference's ops: forbidden
  bool progress = true;              // stage messages on stderr ("… compile"; the cli prints them)
  // --quick: 2 process pairs and 4 ABBA rounds per paired series (the policy's 4 and 6): about
  // half the timing cost of a slow kernel, wider intervals. The A/A margin grows with them, so
  // noise makes "faster" harder to show, never easier. The policy is stored with the evaluation.
  bool quick = false;
  // --start-workers one-by-one: the timing workers started one after another (the policy's
  // starts_at_once off), to measure a concurrent start against the serial one on one build.
  bool workers_one_by_one = false;
};

// The measuring part of the configuration for a task on `plat`: mode, trials, seeds, the timing
// policy (with the platform's noise target). Where it runs (cache, toolchain, target, worker)
// and the progress callback are the caller's to set.
gate_config gate_config_for(const gate_settings& s, platform plat);

}  // namespace lathe::gate
