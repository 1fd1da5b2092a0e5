#include <cstdint>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gate/check.h"

using namespace lathe;
using namespace lathe::gate;

namespace {

output_check check(const comparison& c, const std::vector<float>& out, const std::vector<double>& ref,
                 std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(out.size())};
  return check_output(c, dtype::f32, shape, out.data(), ref.data());
}

}  // namespace

TEST(tolerance, dtype_defaults_and_overrides) {
  comparison c;
  EXPECT_DOUBLE_EQ(tolerance_for(c, dtype::f32).rtol, 1e-4);
  EXPECT_DOUBLE_EQ(tolerance_for(c, dtype::bf16).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(tolerance_for(c, dtype::i32).atol, 0);
  c.tol.rtol = 3e-3;
  EXPECT_DOUBLE_EQ(tolerance_for(c, dtype::f32).rtol, 3e-3);
  EXPECT_DOUBLE_EQ(tolerance_for(c, dtype::f32).atol, 1e-5);
}

TEST(check, exact_and_within_tolerance_pass) {
  comparison c;
  auto r = check(c, {1.0f, 2.0f, -3.0f}, {1.0, 2.00005, -3.0});
  EXPECT_EQ(r.v, verdict::pass);
  EXPECT_TRUE(r.rec.passed);
  EXPECT_NEAR(r.rec.max_abs_err, 5e-5, 1e-6);
}

TEST(check, mismatch_reports_index_and_values) {
  comparison c;
  std::vector<float> out(12, 1.0f);
  std::vector<double> ref(12, 1.0);
  out[7] = 1.5f;
  auto r = check(c, out, ref, {3, 4});
  EXPECT_EQ(r.v, verdict::mismatch);
  EXPECT_EQ(r.rec.mismatches, 1u);
  ASSERT_EQ(r.rec.first_mismatches.size(), 1u);
  EXPECT_NE(r.rec.first_mismatches[0].find("[1,3]"), std::string::npos) << r.rec.first_mismatches[0];
  EXPECT_NE(r.rec.first_mismatches[0].find("got 1.5"), std::string::npos);
}

TEST(check, zeros_fail_for_tiny_outputs_through_the_normalized_error) {
  // Every element is within atol of zero, so only the normalized error can catch it.
  comparison c;
  std::vector<float> zeros(100, 0.0f);
  std::vector<double> ref(100, 2e-6);
  auto r = check(c, zeros, ref);
  EXPECT_EQ(r.rec.mismatches, 0u);
  EXPECT_NEAR(r.rec.norm_err, 1.0, 1e-12);
  EXPECT_EQ(r.v, verdict::mismatch);
}

TEST(check, poison_left_is_unwritten) {
  comparison c;
  std::vector<float> out(8, 0.5f);
  poison(dtype::f32, out.data() + 3, 1);
  std::vector<double> ref(8, 0.5);
  auto r = check(c, out, ref);
  EXPECT_EQ(r.v, verdict::unwritten);
  EXPECT_EQ(r.rec.mismatches, 1u);
  EXPECT_TRUE(std::isnan(out[3]));  // the poison is a NaN, so arithmetic on it cannot pass
}

TEST(check, nan_where_reference_is_finite_fails_and_matching_nan_passes) {
  comparison c;
  auto r = check(c, {1.0f, NAN}, {1.0, 2.0});
  EXPECT_EQ(r.v, verdict::nan_or_inf);
  auto same = check(c, {1.0f, NAN, INFINITY}, {1.0, NAN, INFINITY});
  EXPECT_EQ(same.v, verdict::pass);
  auto wrong_inf = check(c, {1.0f, -INFINITY}, {1.0, INFINITY});
  EXPECT_NE(wrong_inf.v, verdict::pass);
}

TEST(check, sorted_set_ignores_order_within_a_row_only) {
  comparison c;
  c.kind = comparison_kind::sorted_set;
  auto ok = check(c, {3, 1, 2, 9, 8, 7}, {1, 2, 3, 7, 8, 9}, {2, 3});
  EXPECT_EQ(ok.v, verdict::pass);
  // The same multiset across rows but moved between rows is wrong.
  auto moved = check(c, {3, 1, 9, 2, 8, 7}, {1, 2, 3, 7, 8, 9}, {2, 3});
  EXPECT_EQ(moved.v, verdict::mismatch);
  comparison e;  // element-wise rejects the permutation
  EXPECT_EQ(check(e, {3, 1, 2}, {1, 2, 3}).v, verdict::mismatch);
}

TEST(check, integer_outputs_are_exact_and_poisoned_with_a5) {
  comparison c;
  std::vector<int32_t> out{1, 2, 3};
  std::vector<double> ref{1, 2, 3};
  EXPECT_EQ(check_output(c, dtype::i32, {3}, out.data(), ref.data()).v, verdict::pass);
  out[1] = 4;
  EXPECT_EQ(check_output(c, dtype::i32, {3}, out.data(), ref.data()).v, verdict::mismatch);
  poison(dtype::i32, out.data(), 3);
  EXPECT_TRUE(is_poison(dtype::i32, out.data(), 2));
  EXPECT_EQ(check_output(c, dtype::i32, {3}, out.data(), ref.data()).v, verdict::unwritten);
}
