// Device trials: for CUDA tasks with a `gpu_reference`, the inputs of every trial are generated
// on the GPU with the shared counter-based RNG (bit-identical to the host's), and an oracle — a
// trusted CUDA worker holding the task's fp64 GPU reference — computes the reference outputs in
// its own memory and compares a kernel's outputs with them on the device. Nothing of size
// crosses PCIe: the oracle reads the kernel's buffer through a CUDA IPC handle, or, where IPC is
// unavailable, a copy staged through shared memory. The kernel's process never sees the oracle's
// memory. Before the GPU reference is trusted it is checked against the CPU reference on the
// task's smallest shape set (cross_check).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/task.h"
#include "gate/build.h"
#include "gate/check.h"
#include "gate/cpu/worker.h"
#include "gate/trial.h"

namespace lathe::gate {

// Commands any CUDA worker answers (wire.h).
wire::command fill_command(uint32_t slot, const trial_spec& s);
wire::command poison_command(uint32_t first, uint32_t count);
wire::command share_command();

// One comparison, as the host's check would have reported it (check.h).
struct device_verdict {
  bool inputs_mutated = false;
  std::vector<output_check> outputs;  // one per output, in task order
  uint64_t checksum = 0;              // of every output's bytes (cached-result detection)
};
device_verdict judge(const task& t, const slot_layout& l, const wire::reply& r, uint64_t seed);

class oracle {
 public:
  // Starts a trusted CUDA worker (no seccomp: it opens other processes' IPC handles) on the GPU
  // reference object. `region_bytes` bounds what fetch_ref and stage can move.
  static result<oracle> start(const sandbox_options& opt, const build_output& reference,
                              uint64_t region_bytes, double timeout_s);
  oracle() = default;

  worker_result setup(const task& t, const slot_layout& l, uint32_t slots);
  worker_result setup(const wire::command& setup_cmd);  // another layout (fresh_windows.h)
  // Inputs of `slot` from `s` as window `window` reads them, then the fp64 reference outputs
  // from them.
  worker_result prepare(uint32_t slot, const trial_spec& s, uint32_t window = 0);
  worker_result attach(uint32_t peer, const uint8_t (&handle)[64]);
  // The peer's inputs read at window `window` (the peer's slot has the oracle's layout).
  worker_result compare(uint32_t slot, uint32_t peer, uint32_t peer_slot, uint32_t window = 0);
  // Peer 0: `bytes` of a kernel's slot, copied from its region, staged onto the device.
  worker_result stage(const uint8_t* slot, uint64_t bytes);

  // The GPU reference against the CPU one on the trial of `host` (make_trial), in slot 0:
  // inputs bit-identical, reference outputs within 1e-9 relative (different summation orders
  // in fp64). An empty string when they agree, else what differs.
  std::string cross_check(const task& t, const slot_layout& l, const trial_data& host);

  worker& process() { return w_; }

 private:
  shared_region region_;
  worker w_;
  double timeout_s_ = 20;
};

}  // namespace lathe::gate
