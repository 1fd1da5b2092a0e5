// Philox known answers, input generation (determinism, distributions), narrow float conversions.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "core/philox.h"
#include "core/rng_element.h"

namespace lathe {
namespace {

using philox::u32x4;

void expect_kat(u32x4 ctr, uint32_t k0, uint32_t k1, u32x4 want) {
  const u32x4 got = philox::philox4x32_10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], want.v[i]) << "word " << i;
}

TEST(philox, random123_known_answers) {
  // Random123 kat_vectors, philox4x32 with 10 rounds.
  expect_kat({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  expect_kat({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff,
             {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  expect_kat({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0,
             {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

TEST(philox, draw_maps_seed_tensor_and_element_to_key_and_counter) {
  const uint64_t seed = 0x299f31d0a4093822ull;
  const uint64_t element = 0x85a308d3243f6a88ull;
  const u32x4 d = philox::draw(seed, 0x13198a2e, element, 0x03707344);
  EXPECT_EQ(d.v[0], 0xd16cfe09u);
  EXPECT_EQ(d.v[3], 0x24126ea1u);
}

TEST(philox, unit_doubles_are_in_range) {
  EXPECT_EQ(philox::to_unit_double(0, 0), 0.0);
  const double top = philox::to_unit_double(0xffffffff, 0xffffffff);
  EXPECT_LT(top, 1.0);
  EXPECT_GT(top, 1.0 - 1e-15);
}

std::vector<double> sample(dtype t, const distribution& d, uint64_t n, uint64_t seed = 7,
                           uint32_t tensor = 0, double scale = 1.0, double shift = 0.0) {
  std::vector<unsigned char> buf(n * size_of(t));
  fill_tensor(t, d, scale, shift, seed, tensor, buf.data(), n);
  std::vector<double> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = load_as_double(t, buf.data(), i);
  return out;
}

void moments(const std::vector<double>& v, double* mean, double* var) {
  double s = 0, s2 = 0;
  for (double x : v) s += x;
  *mean = s / v.size();
  for (double x : v) s2 += (x - *mean) * (x - *mean);
  *var = s2 / (v.size() - 1);
}

constexpr uint64_t n = 100000;

TEST(rng, deterministic_and_independent_of_buffer_length) {
  const distribution d{distribution_kind::normal, 0, 0, 0.0, 1.0, 0};
  const auto a = sample(dtype::f32, d, 1000);
  const auto b = sample(dtype::f32, d, 1000);
  EXPECT_EQ(a, b);
  const auto longer = sample(dtype::f32, d, 5000);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin()));  // element i depends on i only
  EXPECT_NE(a, sample(dtype::f32, d, 1000, 8));                 // another seed
  EXPECT_NE(a, sample(dtype::f32, d, 1000, 7, 1));              // another tensor
}

// A tensor large enough to be drawn in parallel chunks (rng.cpp) holds, element for element, what
// the one-element draw gives: chunk borders must not shift or repeat a draw.
TEST(rng, a_tensor_drawn_in_chunks_equals_the_element_draws) {
  const distribution d{distribution_kind::normal, 0, 0, 0.5, 2.0, 0};
  const uint64_t big = (uint64_t{3} << 20) + 12345;  // several chunks, a ragged last one
  std::vector<float> v(big);
  fill_tensor(dtype::f32, d, 1.5, -0.25, 99, 2, v.data(), big);
  rng::element_params p;
  p.kind = rng::kind_normal;
  p.a = 0.5;
  p.b = 2.0;
  p.scale = 1.5;
  p.shift = -0.25;
  p.seed = 99;
  p.tensor = 2;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < big; ++i) {
    float want = 0;
    rng::store_element(dtype::f32, &want, 0, rng::element_value(p, dtype::f32, i));
    if (std::memcmp(&want, &v[i], sizeof want) != 0) ++wrong;
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(rng, uniform_moments) {
  const auto v = sample(dtype::f64, {distribution_kind::uniform, -2.0, 6.0, 0, 1, 0}, n);
  double mean, var;
  moments(v, &mean, &var);
  // mean 2, variance (8^2)/12 = 5.333; standard error of the mean 0.0073.
  EXPECT_NEAR(mean, 2.0, 0.05);
  EXPECT_NEAR(var, 64.0 / 12.0, 0.1);
  for (double x : v) {
    ASSERT_GE(x, -2.0);
    ASSERT_LT(x, 6.0);
  }
}

TEST(rng, normal_moments_and_tails) {
  const auto v = sample(dtype::f64, {distribution_kind::normal, 0, 0, 3.0, 0.5, 0}, n);
  double mean, var;
  moments(v, &mean, &var);
  EXPECT_NEAR(mean, 3.0, 0.01);  // standard error 0.0016
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);
  uint64_t beyond_2sigma = 0;
  for (double x : v) beyond_2sigma += std::fabs(x - 3.0) > 1.0;
  EXPECT_NEAR(static_cast<double>(beyond_2sigma) / n, 0.0455, 0.004);
}

TEST(rng, integers_cover_the_closed_range) {
  const auto v = sample(dtype::i32, {distribution_kind::integers, -3, 4, 0, 1, 0}, n);
  std::set<double> seen(v.begin(), v.end());
  EXPECT_EQ(seen, (std::set<double>{-3, -2, -1, 0, 1, 2, 3, 4}));
  double mean, var;
  moments(v, &mean, &var);
  EXPECT_NEAR(mean, 0.5, 0.05);
  EXPECT_NEAR(var, (8.0 * 8.0 - 1.0) / 12.0, 0.1);  // discrete uniform over 8 values
}

TEST(rng, constant_bool_and_perturbations) {
  for (double x : sample(dtype::f32, {distribution_kind::constant, 0, 0, 0, 1, 1.5}, 100))
    EXPECT_EQ(x, 1.5);
  const auto b = sample(dtype::boolean, {}, n);
  double mean, var;
  moments(b, &mean, &var);
  EXPECT_NEAR(mean, 0.5, 0.01);
  for (double x : b) ASSERT_TRUE(x == 0.0 || x == 1.0);
  // Floating inputs are scaled and shifted; integers are left as drawn.
  const distribution u{distribution_kind::uniform, 0.0, 1.0, 0, 1, 0};
  const auto base = sample(dtype::f64, u, 100);
  const auto pert = sample(dtype::f64, u, 100, 7, 0, 8.0, -1.0);
  for (size_t i = 0; i < base.size(); ++i) EXPECT_EQ(pert[i], base[i] * 8.0 - 1.0);
  const distribution ints{distribution_kind::integers, 0, 9, 0, 1, 0};
  EXPECT_EQ(sample(dtype::i64, ints, 100), sample(dtype::i64, ints, 100, 7, 0, 8.0, -1.0));
}

TEST(rng, narrow_dtypes_hold_the_rounded_wide_value) {
  const distribution d{distribution_kind::normal, 0, 0, 0.0, 1.0, 0};
  const auto wide = sample(dtype::f64, d, 1000);
  const auto bf = sample(dtype::bf16, d, 1000);
  const auto h = sample(dtype::f16, d, 1000);
  for (size_t i = 0; i < wide.size(); ++i) {
    EXPECT_EQ(bf[i], rng::bf16_bits_to_double(rng::double_to_bf16_bits(wide[i])));
    EXPECT_EQ(h[i], static_cast<double>(static_cast<_Float16>(wide[i])));
    EXPECT_LE(std::fabs(bf[i] - wide[i]), std::fabs(wide[i]) * (1.0 / 256));
  }
}

TEST(rng, hand_written_log_and_cos_are_accurate) {
  for (int i = 1; i < 20000; ++i) {
    const double x = i / 20000.0;
    EXPECT_NEAR(rng::log_det(x), std::log(x), 1e-15 * std::fabs(std::log(x)) + 1e-16) << x;
    EXPECT_NEAR(rng::cos_2pi(x), std::cos(2 * M_PI * x), 2e-15) << x;
  }
  EXPECT_NEAR(rng::log_det(1e-310), std::log(1e-310), 1e-12);  // subnormal input
  EXPECT_EQ(rng::log_det(1.0), 0.0);
  EXPECT_EQ(rng::cos_2pi(0.0), 1.0);
}

uint16_t f16_bits(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// fp32 -> bf16 round to nearest even on the fp32 bits: the usual reference.
uint16_t bf16_ref(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

TEST(narrow, f16_known_values) {
  EXPECT_EQ(rng::double_to_f16_bits(1.0), 0x3c00);
  EXPECT_EQ(rng::double_to_f16_bits(-2.0), 0xc000);
  EXPECT_EQ(rng::double_to_f16_bits(-0.0), 0x8000);
  EXPECT_EQ(rng::double_to_f16_bits(65504.0), 0x7bff);
  EXPECT_EQ(rng::double_to_f16_bits(65519.99), 0x7bff);
  EXPECT_EQ(rng::double_to_f16_bits(65520.0), 0x7c00);  // the tie rounds to even: inf
  EXPECT_EQ(rng::double_to_f16_bits(1e300), 0x7c00);
  EXPECT_EQ(rng::double_to_f16_bits(-INFINITY), 0xfc00);
  EXPECT_EQ(rng::double_to_f16_bits(std::ldexp(1.0, -24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(rng::double_to_f16_bits(std::ldexp(1.0, -25)), 0x0000);        // tie to even: 0
  EXPECT_EQ(rng::double_to_f16_bits(std::ldexp(3.0, -26)), 0x0001);        // above the tie
  EXPECT_EQ(rng::double_to_f16_bits(std::ldexp(1023.0, -24)), 0x03ff);     // largest subnormal
  EXPECT_EQ(rng::double_to_f16_bits(std::ldexp(2047.0, -25)), 0x0400);     // carries into normal
  EXPECT_EQ(rng::double_to_f16_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(rng::double_to_f16_bits(1.0 + std::ldexp(3.0, -11)), 0x3c02);  // tie, rounds up
  EXPECT_EQ(rng::double_to_f16_bits(1e-320), 0x0000);                      // fp64 subnormal
  const uint16_t nan = rng::double_to_f16_bits(NAN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(narrow, bf16_known_values) {
  EXPECT_EQ(rng::double_to_bf16_bits(1.0), 0x3f80);
  EXPECT_EQ(rng::double_to_bf16_bits(-1.0), 0xbf80);
  EXPECT_EQ(rng::double_to_bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3f80);  // tie, even stays
  EXPECT_EQ(rng::double_to_bf16_bits(1.0 + std::ldexp(3.0, -8)), 0x3f82);  // tie, rounds up
  // Just above a tie in fp64 but a tie after rounding to fp32 first: rounding directly from fp64
  // (no double rounding) must go up.
  EXPECT_EQ(rng::double_to_bf16_bits(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)), 0x3f81);
  EXPECT_EQ(rng::double_to_bf16_bits(3.4e38), 0x7f80);  // above bf16 max rounds to inf
  EXPECT_EQ(rng::double_to_bf16_bits(1e39), 0x7f80);
  EXPECT_EQ(rng::double_to_bf16_bits(std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal
  const uint16_t nan = rng::double_to_bf16_bits(-NAN);
  EXPECT_EQ(nan & 0x7f80, 0x7f80);
  EXPECT_NE(nan & 0x007f, 0);
}

TEST(narrow, every_f16_and_bf16_value_round_trips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const double f = rng::f16_bits_to_double(h);
    _Float16 ref;
    std::memcpy(&ref, &h, 2);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(static_cast<double>(ref))) << b;
      continue;
    }
    ASSERT_EQ(f, static_cast<double>(ref)) << std::hex << b;
    ASSERT_EQ(rng::double_to_f16_bits(f), h) << std::hex << b;
    const double g = rng::bf16_bits_to_double(h);
    uint32_t fb = b << 16;
    float fr;
    std::memcpy(&fr, &fb, 4);
    if (std::isnan(g)) {
      ASSERT_TRUE(std::isnan(fr));
      continue;
    }
    ASSERT_EQ(g, static_cast<double>(fr)) << std::hex << b;
    ASSERT_EQ(rng::double_to_bf16_bits(g), h) << std::hex << b;
  }
}

TEST(narrow, agrees_with_reference_conversions_on_random_values) {
  // f16: GCC's _Float16 cast rounds fp64 directly (libgcc __truncdfhf2). bf16: values exact in
  // fp32, against the fp32 bit trick.
  for (uint64_t i = 0; i < 200000; ++i) {
    const philox::u32x4 r = philox::draw(99, 0, i);
    uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    // Exponents around the f16 / bf16 ranges, both signs, random mantissa.
    const int exp = static_cast<int>(r.v[2] % 300) - 150;
    double d = std::ldexp(1.0 + static_cast<double>(bits >> 12) * 0x1p-52, exp);
    if (r.v[3] & 1) d = -d;
    ASSERT_EQ(rng::double_to_f16_bits(d), f16_bits(static_cast<_Float16>(d))) << d;
    const float f = static_cast<float>(d);
    ASSERT_EQ(rng::double_to_bf16_bits(static_cast<double>(f)), bf16_ref(f)) << f;
  }
}

TEST(load_store, integers_floor_and_saturate) {
  int8_t i8[1];
  store_from_double(dtype::i8, i8, 0, 300.0);
  EXPECT_EQ(i8[0], 127);
  store_from_double(dtype::i8, i8, 0, -1e30);
  EXPECT_EQ(i8[0], -128);
  store_from_double(dtype::i8, i8, 0, NAN);
  EXPECT_EQ(i8[0], 0);
  store_from_double(dtype::i8, i8, 0, -2.5);
  EXPECT_EQ(i8[0], -3);
  int64_t i64[1];
  store_from_double(dtype::i64, i64, 0, 1e300);
  EXPECT_EQ(i64[0], INT64_MAX);
  store_from_double(dtype::i64, i64, 0, -1e300);
  EXPECT_EQ(i64[0], INT64_MIN);
  store_from_double(dtype::i64, i64, 0, 9007199254740993.0);
  EXPECT_EQ(i64[0], 9007199254740992);
  uint64_t u64[1];
  store_from_double(dtype::u64, u64, 0, 1e30);
  EXPECT_EQ(u64[0], UINT64_MAX);
  store_from_double(dtype::u64, u64, 0, -5);
  EXPECT_EQ(u64[0], 0u);
  uint8_t b[3];
  store_from_double(dtype::boolean, b, 0, 0.0);
  store_from_double(dtype::boolean, b, 1, -3.0);
  store_from_double(dtype::boolean, b, 2, 1.0);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(load_as_double(dtype::boolean, b, 2), 1.0);
  float f[2] = {1.5f, -0.25f};
  EXPECT_EQ(load_as_double(dtype::f32, f, 1), -0.25);
  uint16_t h[1];
  store_from_double(dtype::bf16, h, 0, 3.0);
  EXPECT_EQ(h[0], 0x4040);
  EXPECT_EQ(load_as_double(dtype::bf16, h, 0), 3.0);
}

}  // namespace
}  // namespace lathe
