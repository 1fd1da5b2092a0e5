// What lineage/, skills/ and search/ ask of the gate (DESIGN.md "gate"): a kernel checked, or
// checked and timed against another in a paired series, every evaluation stored; and the
// features a built kernel holds. One interface so that decompose, admission and optimize measure
// alike, and so that tests can count what was asked. The implementation over the real gate is
// gate_verifier (below); nothing here decides what a verdict means for a lineage or a card.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "features/detect.h"
#include "core/error.h"
#include "core/evaluation.h"
#include "core/kernel.h"
#include "core/task.h"
#include "gate/gate.h"

namespace lathe::lineages {

class verifier {
 public:
  virtual ~verifier() = default;

  // The correctness checks only (screen, compile, load, check): `baseline` is the kernel the
  // gate would time against; it is built and checked too. Stored; `id` set.
  virtual evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                           const provenance& prov) = 0;
  // The full gate: checks, then a paired randomized series of `candidate` against `baseline`
  // (ratio = baseline time / candidate time, > 1: candidate faster) with the A/A control, in fresh
  // worker processes every call. Stored; `id` set.
  virtual evaluation compare(const task& t, const kernel_bundle& candidate,
                             const kernel_bundle& baseline, const provenance& prov) = 0;
  // The features of `k` from its built artifact (PTX / disassembly) and its source (detect.h).
  // A kernel that does not build: the source's detections, with a note saying so.
  virtual agent::rules::detections features(const task& t, const kernel_bundle& k) = 0;
  // The built object of `k` (for link-level screening): the .so path, or why there is none.
  virtual result<std::filesystem::path> object(const task& t, const kernel_bundle& k) = 0;
};

// ε of the smallest ratio that counts as "faster" for an evaluation, 1 + ε (PROTOCOL.md "A/A
// control": ε at least three times the A/A spread), floored per platform: 5% on CPU (the 2-core
// VM's paired A/A reads 0.978–1.023), 1% on CUDA. An evaluation without an A/A series gets the floor.
double margin(const evaluation& e, platform p);
// That floor alone (gate/paired.h decision_floor): what a proposer is told the margin never goes below.
double margin_floor(platform p);
// Whether `e` passed the gate (outcome ok) and, when timed, its paired ratio.
bool passed(const evaluation& e);
// Whether the gate decided `e`'s candidate faster: it passed and the paired ratio's interval lies
// above 1 + epsilon (PROTOCOL.md's rule, the one `lathe eval` prints; gate/paired.h decide). The
// rule optimize, evolve, the lineage walks and admission accept a step by (issue 43, step 10).
bool faster(const evaluation& e);
std::optional<double> ratio(const evaluation& e);

// How gate_verifier reaches the gate and the store: the cli builds these from its context
// (make_gate_config, store_evaluation), so that every verb measures the same way.
struct gate_hooks {
  // The gate's configuration for a task; `time` false: checks only.
  std::function<gate::gate_config(const task& t, bool time)> config;
  // Stores the kernel and the evaluation; sets e.id.
  std::function<result<int64_t>(const kernel_bundle& k, evaluation& e)> record;
};

class gate_verifier final : public verifier {
 public:
  explicit gate_verifier(gate_hooks hooks) : hooks_(std::move(hooks)) {}
  evaluation check(const task& t, const kernel_bundle& k, const kernel_bundle& baseline,
                   const provenance& prov) override;
  evaluation compare(const task& t, const kernel_bundle& candidate, const kernel_bundle& baseline,
                     const provenance& prov) override;
  agent::rules::detections features(const task& t, const kernel_bundle& k) override;
  result<std::filesystem::path> object(const task& t, const kernel_bundle& k) override;

  int64_t evaluations() const { return evaluations_.load(); }  // gate runs made through this verifier

 private:
  evaluation run(const task& t, const kernel_bundle& c, const kernel_bundle& b,
                 const provenance& prov, bool time);
  gate_hooks hooks_;
  std::atomic<int64_t> evaluations_{0};  // several evaluations may run at once (evolve)
};

}  // namespace lathe::lineages
