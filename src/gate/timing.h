// Paired timing of two workers (PROTOCOL.md "Timing", decision mode): blocks of calls alternate
// in randomized order, each block timed by lathe around the request (a kernel cannot patch a
// clock it does not run in), until the log ratio's standard error falls below the target or
// the time runs out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "core/evaluation.h"
#include "gate/cpu/worker.h"
#include "gate/machine_load.h"

namespace lathe::gate {

struct timed_worker {
  worker* w = nullptr;
  std::string label;
  uint32_t rotate = 1;   // slots to rotate over
  uint64_t calls = 1;    // calls per block (calibrated)
  double per_call = 0;   // seconds per call seen by the calibration
  bool cuda = false;     // a CUDA worker: its reply carries the event time of the block
  bool graph = false;    // replay the block from a CUDA graph (short kernels)
  std::optional<timing_method> method;  // how its last block was timed
  // The cross-check of lathe's clock against the worker's events (run_paired): blocks seen, and
  // blocks whose lathe-side time exceeded their event time by far, with the worst of them.
  uint32_t blocks = 0, outside_blocks = 0;
  double worst_host = 0, worst_device = 0;
  // CPU decision timing (timing_arena.h): every call on tensors of its own from a table. Before
  // each block `before_block` writes the table for up to `calls` calls and says how many it
  // wrote (at most max_calls, the output areas); after each, `after_block` may keep a sample.
  bool table = false;
  uint64_t max_calls = 0;  // 0: no cap
  std::function<uint64_t(uint64_t calls)> before_block;
  std::function<void()> after_block;
  // CUDA decision timing (fresh_windows.h): before each block `refill` draws the worker's slots
  // again, a request of its own (outside the block's time; its failure is the block's). Call i of
  // a block reads window `window` + i / rotate of its slot; with `advance_windows` (inputs that
  // are not drawn again) the next block's windows follow this one's, unless it replays a graph,
  // whose windows were fixed when it was captured. What the last block ran, for the checks after
  // the series: its calls and its first window.
  std::function<worker_result()> refill;
  uint32_t window = 0;
  bool advance_windows = false;
  uint64_t last_calls = 0;
  uint32_t last_window = 0;
  // Counts the machine's CPU time around each of this worker's requests (machine_load.h): the
  // baseline's blocks, for the slowed-baseline check. Not the caller's table writing or refill.
  load_meter* meter = nullptr;
};

// CUDA kernels shorter than this per call are timed by CUDA-graph replay: launch overhead
// (2-5 us a launch) would otherwise be part of their time.
constexpr double graph_below_seconds = 100e-6;

// The watchdog of one block: the call watchdog plus ten times the block's expected length, so
// that a slow kernel (a naive gemm takes 0.4 s a call) survives a loaded machine.
inline double block_timeout(const timed_worker& tw, double call_timeout_s) {
  return call_timeout_s + 10.0 * static_cast<double>(tw.calls) * tw.per_call;
}

struct series_result {
  paired_series series;
  bool ok = true;
  worker_result failure;  // when !ok: the request that failed
  bool failed_a = true;   // which side failed
  // A worker whose blocks' lathe-side times exceed their event times of the timed stream by far,
  // block after block: work ran outside that stream (a side stream, the legacy default stream)
  // and was hidden from the events. Empty when the clocks agreed (see run_paired for the rule).
  std::string outside_stream;
};

// One block: `calls` calls rotating over the worker's slots, as graph replay when tw.graph.
worker_result run_block(timed_worker& tw, double timeout_s);

// One process brought to its steady speed, and its seconds per call then (also left in
// tw.per_call). Blocks grow eightfold until one takes a measurable time (1/8 of
// `block_seconds`), then run at about `block_seconds` until two in a row agree within
// settle_tolerance, or, past `cap_seconds`, after the next block; the faster of the last two
// counts. A fresh process is slower than a warm one: a Python worker's first calls (torch's
// caches, the allocator, oneDNN's primitives) ran ~10x its steady time on the 2-core VM, and a
// side calibrated on them ran 16 calls a block instead of 250, each block mostly the request's
// own cost (bench/results/python-timing-2026-12-06.md).
constexpr double settle_tolerance = 0.10;
// What settle decides after each block, apart from running it: the next block's calls, and
// when the process has settled, its seconds per call.
struct settling {
  double block_seconds = 0.02, cap_seconds = 0.5;
  uint64_t cap_calls = uint64_t{1} << 24;  // the table's entries
  uint32_t rotate = 1;
  uint64_t calls = 1;   // the next block's
  double last = 0;      // seconds per call of the last measurable block
  double per_call = 0;  // when settled
  // The block of `calls` calls took `seconds`, `spent` seconds after the first began: true when
  // the process has settled (per_call set).
  bool after_block(double seconds, double spent);
};
result<double> settle(timed_worker& tw, double block_seconds, double cap_seconds, double timeout_s,
                      worker_result& failure);

// Calls per block so that one block lasts about `block_seconds` at `per_call` seconds a call (at
// least `rotate`, at most `cap`: a table's entries).
uint64_t block_calls(double per_call, double block_seconds, uint32_t rotate, uint64_t cap);

// `a` and `b` hold one worker per process (same count); round r runs pair r % size, in random
// order. The interval comes from estimate_ratio_grouped (paired.h).
series_result run_paired(std::vector<timed_worker>& a, std::vector<timed_worker>& b,
                         const timing_policy& p, std::mt19937_64& rng, double timeout_s);

}  // namespace lathe::gate
