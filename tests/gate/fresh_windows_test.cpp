// CUDA decision timing's data without a GPU (fresh_windows.h): what each timed call of a block
// reads, what the worker is told, and what lathe's references are computed from must agree, and
// no two calls of a block may read the same contents.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "core/task.h"
#include "gate/fresh_windows.h"

using namespace lathe;
using namespace lathe::gate;

namespace {

// Three inputs of three sizes: A (3,200 bytes: 12 shifts), B (4,000 bytes: 15 shifts), and one
// too small to shift (16 bytes); one output.
task three_inputs() {
  task t;
  t.name = "t";
  auto tensor = [](const char* name, dtype d, std::vector<int64_t> dims) {
    tensor_spec s;
    s.name = name;
    s.type = d;
    for (int64_t n : dims) s.shape.push_back({"", n});
    s.dist.kind = distribution_kind::uniform;
    s.dist.low = -1;
    s.dist.high = 1;
    return s;
  };
  t.inputs.push_back(tensor("A", dtype::f32, {8, 100}));
  t.inputs.push_back(tensor("B", dtype::f32, {1000}));
  tensor_spec c = tensor("C", dtype::u8, {16});
  c.dist.kind = distribution_kind::integers;
  c.dist.low = 0;
  c.dist.high = 200;
  t.inputs.push_back(c);
  t.outputs.push_back(tensor("Y", dtype::f32, {8, 100}));
  shape_set s;
  s.name = "main";
  t.shapes.push_back(s);
  return t;
}

struct fixture {
  task t = three_inputs();
  slot_layout l;
  fixture() {
    auto r = make_layout(t, t.shapes[0]);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (r) l = *r;
  }
  std::vector<uint8_t> draw(uint64_t seed) const {
    auto d = make_inputs(t, l, reference{}, trial_for(t, seed, 0));
    EXPECT_TRUE(d) << (d ? "" : d.error().message);
    return d ? d->inputs : std::vector<uint8_t>{};
  }
};

}  // namespace

TEST(fresh_windows, each_input_has_slack_inside_its_slot) {
  fixture f;
  const window_layout w = make_windows(f.l, 3);
  ASSERT_EQ(w.input_at.size(), 3u);
  EXPECT_EQ(w.slack, (std::vector<uint64_t>{3072, 3840, 0}));
  EXPECT_EQ(w.windows, 16u);  // B's 15 shifts and no shift
  EXPECT_EQ(distinct_calls(w), 48u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(w.input_at[i] % 256, 0u);
    const uint64_t end = w.input_at[i] + f.l.inputs[i].bytes + w.slack[i];
    EXPECT_LE(end, i + 1 < 3 ? w.input_at[i + 1] : w.output_at[0]) << "input " << i;
  }
  EXPECT_EQ(w.output_at[0] % 256, 0u);
  EXPECT_GE(w.slot_bytes, w.output_at[0] + f.l.outputs[0].bytes);
  EXPECT_EQ(w.slot_bytes % 4096, 0u);
}

TEST(fresh_windows, the_worker_gets_the_window_layout) {
  fixture f;
  const window_layout w = make_windows(f.l, 5);
  const wire::command c = window_setup(f.t, f.l, w);
  EXPECT_EQ(c.kind, wire::op::setup);
  EXPECT_EQ(c.num_slots, 5u);
  EXPECT_EQ(c.slot_stride, w.slot_bytes);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c.tensors[i].offset, w.input_at[i]);
    EXPECT_EQ(c.tensors[i].slack, w.slack[i]);
    EXPECT_EQ(c.tensors[i].bytes, f.l.inputs[i].bytes);
  }
  EXPECT_EQ(c.tensors[3].offset, w.output_at[0]);
  EXPECT_EQ(c.tensors[3].slack, 0u);
  EXPECT_EQ(c.tensors[3].is_output, 1u);
}

// What a call reads (its buffer at the window's shift, as the worker points it) is what lathe
// computes the reference from: the draw rotated by the shift.
TEST(fresh_windows, a_window_reads_the_rotation_lathe_checks) {
  fixture f;
  const window_layout w = make_windows(f.l, 1);
  const std::vector<uint8_t> d = f.draw(77);
  std::vector<uint8_t> slot(w.slot_bytes, 0);
  stage_window_slot(f.t, f.l, w, d, slot.data());
  for (uint32_t window = 0; window < 40; ++window) {
    const std::vector<uint8_t> want = window_inputs(f.l, w, d, window);
    const std::vector<uint8_t> as_checked = standard_slot(f.l, w, slot.data(), window);
    for (size_t i = 0; i < 3; ++i) {
      const uint64_t n = f.l.inputs[i].bytes, shift = wire::window_shift(w.slack[i], window);
      EXPECT_LE(shift, w.slack[i]);
      EXPECT_EQ(0, std::memcmp(slot.data() + w.input_at[i] + shift, want.data() + f.l.input_offset[i], n))
          << "input " << i << ", window " << window;
      EXPECT_EQ(0, std::memcmp(as_checked.data() + f.l.input_offset[i], want.data() + f.l.input_offset[i], n));
    }
    // A float input is rotated by whole elements: element j is the draw's (j + shift / 4) mod n.
    const auto* a = reinterpret_cast<const float*>(want.data() + f.l.input_offset[0]);
    const auto* a0 = reinterpret_cast<const float*>(d.data() + f.l.input_offset[0]);
    const uint64_t e = wire::window_shift(w.slack[0], window) / 4;
    for (uint64_t j = 0; j < 800; j += 97) EXPECT_EQ(a[j], a0[(j + e) % 800]) << window;
  }
  // The outputs come across unchanged (poisoned here).
  const std::vector<uint8_t> as_checked = standard_slot(f.l, w, slot.data(), 3);
  EXPECT_EQ(0, std::memcmp(as_checked.data() + f.l.output_offset[0], slot.data() + w.output_at[0],
                           f.l.outputs[0].bytes));
}

// A block of as many calls as the layout allows, rotating over the slots from slot 0: no call
// reads what an earlier call of the block read, and each slot ends with its last call's output.
TEST(fresh_windows, no_two_calls_of_a_block_read_the_same_inputs) {
  fixture f;
  const uint32_t slots = 3;
  const window_layout w = make_windows(f.l, slots);
  std::vector<std::vector<uint8_t>> draws;
  for (uint32_t k = 0; k < slots; ++k) draws.push_back(f.draw(1000 + k));  // one refill's seeds
  for (uint32_t first_window : {0u, 29u}) {
    std::set<std::vector<uint8_t>> seen;
    for (uint64_t call = 0; call < distinct_calls(w); ++call) {
      const uint32_t k = static_cast<uint32_t>(call % slots);
      EXPECT_TRUE(seen.insert(window_inputs(f.l, w, draws[k], window_of(call, slots, first_window))).second)
          << "call " << call << " reads an earlier call's inputs (first window " << first_window << ")";
    }
  }
  // The limit is the longest input's period: B's windows come round again after 16.
  EXPECT_EQ(wire::window_shift(w.slack[1], w.windows), 0u);
  EXPECT_NE(wire::window_shift(w.slack[1], w.windows - 1), 0u);
}

TEST(fresh_windows, each_slot_holds_its_last_calls_output) {
  EXPECT_EQ(last_call_on(0, 2, 5), 4u);
  EXPECT_EQ(last_call_on(1, 2, 5), 3u);
  EXPECT_EQ(last_call_on(0, 4, 1), 0u);
  EXPECT_FALSE(last_call_on(1, 4, 1));  // a block shorter than the slots leaves slot 1 alone
  EXPECT_FALSE(last_call_on(3, 4, 3));
  EXPECT_EQ(last_call_on(3, 4, 4), 3u);
  EXPECT_FALSE(last_call_on(4, 4, 100));
  EXPECT_EQ(last_call_on(2, 16, 1000), 994u);
  EXPECT_EQ(window_of(994, 16, 7), 7u + 62u);
}

TEST(fresh_windows, inputs_intact_sees_a_change_in_the_slack_too) {
  fixture f;
  const window_layout w = make_windows(f.l, 1);
  const std::vector<uint8_t> d = f.draw(5);
  std::vector<uint8_t> slot(w.slot_bytes, 0);
  stage_window_slot(f.t, f.l, w, d, slot.data());
  EXPECT_TRUE(window_inputs_intact(f.l, w, d, slot.data()));
  slot[w.input_at[1] + f.l.inputs[1].bytes + 100] ^= 1;  // B's slack, read by its windows only
  EXPECT_FALSE(window_inputs_intact(f.l, w, d, slot.data()));
  slot[w.input_at[1] + f.l.inputs[1].bytes + 100] ^= 1;
  slot[w.input_at[2] + 3] ^= 1;
  EXPECT_FALSE(window_inputs_intact(f.l, w, d, slot.data()));
}

// The refill draws slot k as the trial lathe then references: trial_for(seed + k, 0).
TEST(fresh_windows, a_refill_draws_what_the_references_assume) {
  fixture f;
  const wire::command c = refill_command(6, 123456);
  EXPECT_EQ(c.kind, wire::op::fill);
  EXPECT_EQ(c.first_slot, 0u);
  EXPECT_EQ(c.rotate, 6u);
  EXPECT_EQ(c.window, 0u);
  for (uint32_t k = 0; k < 6; ++k) {
    const trial_spec s = trial_for(f.t, c.seed + k, 0);
    EXPECT_EQ(s.seed, 123456u + k);
    EXPECT_EQ(s.scale, c.scale);
    EXPECT_EQ(s.shift, c.shift);
  }
}
