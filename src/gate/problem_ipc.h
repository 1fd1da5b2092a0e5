// CUDA IPC between a PyTorch problem's worker and a candidate's CUDA worker (docs/problems.md,
// "CUDA IPC"). The problem's worker (python/lathe_problem.py, lathe_ipc.py) is the oracle: it
// opens the IPC handle the candidate's worker took for its device buffer before any kernel code
// ran, writes each trial's inputs straight into the candidate's slot, keeps its own copies of
// the inputs and the float64 reference on the GPU, and compares the candidate's outputs there,
// reporting what a CUDA oracle's op::compare reports (so gate/device_trial.h judge() reads
// both). Nothing crosses PCIe and the candidate's process never sees the oracle's memory. Where
// IPC is unavailable the gate keeps the shared-memory path (gate/trial.h make_trial).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/task.h"
#include "gate/cpu/wire.h"
#include "gate/device_trial.h"
#include "gate/trial.h"

namespace lathe::gate {

class problem_oracle;

// Why a task's checks cannot go through CUDA IPC: not a CUDA problem task, a comparison other
// than element-wise (sorted rows, top-k indices checked against the input stay on the host),
// more outputs than one compare reply carries, a dtype the worker does not compare. Empty when
// they can.
std::string problem_ipc_misfit(const task& t);

// The host's check of the same trial (`d`, the slot back in host memory) against `v`, the
// problem worker's: an empty string when they agree (the same verdict, mismatch count and input
// check per output; errors to 1e-9), else what differs.
std::string host_disagreement(const task& t, const slot_layout& l, const trial_data& d,
                              const uint8_t* slot, const device_verdict& v);

// One candidate worker's device buffer, opened in the problem's worker; closed there when the
// link goes (before the candidate's worker ends).
class problem_link {
 public:
  // `handle`: the candidate worker's share reply; `bytes`: its device buffer (the region's
  // size), checked by the problem's worker against the allocation the handle opens.
  static result<problem_link> attach(problem_oracle& o, const uint8_t (&handle)[64], uint64_t bytes);
  problem_link() = default;
  problem_link(problem_link&& o) noexcept;
  problem_link& operator=(problem_link&& o) noexcept;
  problem_link(const problem_link&) = delete;
  problem_link& operator=(const problem_link&) = delete;
  ~problem_link() { reset(); }
  explicit operator bool() const { return o_ != nullptr; }
  void reset();

  // The inputs of `spec` into slot `slot` of the candidate's buffer; the problem's worker keeps
  // them and their reference. With `mirror`, the same trial through the shared region too, as
  // make_trial returns it (the cross-check of the first trial).
  result<void> prepare(const task& t, const slot_layout& l, uint32_t slot, const trial_spec& spec,
                       trial_data* mirror);
  // Slot `slot`'s inputs and outputs against what prepare kept: input_differences and one
  // output_stats per output, as op::compare fills them.
  result<wire::reply> compare(const task& t, const slot_layout& l, uint32_t slot);

 private:
  problem_oracle* o_ = nullptr;  // outlives the link: the evaluation's reference holds it
  int64_t peer_ = 0;
};

}  // namespace lathe::gate
