// Device trials without a GPU: the oracle's statistics read as the host check would read them
// (judge), and the setup command carries what the device needs to generate inputs and to
// compare outputs.
#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>

#include "core/task.h"
#include "gate/device_trial.h"

using namespace lathe;
using namespace lathe::gate;

namespace {

task two_outputs() {
  task t;
  t.name = "t";
  tensor_spec x;
  x.name = "X";
  x.type = dtype::bf16;
  x.shape = {{"", 4}, {"", 8}};
  x.dist.kind = distribution_kind::normal;
  x.dist.mean = 0.5;
  x.dist.stddev = 2.0;
  t.inputs.push_back(x);
  tensor_spec y = x;
  y.name = "Y";
  y.type = dtype::f32;
  y.shape = {{"", 4}, {"", 8}};
  t.outputs.push_back(y);
  tensor_spec z = y;
  z.name = "Z";
  z.type = dtype::i32;
  z.shape = {{"", 32}};
  t.outputs.push_back(z);
  shape_set s;
  s.name = "main";
  t.shapes.push_back(s);
  t.compare.tol.rtol = 1e-3;
  return t;
}

struct fixture {
  task t = two_outputs();
  slot_layout l;
  fixture() {
    auto r = make_layout(t, t.shapes[0]);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (r) l = *r;
  }
};

}  // namespace

TEST(device_trial, a_clean_comparison_passes_with_its_error_figures) {
  fixture f;
  wire::reply r;
  r.outputs[0].max_abs = 1e-6;
  r.outputs[0].max_rel = 2e-6;
  r.outputs[0].sum_d = 1e-12;
  r.outputs[0].sum_r = 4.0;
  r.outputs[0].checksum = 7;
  r.outputs[1].checksum = 9;
  device_verdict v = judge(f.t, f.l, r, 42);
  ASSERT_EQ(v.outputs.size(), 2u);
  EXPECT_FALSE(v.inputs_mutated);
  EXPECT_EQ(v.outputs[0].v, verdict::pass);
  EXPECT_TRUE(v.outputs[0].rec.passed);
  EXPECT_EQ(v.outputs[0].rec.output, "Y");
  EXPECT_EQ(v.outputs[0].rec.shape_set, "main");
  EXPECT_EQ(v.outputs[0].rec.seed, 42u);
  EXPECT_DOUBLE_EQ(v.outputs[0].rec.norm_err, std::sqrt(1e-12 / 4.0));
  EXPECT_EQ(v.outputs[1].rec.output, "Z");
  EXPECT_NE(v.checksum, 0u);
  // The checksum covers every output: another second output's bytes, another checksum.
  r.outputs[1].checksum = 10;
  EXPECT_NE(judge(f.t, f.l, r, 42).checksum, v.checksum);
}

TEST(device_trial, verdicts_come_in_the_host_checks_order) {
  fixture f;
  wire::reply r;
  r.outputs[0].sum_r = 1;
  // Unwritten elements win over everything else, with the first index in the task's shape.
  r.outputs[0].unwritten = 3;
  r.outputs[0].first_unwritten = 9;  // [1,1] of 4x8
  r.outputs[0].nonfinite = 2;
  r.outputs[0].mismatches = 5;
  device_verdict v = judge(f.t, f.l, r, 1);
  EXPECT_EQ(v.outputs[0].v, verdict::unwritten);
  EXPECT_EQ(v.outputs[0].rec.mismatches, 3u);
  ASSERT_FALSE(v.outputs[0].rec.first_mismatches.empty());
  EXPECT_EQ(v.outputs[0].rec.first_mismatches[0], "[1,1]: never written");
  // Then NaN/Inf.
  r.outputs[0].unwritten = 0;
  r.outputs[0].first_bad = 31;
  r.outputs[0].got = NAN;
  r.outputs[0].want = 1.5;
  v = judge(f.t, f.l, r, 1);
  EXPECT_EQ(v.outputs[0].v, verdict::nan_or_inf);
  EXPECT_EQ(v.outputs[0].rec.first_mismatches[0].rfind("[3,7]: got", 0), 0u)
      << v.outputs[0].rec.first_mismatches[0];
  // Then tolerance mismatches.
  r.outputs[0].nonfinite = 0;
  r.outputs[0].got = 1.25;
  v = judge(f.t, f.l, r, 1);
  EXPECT_EQ(v.outputs[0].v, verdict::mismatch);
  EXPECT_EQ(v.outputs[0].rec.mismatches, 5u);
  EXPECT_EQ(v.outputs[0].rec.first_mismatches[0], "[3,7]: got 1.25, want 1.5");
}

TEST(device_trial, the_normalized_error_fails_outputs_within_the_elementwise_tolerance) {
  // All elements within atol + rtol|ref|, but the output as a whole off by 1e-3 relative: the
  // task's nerr (the f32 default 1e-4) fails it, as the host check does for tiny outputs.
  fixture f;
  wire::reply r;
  r.outputs[0].sum_d = 1e-6;
  r.outputs[0].sum_r = 1.0;
  device_verdict v = judge(f.t, f.l, r, 1);
  EXPECT_EQ(v.outputs[0].v, verdict::mismatch);
  EXPECT_NEAR(v.outputs[0].rec.norm_err, 1e-3, 1e-12);
  // A zero reference and no mismatches: nothing to normalize by, and nothing wrong.
  r.outputs[0].sum_d = 0;
  r.outputs[0].sum_r = 0;
  EXPECT_EQ(judge(f.t, f.l, r, 1).outputs[0].v, verdict::pass);
}

TEST(device_trial, changed_input_bytes_mean_a_mutated_input) {
  fixture f;
  wire::reply r;
  r.input_differences = 1;
  EXPECT_TRUE(judge(f.t, f.l, r, 1).inputs_mutated);
}

TEST(device_trial, setup_carries_distributions_types_and_tolerances) {
  fixture f;
  wire::command c = setup_command(f.t, f.l, 2);
  EXPECT_EQ(c.num_slots, 2u);
  const wire::tensor_desc& x = c.tensors[0];
  EXPECT_EQ(x.type, static_cast<uint8_t>(dtype::bf16));
  EXPECT_EQ(x.dist_kind, static_cast<uint8_t>(distribution_kind::normal));
  EXPECT_EQ(x.dist_a, 0.5);
  EXPECT_EQ(x.dist_b, 2.0);
  const wire::tensor_desc& y = c.tensors[1];
  EXPECT_TRUE(y.is_output);
  EXPECT_EQ(y.rtol, 1e-3);   // the task's override
  EXPECT_EQ(y.atol, 1e-5);   // the f32 default
  EXPECT_EQ(y.nerr, 1e-4);
  const wire::tensor_desc& z = c.tensors[2];
  EXPECT_EQ(z.type, static_cast<uint8_t>(dtype::i32));
  EXPECT_EQ(z.rtol, 1e-3);
  EXPECT_EQ(z.atol, 0.0);  // integers compare exactly unless the task says otherwise
}

TEST(device_trial, fill_commands_carry_the_trial) {
  trial_spec s;
  s.seed = 77;
  s.scale = 8.0;
  s.shift = -1.0;
  wire::command c = fill_command(3, s);
  EXPECT_EQ(c.kind, wire::op::fill);
  EXPECT_EQ(c.first_slot, 3u);
  EXPECT_EQ(c.seed, 77u);
  EXPECT_EQ(c.scale, 8.0);
  EXPECT_EQ(c.shift, -1.0);
  wire::command p = poison_command(1, 4);
  EXPECT_EQ(p.kind, wire::op::poison);
  EXPECT_EQ(p.first_slot, 1u);
  EXPECT_EQ(p.rotate, 4u);
}
