// `lathe tune` (DESIGN.md "Tuning", docs/tune.md): a bundle's tunables searched through the gate.
// Every configuration the space admits (spec/tune.h) is a bundle of its own, checked on every
// shape set and timed as a paired ratio against the default configuration; the fastest that
// passed is then measured again against the default in fresh processes, and only a decided
// "faster" crowns it: noise cannot.
//
// Measured configurations are cached per (task, target, configuration, default, gate settings),
// so a second run, a run killed and started again, or another strategy over the same space
// replays them instead of timing them again (kernel_tuner's simulation mode); the crowning series
// is never replayed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/evaluation.h"
#include "core/kernel.h"
#include "core/target.h"
#include "core/task.h"
#include "spec/tune.h"
#include "verify/verifier.h"

namespace lathe::search {

enum class tune_strategy : uint8_t {
  exhaustive,  // every admitted configuration, in the space's order (the default first)
  random,      // a seeded sample without repetition (the default first)
  model,       // a tree-structured Parzen estimator over the declared values (tune_sampler.h)
  halving,     // successive halving: a random sample timed quickly, the best third in full
};
const char* to_string(tune_strategy s);
std::optional<tune_strategy> parse_tune_strategy(const std::string& s);
inline constexpr const char* tune_strategy_words = "exhaustive | random | model | halving";

// Which configurations an ordered strategy (exhaustive, random) measures, in order, from the admitted ones (`configs`, which
// hold `defaults`): the default first, then the strategy's order; at most `max_evaluations`
// (0: all).
std::vector<tune_config> tune_order(tune_strategy s, const std::vector<tune_config>& configs,
                                    const tune_config& defaults, uint64_t seed, int64_t max_evaluations);

struct tune_options {
  tune_strategy strategy = tune_strategy::exhaustive;
  int64_t max_evaluations = 0;  // configurations measured (cached ones count); 0: no limit
  double max_seconds = 0;       // wall time of the search before the crowning; 0: no limit
  uint64_t seed = 1;
  std::string settings;         // the gate settings' text, part of the cache key ("max_time=1")
  // halving's first rung: a verifier with less timing effort (--quick, a shorter series) and its
  // settings' text; required by halving, unused otherwise.
  lineages::verifier* quick = nullptr;
  std::string quick_settings;
  // kernel_tuner's simulation mode: every configuration from the cache, none timed, no crown (the
  // best is not re-timed; `winner` stays the default); a configuration never measured is an
  // error. For comparing strategies over a space measured once (bench/tune).
  bool simulate = false;
};

// One configuration measured.
struct tune_point {
  tune_config config;
  std::string hash;                // the configured bundle's
  outcome result = outcome::ok;
  std::optional<double> speedup;   // default time / this time (> 1: faster), when it passed timed
  std::optional<double> lo, hi;    // the paired ratio's interval
  int64_t evaluation_id = 0;       // the stored evaluation it came from
  bool cached = false;             // replayed from the cache, not timed in this run
  bool quick = false;              // measured with halving's quick verifier (never the best)
  std::string message;             // the gate's, when it did not pass
};

// Passed its checks and was timed: `ok`, or `unstable` (the machine too noisy to decide against
// the default). Such a point may be the best; only the crown's fresh decision makes it the winner.
inline bool passed_checks(const tune_point& p) {
  return (p.result == outcome::ok || p.result == outcome::unstable) && p.speedup.has_value();
}

// The cache of measured configurations: the store's measurements (cli/tune_cmd.cpp), or a map in
// tests. Keys are tune_cache_key's.
struct tune_cache {
  std::function<std::optional<tune_point>(const std::string& key)> get;
  std::function<void(const std::string& key, const tune_point& p)> put;
};
// The key holds the task's identity (its fields and the files it names, task_identity), the
// target (platform, ISA, device), both bundles' hashes and the gate settings' text (the caller's:
// every setting that changes a measurement, and the toolchain).
std::string task_identity(const task& t);
std::string tune_cache_key(const task& t, const target& tgt, const std::string& config_hash,
                           const std::string& default_hash, const std::string& settings);

struct tune_progress {
  const tune_point* point = nullptr;  // the configuration just measured
  size_t done = 0, planned = 0;
  double elapsed = 0, eta = 0;        // seconds; eta 0 when unknown
  double best_speedup = 1;
};

struct tune_result {
  tune_config defaults;
  std::string default_hash;
  size_t admitted = 0;                   // configurations the constraints admit
  std::vector<tune_refusal> refused;     // the first refusals (spec/tune.h max_refusals_kept)
  size_t refused_count = 0;
  std::vector<tune_point> points;        // measured, in order (the default first, speedup 1)
  std::optional<size_t> best;            // index into points of the fastest that passed its checks
                                         // (ok, or unstable: timed but not decided), not the default
  std::optional<evaluation> crown;       // the best against the default, fresh processes
  tune_config winner;                    // the best when the crown decided it faster, else the default
  bool improved = false;
  std::string stop;                      // why the search ended: "space exhausted", "evaluation budget", "time budget"
  int64_t timed = 0, replayed = 0;       // configurations timed in this run, replayed from the cache
  double seconds = 0;
};

// Searches `kernel`'s tune space on `t` for target `tgt` through `v` (checks and paired timing,
// every evaluation stored by it). `cache` may be null; `progress` may be empty. An error when the
// kernel has no tunables, the space cannot be enumerated, or the default configuration itself
// fails the gate (its outcome and message in the error: nothing can be tuned against it).
result<tune_result> tune(const task& t, const kernel_bundle& kernel, const target& tgt, lineages::verifier& v,
                         const tune_options& o, const tune_cache* cache,
                         const std::function<void(const tune_progress&)>& progress);

}  // namespace lathe::search
