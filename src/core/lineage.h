// A lineage and its transitions (DESIGN.md). Defined here, in core/, so that skills/ reads
// lineages through store/ without depending on lineage/. The shapes and their JSON
// (core/json_lineage.h) are contracts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/feature.h"
#include "core/provenance.h"

namespace lathe {

enum class termination : uint8_t { complete, step_limit, rejection_limit, unknown };

// KLineage forward re-derivation of one accepted backward step (lineage/forward.h): an
// independent proposer call re-applies the optimization to the predecessor without seeing the
// backward diff. `identity_roundtrip`: the result is byte for byte the successor, so the step is
// proven plumbing (provenance mechanical), not re-derived knowledge.
// undecided: the re-derivation passed the gate, but the machine's noise (an A/A margin past 25%,
// timed twice) could not tell whether it is as fast as its successor.
enum class forward_status : uint8_t { not_tried, accepted, rejected, identity_roundtrip, undecided };

struct forward_result {
  forward_status status = forward_status::not_tried;
  std::string kernel;                // hash of the re-derived kernel (empty: none was written)
  std::optional<double> ratio;       // paired: successor time / re-derived time (>= 1 - noise)
  std::vector<int64_t> evaluations;  // gate evidence
  provenance prov;
  std::string reason;                // why it was accepted or rejected, in words
};

// One step K(i) -> K(i+1) in the optimizing direction (found backward: the walk removes a
// mechanism from K(i+1) and gets K(i)).
struct transition {
  std::string from_kernel, to_kernel;  // kernel hashes (from = less optimized)
  std::string action;                  // action category
  std::string locus;
  std::string edit;                    // the backward edit as applied (docs/edits.md text)
  std::string invocation;              // rules: the forward rule invocation (the carrier); else empty
  std::vector<feature> removed, added; // in the optimizing direction: what `to` has that `from` lacks = added
  std::optional<double> speedup;       // measured paired ratio: time(from) / time(to)
  std::vector<int64_t> evaluations;    // gate evidence (evaluation ids)
  std::vector<std::string> rejected;   // rejected attempts at this step (summaries)
  provenance prov;                     // who wrote the backward step
  forward_result forward;
};

struct lineage {
  std::string id;                    // "<task>/<expert hash prefix>/<run id>"
  std::string task;
  std::string op;                    // the task's operator family
  std::string expert;                // the expert's kernel name
  std::string target;                // architecture it was measured on ("x86-64-v3", "sm_90a")
  std::string run_id;                // the decompose run that built it
  std::vector<std::string> kernels;  // naive = K0 … Kn = expert (hashes)
  std::vector<std::vector<feature>> features;  // verified features of each kernel, same order
  std::vector<transition> steps;     // steps[i]: kernels[i] -> kernels[i+1]
  termination term = termination::unknown;
  std::string reason;
  std::vector<std::string> remaining_features;  // features of K0 the walk could not remove
};

const char* to_string(termination t);
const char* to_string(forward_status s);

}  // namespace lathe
