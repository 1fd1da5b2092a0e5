// The outcome predicates (built, correct) over every enumerator, and the outcome field of run
// records: written as the name, "" for none, read back to the same value (issue 43, step 1).
#include "core/outcome.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/json.h"

namespace lathe {
namespace {

struct sets {
  bool built, correct;
};

// Every enumerator with the two answers, written out: a value added to the enum fails the count
// below until it is placed here.
const std::map<outcome, sets>& expected() {
  static const std::map<outcome, sets> m = {
      {outcome::ok, {true, true}},
      {outcome::forbidden, {false, false}},
      {outcome::unsupported_target, {true, false}},  // as before: also said after a CUDA build
      {outcome::compile_error, {false, false}},
      {outcome::load_error, {false, false}},  // KernelBench's JSON counted it as compiled
      {outcome::launch_error, {true, false}},
      {outcome::crash, {true, false}},
      {outcome::timeout, {true, false}},
      {outcome::resource_limit, {true, false}},
      {outcome::wrong_result, {true, false}},
      {outcome::nan_or_inf, {true, false}},
      {outcome::input_mutated, {true, false}},
      {outcome::unwritten_output, {true, false}},
      {outcome::cached_output, {true, false}},
      {outcome::suspicious_speed, {true, false}},
      {outcome::unstable, {true, true}},  // correct; only its speed left open
      {outcome::edit_not_applied, {false, false}},
      {outcome::infra_error, {true, false}},
  };
  return m;
}

TEST(outcome, built_and_correct_over_every_enumerator) {
  const int count = static_cast<int>(outcome::infra_error) + 1;
  ASSERT_EQ(expected().size(), static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const auto o = static_cast<outcome>(i);
    const sets want = expected().at(o);
    EXPECT_EQ(built(o), want.built) << to_string(o);
    EXPECT_EQ(correct(o), want.correct) << to_string(o);
    if (correct(o)) {
      EXPECT_TRUE(built(o)) << to_string(o) << ": correct but not built";
    }
  }
}

TEST(outcome, record_field_round_trips_every_enumerator_and_none) {
  for (int i = 0; i <= static_cast<int>(outcome::infra_error); ++i) {
    const auto o = static_cast<outcome>(i);
    const json j = {{"outcome", outcome_text(o)}};
    EXPECT_EQ(j.dump(), "{\"outcome\":\"" + std::string(to_string(o)) + "\"}");
    EXPECT_EQ(outcome_field(j, "outcome"), o);
  }
  const json none = {{"outcome", outcome_text(std::nullopt)}};
  EXPECT_EQ(none.dump(), R"({"outcome":""})");
  EXPECT_EQ(outcome_field(none, "outcome"), std::nullopt);
  EXPECT_EQ(outcome_field(json::object(), "outcome"), std::nullopt);  // an older record without it
  EXPECT_THROW(outcome_field(json{{"outcome", "passed"}}, "outcome"), json::type_error);
}

}  // namespace
}  // namespace lathe
