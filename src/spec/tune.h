// Tunables in a bundle (`[tune]` in kernel.toml, docs/tune.md): the section read and written,
// a configuration applied to a bundle, and the space of configurations a task and a target
// allow. The search over that space is search/tune.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe {

// Most values one tunable may take, and most configurations a space may hold before its
// constraints: a larger space is refused with the reason (narrow the values, or add constraints).
inline constexpr size_t max_tunable_values = 4096;
inline constexpr size_t max_tune_configs = 1000000;
// A kernel.toml is input: its constraints are bounded in number and length, the checks of a space
// in count, and the refusals kept in detail (the count is always exact).
inline constexpr size_t max_tune_constraints = 32;
inline constexpr size_t max_constraint_chars = 512;
inline constexpr size_t max_constraint_checks = 20000000;
inline constexpr size_t max_refusals_kept = 100;

// "BLOCK=128,ITEMS=4": how a configuration is named (in bundle names, tables, the store).
std::string config_label(const tune_config& c);

// The bundle with `c` applied: every tunable's define set to its value (and its default, so that
// the bundle written and loaded again is the same), the name suffixed with the label, the hash
// recomputed; in a Python kernel, the knob lines of its entry file rewritten instead of defines
// (spec/python_knobs.h). Refused when `c` misses a tunable, names one the bundle does not
// declare, or gives a value outside its list.
result<kernel_bundle> configure(const kernel_bundle& b, const tune_config& c);

// The symbols a constraint may name besides the tunables and the task's shape symbols: the
// target's limits where the target knows them (TARGET_CORES, TARGET_LLC_BYTES; CUDA:
// TARGET_SMEM_BYTES per block with opt-in, TARGET_SMEM_PER_SM_BYTES, TARGET_REGISTERS_PER_SM).
std::map<std::string, int64_t> target_limits(const target& t);

// What a constraint sees, per shape set of `t` (one unnamed set for a task without shapes): the
// target's limits, then the set's shape symbols (a limit wins a clash); the configuration's values
// are added by the caller. The one rule for tune (enumerate_configs) and a tuned card's application.
std::vector<std::pair<std::string, std::map<std::string, int64_t>>> constraint_symbols(const task& t,
                                                                                      const target& tgt);

// An error when a tunable has the name of a target limit or of one of `t`'s shape symbols (a value
// would stand in for the shape in a constraint): the space cannot be tuned or configured as it is.
result<void> tunable_names_free(const tune_space& s, const task& t, const target& tgt);

// A configuration that a constraint refused, on which shape set.
struct tune_refusal {
  tune_config config;
  std::string constraint;
  std::string shape_set;
};

struct tune_enumeration {
  std::vector<tune_config> configs;  // every admitted configuration, in lexicographic order of
                                     // the tunables' declared values (the default among them)
  std::vector<tune_refusal> refused;  // the first max_refusals_kept refusals
  size_t refused_count = 0;           // every refusal
};

// Every configuration of the space that satisfies every constraint on every shape set of `t`.
// An error (not a refusal) when a constraint cannot be evaluated (an unknown name, a division by
// zero), a tunable shadows a shape symbol or a limit, the space is larger than max_tune_configs,
// the checks would be more than max_constraint_checks, or the default configuration is itself
// refused.
result<tune_enumeration> enumerate_configs(const tune_space& s, const task& t, const target& tgt);

}  // namespace lathe
