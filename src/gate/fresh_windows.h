// The data of decision-mode timing on CUDA (docs/gate.md "Timing"; issue 22's open hole), the
// counterpart of timing_arena.h. The timed calls used to rotate over up to 16 slots whose inputs
// never changed, replayed from one CUDA graph block after block: memo_replay.cu, which hashes
// its inputs on the device and copies the product it cached for them, was decided faster on the
// H200 (x1.035 [1.034, 1.037], bench/results/redteam-2026-12-02.md). Now every timed call reads
// inputs that no earlier timed call read:
//   - within a block, call i runs on slot i % S and reads window i / S of it: each input lives in
//     a buffer holding the tensor and a copy of its first bytes after it (`slack`, as the CPU's
//     pools), and window w reads it at a shift of 256 * (w mod (slack / 256 + 1)) bytes
//     (wire.h window_shift): a rotation of the tensor, the same values, so the same distribution
//     and domain, and the same traffic as the slot it rotates, 256-byte aligned as the ABI says;
//   - between blocks, outside lathe's clock, the worker draws its slots' inputs again on the
//     device from new seeds (wire.h op::fill over the slots), the baseline's as the candidate's;
//   - after the series a sample of the candidate's outputs (slot k holds the output of its last
//     block's last call on k) is checked against the fp64 reference of the window that call read,
//     computed then: by the oracle on the device from the same seed and window, or on the host.
// A problem file's inputs come from its Python worker, which the device cannot draw again: they
// are staged once, and their windows move on from block to block where the calls are launched one
// by one; blocks replayed from a CUDA graph replay their windows (the case left open).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/task.h"
#include "gate/cpu/wire.h"
#include "gate/trial.h"

namespace lathe::gate {

struct window_layout {
  uint32_t slots = 1;
  uint64_t slot_bytes = 0;                  // between slots on the device (a page multiple)
  std::vector<uint64_t> input_at, slack;    // per input: its buffer in the slot; bytes after it
  std::vector<uint64_t> output_at;          // per output
  uint32_t windows = 1;  // distinct windows of a slot: the longest period of an input's shifts
};

// Slack for each input: up to 4096 shifts (1 MiB), never more than the tensor itself.
window_layout make_windows(const slot_layout& l, uint32_t slots);
// The worker's setup for it (setup_command's tensors at the window layout's offsets).
wire::command window_setup(const task& t, const slot_layout& l, const window_layout& w);

// Calls a block may have with no two on the same window of a slot.
inline uint64_t distinct_calls(const window_layout& w) { return uint64_t{w.slots} * w.windows; }
// The window call `call` of a block reads (the worker's rule: wire.h command::window).
inline uint32_t window_of(uint64_t call, uint32_t rotate, uint32_t first_window) {
  return first_window + static_cast<uint32_t>(call / rotate);
}
// The last call on `slot` of a block of `calls` calls rotating over `rotate` slots from slot 0,
// whose output the slot holds after it; none when the block was shorter than the slot.
std::optional<uint64_t> last_call_on(uint32_t slot, uint32_t rotate, uint64_t calls);

// A draw's inputs (a slot's input area in the layout `l`) as window `window` reads them.
std::vector<uint8_t> window_inputs(const slot_layout& l, const window_layout& w,
                                   const std::vector<uint8_t>& inputs, uint32_t window);
// One slot of the window layout holding a draw (each input's tensor, then its first slack bytes)
// with its outputs poisoned: what a problem's slots are staged as, and what the device's fill
// writes for a seed at window 0.
void stage_window_slot(const task& t, const slot_layout& l, const window_layout& w,
                       const std::vector<uint8_t>& inputs, uint8_t* slot);
// True when a slot's input buffers, slack included, still hold the draw as staged.
bool window_inputs_intact(const slot_layout& l, const window_layout& w,
                          const std::vector<uint8_t>& inputs, const uint8_t* slot);
// A slot of the window layout as a slot of `l` (what check.h reads): the inputs window `window`
// read, then the slot's outputs.
std::vector<uint8_t> standard_slot(const slot_layout& l, const window_layout& w, const uint8_t* slot,
                                   uint32_t window);

// The refill before a block: slot s of [0, slots) drawn from seed + s, unperturbed (trial_for's
// trial 0, as the timed inputs always were).
wire::command refill_command(uint32_t slots, uint64_t seed);

}  // namespace lathe::gate
