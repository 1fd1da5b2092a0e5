#include "gate/settings.h"

#include <algorithm>

namespace lathe::gate {

gate_config gate_config_for(const gate_settings& s, platform plat) {
  gate_config cfg;
  cfg.mode = s.mode;
  cfg.bench_warmup = s.warmup;
  cfg.bench_trials = std::max<uint32_t>(s.trials, 1);
  cfg.device_trials = !s.host_trials;
  cfg.refuse_torch_fallback = s.refuse_torch_fallback;
  cfg.seeds = std::max<uint32_t>(s.seeds, 3);
  cfg.seed_base = s.seed;
  cfg.time = s.time;
  cfg.aa_control = s.aa_control;
  cfg.policy.max_seconds = s.max_time;
  cfg.policy.starts_at_once = !s.workers_one_by_one;
  if (s.quick) {
    cfg.policy.processes = 2;
    cfg.policy.min_rounds = 4;
  }
  // GPU timing is quiet enough to ask more of the noise criterion for the same seconds: on the
  // H200, ten evaluations of one ratio spread 0.65-0.83% when series stopped at 0.5% (CPU: the
  // default). The value is part of the stored policy.
  if (plat == platform::cuda) cfg.policy.target_rse = 0.0015;
  if (s.target_rse) cfg.policy.target_rse = *s.target_rse;
  return cfg;
}

}  // namespace lathe::gate
