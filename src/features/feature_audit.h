// The features of a kernel as lineage/ keeps them, and the feature audit of a backward step
// (issue 6; docs/lineage.md "Feature audit"): whether exactly the claimed mechanism disappeared
// from the predecessor and every other one remained.
//
// Identity. A feature is keyed by (registry name, locus), locus as the detectors write it
// (`function` or `function/loop-path`); parameters are not part of the key (a width or an unroll
// factor may read differently after an unrelated edit without a mechanism going away). The audit
// compares artifact detections (PTX, disassembly) by name alone: their locus is the function the
// compiler emitted the instructions in, which inlining and outlining move without any mechanism
// changing (taking conv2d's OpenMP region away lets GCC inline conv_tile into lathe_launch, and
// the packed arithmetic found in conv_tile is then found in lathe_launch). Source and audit
// detections are compared by name@locus. The lineage's per-kernel sets and each step's
// added/removed lists keep every locus (feature_key).
//
// Written and compiler-made features. A detection counts as a mechanism of the kernel — an
// optimization a backward step can remove — unless a compiler made it on its own: an artifact
// detection (PTX, disassembly) of a name compilers produce unasked (`simd`: a loop GCC vectorized;
// `read_only_load`: an `ld.global.nc` nvcc made from `const __restrict__`; `vector_access`:
// adjacent loads merged) whose name the source does not write (detect_source finds it nowhere in
// the bundle). No edit of the source removes such a feature as such, so it does not keep a walk
// from being complete, and it may come and go with a step without failing the audit (the step's
// removed/added lists still show it, from the per-kernel sets). Every other artifact detection
// counts even when the source detector misses it: no compiler invents a shared-memory tile or an
// mma.sync, and the artifact is what runs.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/feature.h"
#include "core/kernel.h"
#include "features/detect.h"

namespace lathe::lineages {

// "name@locus": the key features are compared by.
std::string feature_key(const feature& f);
// What the audit compares by: "name@locus" for a source or audit detection, "name@*" for an
// artifact detection.
std::string audit_key(const feature& f);
// "name @ locus" for people.
std::string feature_text(const feature& f);

// The detections as features, in their order (artifact first), one per key.
std::vector<feature> features_of(const agent::rules::detections& d);

// The names `k`'s source writes (detect_source), sorted.
std::set<std::string> written_names(const kernel_bundle& k);

// Names a compiler produces on its own (see above).
bool compiler_can_make(std::string_view name);
// The features of `all` that count as mechanisms of the kernel whose source writes `written`.
std::vector<feature> written_features(const std::vector<feature>& all, const std::set<std::string>& written);

enum class audit_kind : uint8_t {
  removed,   // the claimed feature lost at least one locus; everything else stayed
  partial,   // no claimed name lost anything and nothing else changed: the mechanism is still there
  mismatch,  // something else changed, or the claim is wrong
};

struct step_audit {
  audit_kind kind = audit_kind::mismatch;
  std::vector<feature> removed;     // the claimed features' loci that disappeared (successor's)
  std::string reason;               // partial / mismatch: in words
  std::vector<std::string> notes;   // compiler-made features that came or went, params that moved
};

// The audit of a backward step that claims to remove the names `claimed` from `successor` (more
// optimized) giving `predecessor`: both feature lists already restricted to written features
// (written_features), `*_all` the full lists (for the notes on compiler-made changes).
//
// One mechanism usually has one registry name; some have more that cannot be separated (x86
// intrinsics are both `simd` and `vector_access`: the same __m256 values flow from the vector
// load through the arithmetic), and a proposal claims all of them. The audit: every claimed name
// lost at least one of its loci and gained none; every other written feature (name@locus)
// remained; nothing written appeared. `partial` when no claimed name lost anything and nothing
// else changed (the edit took away part of the mechanism: one `__restrict__` of three).
step_audit audit_step(const std::vector<std::string>& claimed, const std::vector<feature>& successor,
                      const std::vector<feature>& predecessor,
                      const std::vector<feature>& successor_all = {},
                      const std::vector<feature>& predecessor_all = {});

// In the optimizing direction from -> to: what `to` has that `from` lacks (added) and the reverse
// (removed), by key, each list in its kernel's order.
struct feature_diff {
  std::vector<feature> added, removed;
};
feature_diff diff_features(const std::vector<feature>& from, const std::vector<feature>& to);

}  // namespace lathe::lineages
