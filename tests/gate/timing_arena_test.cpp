// The CPU timing arena's pools drawn again between blocks (timing_arena.h, pool_refresher; issue
// 42, item 5): every pool a block read holds other values before the next block, drawn from the
// same ones (permuted and reflected about the distribution's centre: the task's distribution and
// domain), and a pool the kernel wrote is found before it is drawn again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/task.h"
#include "gate/timing_arena.h"

using namespace lathe;
using namespace lathe::gate;

namespace {

// A (256 KiB: permuted by 256-byte chunks), b (1 KiB: element by element); one output.
struct fixture {
  task t;
  slot_layout l;
  arena_layout a;
  std::vector<trial_data> data;
  std::vector<std::vector<uint8_t>> base;
  std::vector<uint8_t> region;
  fixture() {
    auto tensor = [](const char* name, std::vector<int64_t> dims) {
      tensor_spec s;
      s.name = name;
      s.type = dtype::f32;
      for (int64_t n : dims) s.shape.push_back({"", n});
      s.dist.kind = distribution_kind::uniform;
      s.dist.low = -1;
      s.dist.high = 1;
      return s;
    };
    t.name = "t";
    t.inputs = {tensor("A", {256, 256}), tensor("b", {256})};
    t.outputs = {tensor("Y", {256})};
    shape_set s;
    s.name = "main";
    t.shapes.push_back(s);
    auto r = make_layout(t, t.shapes[0]);
    EXPECT_TRUE(r);
    l = *r;
    a = make_arena(l, 3, 4);
    for (uint32_t p = 0; p < a.pools; ++p) {
      auto d = make_inputs(t, l, reference{}, trial_for(t, 100 + p, 0));
      EXPECT_TRUE(d);
      data.push_back(*d);
    }
    base = pool_contents(a, l, data);
    region.assign(a.bytes, 0);
    stage_pools(a, base, region.data());
  }
  std::vector<float> tensor_of(uint32_t pool, size_t input) const {
    std::vector<float> v(l.inputs[input].elements);
    std::memcpy(v.data(), region.data() + a.input_at[pool][input], l.inputs[input].bytes);
    return v;
  }
};

}  // namespace

TEST(pool_refresher, a_pool_read_by_a_block_holds_other_values_of_the_same_draw_before_the_next) {
  fixture f;
  pool_refresher pools(f.a, 7);
  pools.staged(f.region.data(), {});
  uint32_t next = 0;
  std::mt19937_64 rng(1);
  const std::vector<arena_call> calls = plan_block(f.a, 2, next, rng);  // pools 0 and 1
  pools.read(calls);
  const auto a0 = f.tensor_of(0, 0), b0 = f.tensor_of(0, 1), a2 = f.tensor_of(2, 0);
  auto redraw = [&](uint32_t p, uint8_t* region, std::mt19937_64& r) -> result<trial_spec> {
    permute_pool(f.t, f.a, f.l, f.base[p], p, region, r);
    return trial_spec{};
  };
  auto fresh = pools.refresh(f.region.data(), redraw);
  ASSERT_TRUE(fresh && *fresh);
  EXPECT_EQ(pools.draws(), 2u);
  for (const auto& [before, input] : {std::pair{a0, size_t{0}}, std::pair{b0, size_t{1}}}) {
    auto after = f.tensor_of(0, input);
    size_t moved = 0;
    for (size_t i = 0; i < after.size(); ++i) moved += after[i] != before[i];
    EXPECT_GT(moved, after.size() * 9 / 10) << "input " << input;  // no longer where they were
    // The draw's values, moved and reflected about the centre of uniform(-1, 1): their
    // magnitudes as a multiset are the draw's, about half of them have changed sign.
    auto x = before, y = after;
    size_t negative_x = 0, negative_y = 0;
    for (float& v : x) negative_x += v < 0, v = std::fabs(v);
    for (float& v : y) negative_y += v < 0, v = std::fabs(v);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    EXPECT_EQ(x, y) << "input " << input;
    EXPECT_NEAR(static_cast<double>(negative_y), after.size() / 2.0, after.size() / 8.0) << "input " << input;
    EXPECT_NEAR(static_cast<double>(negative_x), after.size() / 2.0, after.size() / 8.0) << "input " << input;
  }
  // A window's wrap-around follows its tensor; a pool no block read is left as it was.
  EXPECT_EQ(std::memcmp(f.region.data() + f.a.input_at[0][0] + f.l.inputs[0].bytes,
                        f.region.data() + f.a.input_at[0][0], f.a.slack[0]),
            0);
  EXPECT_EQ(f.tensor_of(2, 0), a2);
  EXPECT_TRUE(pools.all_intact(f.region.data()));
  // Drawn again twice, a pool differs from both earlier draws.
  pools.read(calls);
  const auto a1 = f.tensor_of(0, 0);
  ASSERT_TRUE(*pools.refresh(f.region.data(), redraw));
  EXPECT_NE(f.tensor_of(0, 0), a1);
  EXPECT_NE(f.tensor_of(0, 0), a0);
}

TEST(pool_refresher, a_pool_the_kernel_wrote_is_found_before_it_is_drawn_again) {
  fixture f;
  pool_refresher pools(f.a, 7);
  pools.staged(f.region.data(), {});
  uint32_t next = 0;
  std::mt19937_64 rng(1);
  pools.read(plan_block(f.a, 1, next, rng));
  f.region[f.a.input_at[0][1] + 5] ^= 1;  // one bit of b, in the pool the block read
  bool drawn = false;
  auto fresh = pools.refresh(f.region.data(), [&](uint32_t, uint8_t*, std::mt19937_64&) -> result<trial_spec> {
    drawn = true;
    return trial_spec{};
  });
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(*fresh);
  EXPECT_FALSE(drawn);
  EXPECT_FALSE(pools.intact(f.region.data(), 0));
  EXPECT_TRUE(pools.intact(f.region.data(), 1));
}
