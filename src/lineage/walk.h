// Internal to lineage/: what decompose.cpp, backward.cpp and forward.cpp share. Not for callers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lineage/decompose.h"
#include "lineage/run_log.h"

namespace lathe::lineages::detail {

// A kernel of the walk with its features: every detection (and audited name), and the written
// ones, which count as its mechanisms (feature_audit.h).
struct kernel_state {
  kernel_bundle k;
  std::vector<feature> all, written;
  std::vector<std::string> notes;  // the detectors' notes ("no artifact examined: …")
  bool built = true;
};

struct walk_context {
  const task& t;
  verifier& v;
  agent::proposer& p;
  store& db;
  const decompose_options& o;
  std::string run_id;
  std::string target;       // target summary for the proposer
  std::string expert_name;

  // Features of `k` through the verifier; names the successor holds only by the proposer's audit
  // are audited again on `k`, so that the two sets are comparable.
  kernel_state observe(const kernel_bundle& k, const std::vector<feature>& audited_before) const;
};

// One backward attempt at step `step` from `cur`.
struct attempt_result {
  std::optional<accepted_step> accepted;
  kernel_bundle predecessor;                 // with accepted
  std::optional<rejected_attempt> rejected;
  std::optional<backward_end> end;           // the proposer refused (or cannot go on)
};
attempt_result attempt_backward(walk_context& c, const kernel_state& cur, int32_t step,
                                int32_t attempt, const std::vector<agent::attempt_note>& notes);

// The forward re-derivation of one accepted step (`pred` -> `succ`).
struct forward_outcome {
  forward_result result;
  std::string invocation;  // the rule carrier of a rules result, else empty
};
forward_outcome rederive(walk_context& c, const accepted_step& s, const kernel_bundle& pred,
                         const kernel_bundle& succ);

// rederive in its parts, so that several steps' gate checks can run at once (decompose_options::
// cpu_slots): the proposer's result (`k`: the kernel to check; none when `out` is already the
// outcome: refused, or identical to the successor), then the rest given the check's evaluation
// (the feature audit and, with timing, the paired series against the successor).
struct forward_pending {
  forward_outcome out;
  std::optional<kernel_bundle> k;
  std::string claimed_text;
};
forward_pending propose_forward(walk_context& c, const accepted_step& s, const kernel_bundle& pred,
                                const kernel_bundle& succ);
void finish_forward(walk_context& c, const accepted_step& s, const kernel_bundle& succ, const evaluation& e,
                    forward_pending& p);

// Two bundles with the same sources and the same flags (in any order) and otherwise equal
// manifests: "byte for byte" for identity_roundtrip.
bool same_kernel(const kernel_bundle& a, const kernel_bundle& b);

std::string first_line(const std::string& s, size_t max = 240);

}  // namespace lathe::lineages::detail
