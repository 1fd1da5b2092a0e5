// dtype names and codes, the closed enums' names, targets.
#include "core/dtype.h"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/feature.h"
#include "core/kernel.h"
#include "core/lineage.h"
#include "core/outcome.h"
#include "core/provenance.h"
#include "core/run.h"
#include "core/target.h"
#include "core/task.h"

namespace lathe {
namespace {

TEST(dtype, parses_canonical_names_and_aliases) {
  const std::pair<const char*, dtype> cases[] = {
      {"float32", dtype::f32},   {"f32", dtype::f32},      {"fp32", dtype::f32},
      {"bfloat16", dtype::bf16}, {"bf16", dtype::bf16},    {"float16", dtype::f16},
      {"f16", dtype::f16},       {"half", dtype::f16},     {"float64", dtype::f64},
      {"f64", dtype::f64},       {"double", dtype::f64},   {"int8", dtype::i8},
      {"int16", dtype::i16},     {"int32", dtype::i32},    {"int64", dtype::i64},
      {"uint8", dtype::u8},      {"uint16", dtype::u16},   {"uint32", dtype::u32},
      {"uint64", dtype::u64},    {"bool", dtype::boolean},
  };
  for (const auto& [name, t] : cases) {
    auto p = parse_dtype(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(*p, t) << name;
  }
  for (const char* bad : {"floot32", "", "Float32", "float8", "int128", "complex64"})
    EXPECT_FALSE(parse_dtype(bad).has_value()) << bad;
}

TEST(dtype, canonical_name_round_trips_for_every_type) {
  for (int i = 0; i <= static_cast<int>(dtype::boolean); ++i) {
    const auto t = static_cast<dtype>(i);
    auto p = parse_dtype(to_string(t));
    ASSERT_TRUE(p.has_value()) << to_string(t);
    EXPECT_EQ(*p, t);
    EXPECT_EQ(dl_bits(t), size_of(t) * 8);
  }
}

TEST(dtype, sizes_and_dlpack_codes) {
  EXPECT_EQ(size_of(dtype::bf16), 2u);
  EXPECT_EQ(size_of(dtype::f64), 8u);
  EXPECT_EQ(size_of(dtype::boolean), 1u);
  EXPECT_EQ(dl_code(dtype::f16), kDLFloat);
  EXPECT_EQ(dl_code(dtype::bf16), kDLBfloat);
  EXPECT_EQ(dl_code(dtype::i32), kDLInt);
  EXPECT_EQ(dl_code(dtype::u64), kDLUInt);
  // DLPack 0.6 has no bool code: ABI v1 says kDLUInt, 8 bits.
  EXPECT_EQ(dl_code(dtype::boolean), kDLUInt);
  EXPECT_EQ(dl_bits(dtype::boolean), 8u);
  EXPECT_TRUE(is_floating(dtype::bf16));
  EXPECT_FALSE(is_floating(dtype::i8));
  EXPECT_FALSE(is_floating(dtype::boolean));
}

TEST(outcome, every_value_round_trips_through_its_name) {
  for (int i = 0; i <= static_cast<int>(outcome::edit_not_applied); ++i) {
    const auto o = static_cast<outcome>(i);
    EXPECT_NE(to_string(o), "?");
    auto p = parse_outcome(to_string(o));
    ASSERT_TRUE(p.has_value()) << to_string(o);
    EXPECT_EQ(*p, o);
  }
  EXPECT_EQ(to_string(outcome::wrong_result), "wrong_result");
  EXPECT_FALSE(parse_outcome("passed").has_value());
}

TEST(enums, names) {
  EXPECT_STREQ(to_string(platform::cuda), "cuda");
  EXPECT_STREQ(to_string(task_role::heldout), "heldout");
  EXPECT_STREQ(to_string(distribution_kind::integers), "integers");
  EXPECT_STREQ(to_string(comparison_kind::sorted_set), "sorted_set");
  EXPECT_STREQ(to_string(language::cuda), "cuda");
  EXPECT_STREQ(to_string(detection_method::proposer_audit), "proposer_audit");
  EXPECT_STREQ(to_string(termination::rejection_limit), "rejection_limit");
  EXPECT_STREQ(to_string(run_kind::evolve), "evolve");
  EXPECT_STREQ(to_string(run_state::interrupted), "interrupted");
  EXPECT_STREQ(to_string(errc::parse_error), "parse_error");
}

TEST(provenance, renders_kind_and_detail) {
  EXPECT_EQ(to_string(provenance{"llm", "openai/gpt-x", false}), "llm:openai/gpt-x");
  EXPECT_EQ(to_string(provenance{"human", "", false}), "human");
  EXPECT_EQ(to_string(provenance{"rules", "unroll", true}), "rules:unroll (mechanical)");
}

TEST(target, capabilities_and_isa_levels) {
  target t;
  t.capabilities = {"avx", "avx2", "fma"};
  EXPECT_TRUE(has_capability(t, "avx2"));
  EXPECT_FALSE(has_capability(t, "avx512f"));
  EXPECT_EQ(x86_level("x86-64"), 1);
  EXPECT_EQ(x86_level("x86-64-v2"), 2);
  EXPECT_EQ(x86_level("x86-64-v3"), 3);
  EXPECT_EQ(x86_level("x86-64-v4"), 4);
  EXPECT_EQ(x86_level("sm_90a"), -1);
  EXPECT_EQ(x86_level(""), -1);
}

TEST(error, fail_carries_code_and_message) {
  result<int> r = fail(errc::not_found, "no such task");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::not_found);
  EXPECT_EQ(r.error().message, "no such task");
}

}  // namespace
}  // namespace lathe
