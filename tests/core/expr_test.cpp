// Shape and cost expressions: arithmetic, precedence, and refusal of every overflow.
#include <cstdint>
#include "core/expr.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

const std::map<std::string, int64_t> syms{
    {"M", 512}, {"N", 256}, {"K", 128}, {"big", int64_t{1} << 32}};

int64_t ok(const char* text) {
  auto v = eval_expr(text, syms);
  EXPECT_TRUE(v.has_value()) << text << ": " << (v ? "" : v.error().message);
  return v ? *v : -1;
}

std::string err(const char* text) {
  auto v = eval_expr(text, syms);
  EXPECT_FALSE(v.has_value()) << text << " evaluated to " << (v ? *v : 0);
  return v ? std::string() : v.error().message;
}

TEST(expr, arithmetic_and_precedence) {
  EXPECT_EQ(ok("2*M*N*K"), int64_t{2} * 512 * 256 * 128);
  EXPECT_EQ(ok("4*(M*K + K*N + M*N)"), 4 * (512 * 128 + 128 * 256 + 512 * 256));
  EXPECT_EQ(ok("1 + 2 * 3"), 7);
  EXPECT_EQ(ok("(1 + 2) * 3"), 9);
  EXPECT_EQ(ok("10 - 4 - 3"), 3);  // left associative
  EXPECT_EQ(ok("100 / 10 / 5"), 2);
  EXPECT_EQ(ok("7 / 2"), 3);
  EXPECT_EQ(ok("-7 / 2"), -3);  // truncation, like C
  EXPECT_EQ(ok("-M + 1"), -511);
  EXPECT_EQ(ok("--3"), 3);
  EXPECT_EQ(ok("  42  "), 42);
  EXPECT_EQ(ok("M"), 512);
}

TEST(expr, overflow_is_an_error_never_a_wrap) {
  EXPECT_NE(err("big*big").find("overflows"), std::string::npos);
  EXPECT_NE(err("big*big*big").find("overflows"), std::string::npos);
  EXPECT_NE(err("9223372036854775807 + 1").find("overflows"), std::string::npos);
  EXPECT_NE(err("-9223372036854775807 - 2").find("overflows"), std::string::npos);
  EXPECT_NE(err("99999999999999999999").find("overflows"), std::string::npos);
  EXPECT_NE(err("(-9223372036854775807 - 1) / -1").find("overflows"), std::string::npos);
  EXPECT_NE(err("-(-9223372036854775807 - 1)").find("overflows"), std::string::npos);
  EXPECT_EQ(ok("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ok("-9223372036854775807 - 1"), INT64_MIN);
}

TEST(expr, errors_name_the_problem) {
  EXPECT_NE(err("2*M*X").find("unknown symbol 'X'"), std::string::npos);
  EXPECT_NE(err("M / (N - 256)").find("division by zero"), std::string::npos);
  err("");
  err("2*");
  err("(2");
  err("2 3");
  err("2 $ 3");
  err("2.5");
  err(")");
}

bool cond(const char* text, const std::map<std::string, int64_t>& s = syms) {
  auto v = eval_condition(text, s);
  EXPECT_TRUE(v.has_value()) << text << ": " << (v ? "" : v.error().message);
  return v && *v;
}

std::string cond_err(const char* text) {
  auto v = eval_condition(text, syms);
  EXPECT_FALSE(v.has_value()) << text << " evaluated to " << (v ? *v : false);
  return v ? std::string() : v.error().message;
}

TEST(expr, remainder_truncates_like_c) {
  EXPECT_EQ(ok("7 % 3"), 1);
  EXPECT_EQ(ok("-7 % 3"), -1);
  EXPECT_EQ(ok("M % 100 * 2"), 24);  // same precedence as * and /, left to right
  EXPECT_NE(err("M % (N - 256)").find("remainder by zero"), std::string::npos);
}

TEST(expr, conditions_for_tunable_constraints) {
  const std::map<std::string, int64_t> s{{"BLOCK", 256}, {"ITEMS", 4}, {"N", 1000}, {"TILE", 16}};
  EXPECT_TRUE(cond("BLOCK * ITEMS <= 4096", s));
  EXPECT_FALSE(cond("BLOCK * ITEMS < 1024", s));
  EXPECT_TRUE(cond("BLOCK * ITEMS >= 1024 && TILE % 16 == 0", s));
  EXPECT_FALSE(cond("N % BLOCK == 0", s));
  EXPECT_TRUE(cond("N % BLOCK != 0", s));
  EXPECT_TRUE(cond("BLOCK > 512 || ITEMS > 2", s));
  EXPECT_FALSE(cond("!(BLOCK > 128)", s));
  EXPECT_TRUE(cond("!(BLOCK > 512) && !!ITEMS", s));
  EXPECT_TRUE(cond("(BLOCK == 256 || BLOCK == 128) && (ITEMS == 4)", s));
  EXPECT_TRUE(cond("BLOCK", s));                    // non-zero is true
  EXPECT_FALSE(cond("BLOCK - 256", s));
}

TEST(expr, a_bad_condition_says_why) {
  EXPECT_NE(cond_err("M <").find("unexpected end"), std::string::npos);
  EXPECT_NE(cond_err("M & N").find("unexpected '&'"), std::string::npos);
  // Comparisons do not chain (C would compare a 0 or 1 with the next operand).
  EXPECT_NE(cond_err("1 < M == 1").find("unexpected '='"), std::string::npos);
  EXPECT_NE(cond_err("BLOCK <= 4").find("unknown symbol 'BLOCK'"), std::string::npos);
  EXPECT_NE(cond_err("M % 0 == 0").find("remainder by zero"), std::string::npos);
  // An error on the side that would not decide the result still refuses: nothing is hidden.
  EXPECT_NE(cond_err("1 || M / 0").find("division by zero"), std::string::npos);
  // Plain arithmetic (shapes, cost models) takes no comparison.
  EXPECT_NE(err("M < N").find("unexpected '<'"), std::string::npos);
  std::string deep(100000, '!');
  deep += "1";
  EXPECT_NE(cond_err(deep.c_str()).find("nesting"), std::string::npos);
}

TEST(expr, deep_nesting_is_refused_not_a_stack_overflow) {
  std::string deep(100000, '(');
  deep += "1";
  deep += std::string(100000, ')');
  EXPECT_NE(err(deep.c_str()).find("nesting"), std::string::npos);
  std::string negs(100000, '-');
  negs += "1";
  err(negs.c_str());
  std::string fine = std::string(50, '(') + "M" + std::string(50, ')');
  EXPECT_EQ(ok(fine.c_str()), 512);
}

}  // namespace
}  // namespace lathe
