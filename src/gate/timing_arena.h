// The data of decision-mode timing on the CPU (PROTOCOL.md "Timing"; issue 22). The timed calls
// used to rotate over four slots whose inputs never changed, and only the last call of each
// slot was checked: a kernel that cached its results by input content, kept a product it had
// written before, spread its work past lathe's clock or did half of it when called back to back
// got `ok` at 1.5x-15x. Here every timed call
//   - reads inputs it has not been given before: each input lives in a pool buffer holding the
//     tensor and a copy of its first bytes after it (`slack`), and a call's input is a window of
//     it at a random 256-byte shift, a rotation of the tensor (the same values, so the same
//     distribution and domain), chosen per call and per input; pools rotate so that a block's
//     reads leave the LLC as before;
//   - writes an output area of its own (one per call of a block), so that every call's work is
//     there to be checked;
//   - may be the one checked: after each of the candidate's blocks lathe keeps a uniform sample
//     (reservoir) of calls, their outputs copied while the worker is frozen, and each sampled
//     output is checked against the fp64 reference of that call's inputs, computed afterwards.
// A call's tensors come from a table lathe writes into the region before the block (wire.h
// op::run_table); a kernel that rewrites the table only moves its outputs away from where the
// sample looks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/task.h"
#include "gate/trial.h"

namespace lathe::gate {

struct arena_layout {
  uint64_t table_offset = 0;
  uint32_t entries = 0;   // calls a block may have: one output area each
  uint32_t tensors = 0;   // per table entry: inputs then outputs
  uint32_t pools = 0;
  std::vector<uint64_t> slack;                   // per input: bytes after the tensor (multiple of 256)
  std::vector<std::vector<uint64_t>> input_at;   // [pool][input]: start of its buffer
  std::vector<uint64_t> pool_begin, pool_end;    // the pool buffers' extent, per pool
  uint64_t areas_begin = 0, area_bytes = 0;      // output areas: areas_begin + k * area_bytes
  uint64_t bytes = 0;                            // the region
};

// `pools` pools (each a copy of a slot's inputs with slack), `entries` output areas.
arena_layout make_arena(const slot_layout& l, uint32_t pools, uint32_t entries);
// The pool and area counts for a slot: enough pools that a block's reads exceed twice the LLC,
// and output areas for as many calls as `output_budget` bytes hold (both at least 1).
void size_arena(const slot_layout& l, uint64_t llc_bytes, uint64_t pool_budget,
                uint64_t output_budget, uint32_t& pools, uint32_t& entries);

// One timed call: which pool, the shift of each input's window, which output area.
struct arena_call {
  uint32_t pool = 0;
  std::vector<uint64_t> shift;
  uint32_t area = 0;
};

// The calls of one block: pools in turn from `next_pool`, windows at random, areas 0..calls-1.
std::vector<arena_call> plan_block(const arena_layout& a, uint32_t calls, uint32_t& next_pool,
                                   std::mt19937_64& rng);
void write_table(const arena_layout& a, const slot_layout& l, const std::vector<arena_call>& calls,
                 uint8_t* region);

// Each pool's inputs, from one trial's input area each (pool p from data[p % data.size()]):
// the tensor, then its first `slack` bytes again.
std::vector<std::vector<uint8_t>> pool_contents(const arena_layout& a, const slot_layout& l,
                                                const std::vector<trial_data>& data);
void stage_pools(const arena_layout& a, const std::vector<std::vector<uint8_t>>& pools,
                 uint8_t* region);
// Output areas [from, to) poisoned.
void poison_areas(const task& t, const arena_layout& a, const slot_layout& l, uint32_t from,
                  uint32_t to, uint8_t* region);
// False when the worker's pools no longer hold what lathe staged (the kernel wrote its inputs).
bool pools_intact(const arena_layout& a, const std::vector<std::vector<uint8_t>>& pools,
                  const uint8_t* region);

// A call's inputs as a slot's input area (for the reference of a sampled call).
std::vector<uint8_t> call_inputs(const arena_layout& a, const slot_layout& l,
                                 const std::vector<std::vector<uint8_t>>& pools, const arena_call& c);

// A uniform sample of `size` calls over every candidate block (reservoir sampling): each block
// offers one of its calls at random; a kept call's outputs are copied at once.
struct call_sample {
  uint32_t block = 0;  // the candidate's block it came from, counted from 1
  uint32_t pair = 0;   // the process pair that ran it
  arena_call call;
  std::vector<uint8_t> outputs;  // the call's output area, copied while the worker was frozen
};
class call_reservoir {
 public:
  explicit call_reservoir(size_t size) : size_(size) {}
  // After the candidate's block of `calls` from process pair `pair`, on its region.
  void offer(const arena_layout& a, const std::vector<arena_call>& calls, uint32_t pair,
             const uint8_t* region, std::mt19937_64& rng);
  const std::vector<call_sample>& samples() const { return kept_; }
  uint32_t blocks() const { return blocks_; }

 private:
  size_t size_;
  uint32_t blocks_ = 0;
  std::vector<call_sample> kept_;
};

}  // namespace lathe::gate
