// Scoring a decompose against a hand-made staged lineage (issue 6, "score decompose on the
// staged gemm lineage"): tasks/gemm_cuda holds naive -> stage1_smem -> stage2_regtile ->
// stage3_vector -> stage4_mma -> expert, one mechanism per stage. Given each stage's detected
// features, a stage transition is recovered when the walk removed every feature name the later
// stage has and the earlier lacks. Only the scorer reads the ground truth; decompose never does.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/feature.h"
#include "core/lineage.h"

namespace lathe::lineages {

struct stage {
  std::string kernel;             // "stage1_smem"
  std::vector<feature> features;  // its detected features (verifier.features)
};

struct stage_transition_score {
  std::string from, to;                // stage kernel names
  std::vector<std::string> expected;   // names `to` has and `from` lacks (sorted)
  std::vector<std::string> recovered;  // of those, the names a walk step removed
  bool full() const { return !expected.empty() && recovered.size() == expected.size(); }
};

struct stage_score {
  std::vector<stage_transition_score> transitions;
  int32_t recovered = 0;                  // transitions fully recovered
  int32_t partial = 0;                    // some but not all of their names removed
  std::vector<std::string> walk_removed;  // names the walk's steps removed, expert side first
  std::string describe() const;           // a table for people
};

// `stages` in the optimizing order (naive first). `vocabulary`, when not empty, restricts the
// expected names to it (the names the staged lineage says its stages add), so that incidental
// detections (restrict, launch bounds) do not count as a stage's mechanism.
stage_score score_against_stages(const std::vector<stage>& stages, const lineage& walk,
                                 const std::set<std::string>& vocabulary = {});

}  // namespace lathe::lineages
