// Internal to search/: what one gate evaluation decided, as optimize's loop reads it, live or
// from its journal: the body of an `evaluation` event (journal.h), kept byte for byte so that a
// stored run resumes (tests/search/records_test.cpp pins old records).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "core/decision.h"
#include "core/outcome.h"

namespace lathe::search::detail {

struct verdict {
  int64_t id = 0;
  std::optional<lathe::outcome> outcome;  // none only in a record that lacks it
  std::string message, diagnostics, inspection;
  std::optional<double> ratio;
  std::optional<double> seconds, against_seconds, floor;  // medians and the roofline floor
  double margin = 0;
  bool passed = false;
  // The gate's decision and the ratio's interval; absent in records from before they were kept
  // (those runs decided by the point ratio, and replay as they decided).
  std::optional<lathe::decision> decision;
  std::optional<double> ci_low, ci_high;
  // The A/A control's interval (the baseline against a copy of itself), which `margin` is three
  // times the reach of, and the reach past which the gate calls the machine too noisy to decide
  // (timing_policy::aa_unstable); absent in records from before they were kept.
  std::optional<double> aa_low, aa_high, aa_unstable;
  // Faster by the gate's rule (verify/verifier.h faster): the interval's low end clears 1 + margin.
  bool faster() const;
  // The ratio as a proposer reads it (optimize.h speed_reading), "" when none was measured.
  std::string reading() const;
};

// The record (inspection: the roofline position and resource report the evaluation gave).
nlohmann::json verdict_json(const verdict& v);
verdict verdict_from(const nlohmann::json& j);

}  // namespace lathe::search::detail
