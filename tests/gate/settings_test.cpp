// gate_config_for: the gate's settings as the cli binds them, turned into the configuration every
// verb measures with. Pins what moved out of cli/context.cpp (issue 43, step 7): the CUDA noise
// target, --quick's policy, the floors on seeds and trials, the comparability modes.
#include <gtest/gtest.h>

#include "gate/settings.h"

namespace lathe::gate {
namespace {

TEST(gate_settings, defaults_are_the_policy_defaults_on_cpu) {
  const gate_config cfg = gate_config_for(gate_settings{}, platform::cpu);
  const timing_policy policy;
  EXPECT_EQ(cfg.policy.target_rse, policy.target_rse);
  EXPECT_EQ(cfg.policy.processes, policy.processes);
  EXPECT_EQ(cfg.policy.min_rounds, policy.min_rounds);
  EXPECT_EQ(cfg.policy.max_seconds, 3.0);
  EXPECT_EQ(cfg.mode, timing_mode::decision);
  EXPECT_EQ(cfg.seeds, 3u);
  EXPECT_TRUE(cfg.time);
  EXPECT_TRUE(cfg.aa_control);
  EXPECT_TRUE(cfg.device_trials);
}

// --start-workers one-by-one: the serial start, stored in the policy (the default starts at once).
TEST(gate_settings, workers_start_at_once_unless_one_by_one_is_asked) {
  EXPECT_TRUE(gate_config_for(gate_settings{}, platform::cuda).policy.starts_at_once);
  EXPECT_TRUE(gate_config_for(gate_settings{}, platform::cpu).policy.starts_at_once);
  gate_settings s;
  s.workers_one_by_one = true;
  EXPECT_FALSE(gate_config_for(s, platform::cuda).policy.starts_at_once);
  EXPECT_FALSE(gate_config_for(s, platform::cpu).policy.starts_at_once);
}

TEST(gate_settings, cuda_asks_a_tighter_noise_target_unless_one_is_given) {
  EXPECT_EQ(gate_config_for(gate_settings{}, platform::cuda).policy.target_rse, 0.0015);
  gate_settings s;
  s.target_rse = 0.01;
  EXPECT_EQ(gate_config_for(s, platform::cuda).policy.target_rse, 0.01);
  EXPECT_EQ(gate_config_for(s, platform::cpu).policy.target_rse, 0.01);
}

TEST(gate_settings, quick_halves_the_timing_and_floors_hold) {
  gate_settings s;
  s.quick = true;
  s.seeds = 1;
  s.trials = 0;
  s.mode = timing_mode::kernelbench;
  s.host_trials = true;
  s.max_time = 1.5;
  const gate_config cfg = gate_config_for(s, platform::cpu);
  EXPECT_EQ(cfg.policy.processes, 2u);
  EXPECT_EQ(cfg.policy.min_rounds, 4u);
  EXPECT_EQ(cfg.policy.max_seconds, 1.5);
  EXPECT_EQ(cfg.seeds, 3u);
  EXPECT_EQ(cfg.bench_trials, 1u);
  EXPECT_EQ(cfg.mode, timing_mode::kernelbench);
  EXPECT_FALSE(cfg.device_trials);
  s.mode = timing_mode::do_bench;
  EXPECT_EQ(gate_config_for(s, platform::cpu).mode, timing_mode::do_bench);
}

}  // namespace
}  // namespace lathe::gate
