// lathe init's verdict on an expert kernel (lineage/init.h): whether it may be a lineage's end
// point, and everything that decided it. Stored append-only (store: expert_checks), so a later
// decompose can tell an expert that was accepted from one that was refused, and why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/feature.h"

namespace lathe {

// One screening finding: a symbol or library that delegates the work (cuBLAS, OpenBLAS, torch…)
// found in the built object, with where it was seen.
struct delegation_finding {
  std::string what;   // "library" or "symbol"
  std::string name;   // "libcublas.so.13", "cblas_sgemm"
  std::string where;  // "ldd", "nm -D (undefined)"
  bool allowed = false;  // the task allows it (a baseline's library, declared by the task)
};

struct expert_check {
  int64_t id = 0;
  std::string created_at;
  std::string task;
  std::string kernel;       // hash
  std::string kernel_name;  // "expert"
  std::string target;       // architecture
  bool accepted = false;
  std::string reason;       // why it was refused, or "accepted"
  std::vector<int64_t> evaluations;           // the gate and the fresh re-measure
  // The kernel the expert had to beat: the task's baseline, or its naive kernel when the baseline
  // is a vendor library (lineage/init.h).
  std::string measured_against;
  std::optional<double> ratio;                // gate: time(measured_against) / expert time
  std::optional<double> remeasured_ratio;     // the fresh worker's paired ratio
  std::optional<double> library_ratio;        // against a vendor-library baseline, recorded only
  std::vector<delegation_finding> findings;   // screening of the built object
  std::vector<feature> features;              // detectors + audit, each with its method
  std::vector<std::string> unknown_features;  // registry names neither could decide
  std::string repo;                           // read-only context for the proposer (--repo)
};

}  // namespace lathe
