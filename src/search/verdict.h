// Internal to search/: what one gate evaluation decided, as optimize's loop reads it, live or
// from its journal: the body of an `evaluation` event (journal.h), kept byte for byte so that a
// stored run resumes (tests/search/records_test.cpp pins old records).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

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
  bool faster() const { return passed && ratio && *ratio >= 1.0 + margin; }
};

// The record (inspection: the roofline position and resource report the evaluation gave).
nlohmann::json verdict_json(const verdict& v);
verdict verdict_from(const nlohmann::json& j);

}  // namespace lathe::search::detail
