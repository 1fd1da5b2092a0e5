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
//
// Rotations alone were not enough (issue 42, item 5): the pools kept their values for the whole
// series, so a value at an address never changed, and a kernel that memoized each row's result
// by the row's address (tests/integration/hostile/memo_address.cpp) got `ok` at 3.9x. Now every
// pool a block read is drawn again, outside lathe's clock, before that process's next block
// (pool_refresher): within a block calls read rotations of the pools, as on CUDA
// (fresh_windows.h), and no block reads what an earlier one read.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <optional>
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
// A call's inputs as a slot's input area, read from a region into `in` (for the reference of a
// sampled call: the caller knows the pool is intact).
void call_inputs(const arena_layout& a, const slot_layout& l, const uint8_t* region, const arena_call& c,
                 std::vector<uint8_t>& in);

// The pools of one timing process drawn again between its blocks (issue 42, item 5). A task's
// pool is redrawn from its base draw (pool_contents), new for every block and every process, by a
// random permutation (256-byte chunks of a tensor over 64 KiB, single elements of a smaller one)
// and, for fp32/fp64 inputs of a uniform or normal distribution, each element reflected about the
// distribution's centre (x -> 2c - x) or not, at random. Both keep the task's domain and
// distribution (its elements are drawn independently from one distribution symmetric about c, so
// the result is as likely as the draw) while every address, every window and every chunk holds
// other values than in any earlier block: a memo by address or by a few of a chunk's values finds
// stale entries (memo_address.cpp, memo_fingerprint.cpp). Why not a draw from new seeds: the
// counter-based RNG (fill_tensor) measured 26 ns an element uniform and 99 ns normal on the 2-core
// VM (16M floats, 2026-12-05), 0.4-1.6 s to redraw the 64 MiB a row_mean block reads, against
// 20 ms blocks; the permutation is a copy. What stays: the multiset of |x - c| of each chunk, so
// a memo of a chunk's sum of squares found by one of its values could in principle still serve a
// norm's reduction; no hostile kernel does that yet. A problem's inputs may be structured (a
// triangular matrix), so its pools are drawn again by its Python worker instead (the `redraw` the
// caller gives).
//
// What each pool holds is known only through a hash keyed with a secret of lathe's: before a
// pool is drawn again (and when a sampled call's inputs are copied, and after the series) its
// bytes are hashed again, and a difference is the kernel writing its inputs.
class pool_refresher {
 public:
  // Draws pool `pool` into its place in `region`; returns its trial_spec (a problem's draw).
  using redraw_fn = std::function<result<trial_spec>(uint32_t pool, uint8_t* region, std::mt19937_64& rng)>;
  pool_refresher(const arena_layout& a, uint64_t seed);
  // After the pools were staged (all at once, trial specs as drawn).
  void staged(const uint8_t* region, const std::vector<trial_spec>& specs);
  // The pools a block's calls read: drawn again before the next block.
  void read(const std::vector<arena_call>& calls);
  // Before a block: every pool read since its last draw checked (false: it was written) and
  // drawn again.
  result<bool> refresh(uint8_t* region, const redraw_fn& redraw);
  bool intact(const uint8_t* region, uint32_t pool) const;
  bool all_intact(const uint8_t* region) const;
  const trial_spec& spec(uint32_t pool) const { return spec_[pool]; }
  uint64_t draws() const { return draws_; }

 private:
  const arena_layout* a_;
  uint64_t key_;
  std::mt19937_64 rng_;
  std::vector<uint64_t> hash_;
  std::vector<trial_spec> spec_;
  std::vector<uint8_t> read_;
  uint64_t draws_ = 0;
  uint64_t hash_of(const uint8_t* region, uint32_t pool) const;
};
// A task's pool `pool` drawn again from `base` (pool_contents' bytes of it): permuted, and
// reflected where the distribution allows.
void permute_pool(const task& t, const arena_layout& a, const slot_layout& l,
                  const std::vector<uint8_t>& base, uint32_t pool, uint8_t* region, std::mt19937_64& rng);
// One pool's bytes (tensor, then its first slack bytes) from a draw's input area.
void write_pool(const arena_layout& a, const slot_layout& l, const std::vector<uint8_t>& inputs,
                uint32_t pool, uint8_t* region);

// A sample of `size` calls over the candidate's blocks, each block offering one of its calls at
// random (a kept call's outputs are copied at once), stratified by what a process can remember:
// one call from the blocks that were their process's first, the rest from later blocks (topped
// up from first blocks where too few later ones ran), each stratum uniform (reservoir sampling).
// Why: a kernel that remembers results by address across blocks is right in a process's first
// block and stale in its later ones (the pools are drawn again between them). On a loaded VM a
// process ran two or three blocks, so a uniform sample of four held first blocks only often
// enough that redteam's memo_address read `ok` at 3.3x; a kernel that is wrong in first blocks
// only is still checked by the one call from them.
// Besides the sample, always the last call of the process that had made the most calls: a
// kernel that turns stale only after a few calls of its process (redteam's memo_fingerprint,
// from its fourth) was right in every sampled call when its processes' later blocks held calls
// two and three only, and read `ok` at 1.67x in one full suite of several; its latest call is
// the one with the most history behind it, checked in every series.
struct call_sample {
  uint32_t block = 0;    // the candidate's block it came from, counted from 1
  uint32_t pair = 0;     // the process pair that ran it
  uint64_t ordinal = 0;  // its place among the timed calls of its process, counted from 1
  arena_call call;
  std::vector<uint8_t> outputs;  // the call's output area, copied while the worker was frozen
  std::vector<uint8_t> inputs;   // the inputs it read (a slot's input area), copied then too
  trial_spec spec;               // the draw of its pool (a problem's shapes come from it)
};
class call_reservoir {
 public:
  explicit call_reservoir(size_t size) : size_(size) {}
  // After the candidate's block of `calls` from process pair `pair`, on its region; a kept
  // call's inputs are copied from the region while its pool is still what `pools` staged
  // (false when it is not: the kernel wrote its inputs).
  bool offer(const arena_layout& a, const slot_layout& l, const std::vector<arena_call>& calls,
             uint32_t pair, const uint8_t* region, const pool_refresher& pools, std::mt19937_64& rng);
  // The calls to check, chosen from both strata as above, and the latest call as well where the
  // sample does not hold it: size + 1 at most (valid until the next offer).
  std::vector<const call_sample*> samples(std::mt19937_64& rng) const;
  uint32_t blocks() const { return blocks_; }

 private:
  struct stratum {
    uint32_t blocks = 0;
    std::vector<call_sample> kept;  // a uniform sample of up to size_ of its blocks' calls
  };
  size_t size_;
  uint32_t blocks_ = 0;
  std::vector<uint32_t> pair_blocks_;  // blocks offered per process pair
  std::vector<uint64_t> pair_calls_;   // timed calls offered per process pair
  stratum first_, later_;
  std::optional<call_sample> latest_;  // the call with the highest ordinal yet
};

}  // namespace lathe::gate
