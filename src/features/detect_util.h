// Helpers shared by the detectors (detect_ptx.cpp, detect_cpu.cpp, detect_source.cpp): one
// detection per (name, locus), text splitting. Internal to agent/rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "features/detect.h"

namespace lathe::agent::rules::detail {

// Detections keyed by (name, locus), kept in order of first evidence: a detector reports every
// instance it sees and the set keeps the first as evidence and counts the rest.
class detection_set {
 public:
  explicit detection_set(detection_method m) : method_(m) {}
  // The detection of (name, locus), created with `evidence` when new; `count` counts the calls.
  detection& add(std::string_view name, std::string_view locus, std::string evidence);
  int32_t count(const detection& d) const;
  // Each detection with " (N in this function)" appended to its evidence where N > 1.
  std::vector<detection> take(std::string_view unit = "in this function");

 private:
  detection_method method_;
  std::vector<std::pair<detection, int32_t>> items_;
};

// Sets params[key] to `value` when it is larger than the one there (or there is none).
void keep_max_param(detection& d, const std::string& key, int64_t value);
// Appends `value` to the comma-separated params[key] unless already listed.
void add_param_item(detection& d, const std::string& key, std::string_view value);

std::string_view trim(std::string_view s);

}  // namespace lathe::agent::rules::detail
