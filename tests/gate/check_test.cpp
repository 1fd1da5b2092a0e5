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

// comparison_kind::topk: 2 rows of x (C = 5), k = 3. Row 0 ties at the k-th value (two 4s), so
// either of columns 1 and 4 is a right third index.
namespace {
const std::vector<float> topk_x{9, 4, 1, 7, 4, /**/ -1, -2, -3, -4, -5};

output_check topk_indices(const std::vector<int64_t>& idx, const std::vector<float>& vals) {
  return check_topk_indices(dtype::i64, {2, 3}, idx.data(), dtype::f32, vals.data(), dtype::f32,
                            {2, 5}, topk_x.data());
}
}  // namespace

TEST(check, topk_values_pass_in_any_order_and_indices_pass_for_any_tied_position) {
  comparison c;
  c.kind = comparison_kind::topk;
  c.tol.rtol = c.tol.atol = c.tol.nerr = 0;
  const std::vector<double> ref{9, 7, 4, -1, -2, -3};
  // Permuted rows against the sorted-descending reference.
  EXPECT_EQ(check(c, {4, 9, 7, -3, -1, -2}, ref, {2, 3}).v, verdict::pass);
  EXPECT_EQ(topk_indices({4, 0, 3, 2, 0, 1}, {4, 9, 7, -3, -1, -2}).v, verdict::pass);
  // The other tied 4 is as right.
  EXPECT_EQ(topk_indices({1, 0, 3, 2, 0, 1}, {4, 9, 7, -3, -1, -2}).v, verdict::pass);
}

TEST(check, topk_rejects_a_wrong_value_a_duplicated_index_and_a_misplaced_one) {
  comparison c;
  c.kind = comparison_kind::topk;
  c.tol.rtol = c.tol.atol = c.tol.nerr = 0;
  const std::vector<double> ref{9, 7, 4, -1, -2, -3};
  // 1 instead of the second 4 in row 0: a value outside the top 3.
  EXPECT_EQ(check(c, {1, 9, 7, -3, -1, -2}, ref, {2, 3}).v, verdict::mismatch);
  // Both 4s carry column 1: the values are right, the indices name one element twice.
  auto dup = topk_indices({1, 0, 1, 2, 0, 1}, {4, 9, 4, -3, -1, -2});
  EXPECT_EQ(dup.v, verdict::mismatch);
  ASSERT_FALSE(dup.rec.first_mismatches.empty());
  EXPECT_NE(dup.rec.first_mismatches[0].find("appears twice"), std::string::npos) << dup.rec.first_mismatches[0];
  // Column 2 holds 1, not the 4 beside it.
  EXPECT_EQ(topk_indices({2, 0, 3, 2, 0, 1}, {4, 9, 7, -3, -1, -2}).v, verdict::mismatch);
  // Out of the row, negative, and a flat index into the next row.
  EXPECT_EQ(topk_indices({5, 0, 3, 2, 0, 1}, {4, 9, 7, -3, -1, -2}).v, verdict::mismatch);
  EXPECT_EQ(topk_indices({-1, 0, 3, 2, 0, 1}, {4, 9, 7, -3, -1, -2}).v, verdict::mismatch);
  EXPECT_EQ(topk_indices({1, 0, 3, 7, 5, 6}, {4, 9, 7, -3, -1, -2}).v, verdict::mismatch);
}

TEST(check, topk_indices_left_poisoned_are_unwritten) {
  std::vector<int64_t> idx{1, 0, 3, 2, 0, 1};
  poison(dtype::i64, idx.data() + 4, 1);
  EXPECT_EQ(topk_indices(idx, {4, 9, 7, -3, -1, -2}).v, verdict::unwritten);
}

TEST(check, topk_fits_only_values_then_indices_of_one_shape) {
  task t;
  t.compare.kind = comparison_kind::topk;
  t.inputs.push_back({"x", dtype::f32, {{"R", 0}, {"C", 0}}});
  t.outputs.push_back({"values", dtype::f32, {{"R", 0}, {"K", 0}}});
  EXPECT_NE(comparison_misfit(t), "");  // no indices
  t.outputs.push_back({"indices", dtype::i64, {{"R", 0}, {"K", 0}}});
  EXPECT_EQ(comparison_misfit(t), "");
  t.outputs[1].shape[1].symbol = "C";
  EXPECT_NE(comparison_misfit(t), "");  // not the values' shape
  t.outputs[1].shape[1].symbol = "K";
  t.outputs[1].type = dtype::f32;
  EXPECT_NE(comparison_misfit(t), "");  // float indices
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
