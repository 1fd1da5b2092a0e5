// A CLI test's --json output parsed, with a failure that shows stdout and stderr when it is not
// JSON (an empty object then, so that the test's own assertions fail on the fields).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lathe_cli_run.h"

namespace lathe::testing {

inline nlohmann::json parse_json(const run_result& r) {
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 400) << "\nstderr: " << r.err.substr(0, 2000);
  return nlohmann::json::accept(r.out) ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

}  // namespace lathe::testing
