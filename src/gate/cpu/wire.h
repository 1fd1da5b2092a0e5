// The protocol between lathe (trusted) and lathe-worker (runs one untrusted kernel).
// Fixed-size POD messages over pipes; tensors live in one shared-memory region (a memfd the
// worker inherits), so nothing is copied and the trusted side keeps the reference to itself.
//
// fds in the worker: 3 = shared region (read/write), 4 = commands (lathe -> worker),
// 5 = replies (worker -> lathe), 6 = the kernel's shared object (read-only).
#pragma once

#include <cstdint>

namespace lathe::wire {

constexpr uint32_t magic = 0x4c415448;  // "LATH"
constexpr int region_fd = 3, command_fd = 4, reply_fd = 5, object_fd = 6;
// A Python worker with an op record (gate/cpu/op_record.h): the pipe's write end. 7 and 8 are
// the spawn's error pipe and the binary until exec.
constexpr int record_fd = 9;
constexpr int max_tensors = 16, max_dims = 8, max_scalars = 32;
constexpr int message_bytes = 512;

enum class op : uint32_t {
  load = 1,   // dlopen the object, resolve symbols, check the ABI tag, call lathe_init
  setup = 2,  // tensor layout of one slot, scalars, slot count; queries lathe_workspace_bytes
  run = 3,    // call lathe_launch `calls` times, rotating over slots
  quit = 4,
  upload = 5,    // CUDA: copy slots [first_slot, first_slot + rotate) region -> device
  download = 6,  // CUDA: copy slots [first_slot, first_slot + rotate) device -> region
  // Device trials (CUDA workers; src/gate/device_trial.h): inputs generated on the device with
  // the shared counter-based RNG, outputs poisoned there, checked by a trusted oracle worker.
  fill = 7,       // inputs of slots [first_slot, first_slot + rotate), slot s from seed +
                  // (s - first_slot), scale, shift (tensor_desc dist_*), as window `window` reads
                  // them (an input with slack: the tensor, then its first slack bytes again)
  poison = 8,     // outputs of slots [first_slot, first_slot + rotate)
  share = 9,      // export the device buffer (CUDA IPC handle in the reply)
  // Oracle workers only (loaded with `oracle` = 1: the object exports lathe_reference):
  reference = 10, // fp64 reference outputs of slot first_slot into the oracle's own buffers
  attach = 11,    // open a peer's IPC handle as peer `peer` (0 = the oracle's staging buffer)
  compare = 12,   // peer `peer`'s slot `peer_slot` against slot first_slot's inputs and refs
                  // (the peer's inputs read at window `window`)
  fetch_ref = 13, // reference outputs of slot first_slot -> region (from offset 0), for the
                  // cross-check of the GPU reference against the CPU reference
  stage = 14,     // region [0, slot_stride) -> the staging buffer (peer 0), when IPC is absent
  bench = 15,     // comparability mode: per-call event timing (KernelBench / do_bench protocols)
  // Decision timing on the CPU (gate/timing_arena.h): `calls` launches, call i on the tensors at
  // the region offsets of table entry i (setup's table: num_inputs + num_outputs uint64 each).
  run_table = 16,
};

// Comparability protocols of op::bench.
enum class bench_protocol : uint32_t {
  kernelbench = 1,  // KernelBench's cuda_event: `warmup` calls, then `trials` calls each between
                    // two events with a device synchronize after each
  do_bench = 2,     // Triton's do_bench: L2 flushed (256 MB memset) before each call; warm-up and
                    // repetitions sized from an estimate to `warmup_ms` / `rep_ms`
};

struct tensor_desc {
  uint8_t code = 0, bits = 0, ndim = 0, is_output = 0;
  uint8_t type = 0;  // lathe::dtype (DLPack's code and bits do not tell bool from uint8)
  int64_t shape[max_dims] = {};
  uint64_t offset = 0;  // from the start of the slot
  uint64_t bytes = 0;
  // Inputs: the distribution their elements are drawn from (rng::element_params; op::fill).
  uint8_t dist_kind = 0;
  double dist_a = 0, dist_b = 0;
  // Outputs: the tolerances of the comparison (op::compare; gate/check.h effective_tolerance).
  double rtol = 0, atol = 0, nerr = 0;
  // Inputs in CUDA decision timing (gate/fresh_windows.h): bytes after the tensor, a multiple of
  // 256, that repeat its first bytes, so that a window at a shift reads a rotation of it.
  uint64_t slack = 0;
};

// Where window `window` of an input with `slack` bytes of slack starts in its buffer: the
// worker's calls and lathe's references agree on it (gate/fresh_windows.h).
constexpr uint64_t window_shift(uint64_t slack, uint64_t window) {
  return 256 * (window % (slack / 256 + 1));
}

struct command {
  uint32_t magic = wire::magic;
  op kind = op::quit;
  // setup
  uint32_t num_inputs = 0, num_outputs = 0, num_scalars = 0, num_slots = 1;
  uint64_t slot_stride = 0;             // bytes between slots in the region
  uint64_t workspace_limit = 0;         // bytes the worker may allocate for lathe_workspace_bytes
  uint64_t table_offset = 0;            // setup: where op::run_table's entries are in the region
  uint32_t table_entries = 0;           // setup: how many (0: no table)
  uint64_t populate_bytes = 0;          // setup: map the region's first bytes in now, untimed
  uint64_t written_from = 0;            // setup: and write to each page from here to there
  tensor_desc tensors[max_tensors];     // inputs first, then outputs
  double scalars[max_scalars] = {};
  // run
  uint32_t first_slot = 0;
  uint32_t rotate = 1;                  // call i uses slot (first_slot + i) % rotate
  uint32_t window = 0;                  // run: call i reads window window + (first_slot + i) / rotate
                                        // of its slot's inputs (fill, compare: the window)
  uint64_t calls = 0;
  uint32_t graph = 0;                   // run: 1 = capture the calls into a CUDA graph, replay it
  // load
  uint32_t oracle = 0;                  // 1: a trusted oracle (lathe_reference, no lathe_launch)
  uint32_t share = 0;                   // 1: export the device mirror to the oracle (CUDA IPC)
  // fill
  uint64_t seed = 0;
  double scale = 1.0, shift = 0.0;
  // attach / compare
  uint32_t peer = 0, peer_slot = 0;
  uint8_t ipc_handle[64] = {};
  // bench
  bench_protocol protocol = bench_protocol::kernelbench;
  uint32_t warmup = 3, trials = 100;
  double warmup_ms = 25, rep_ms = 100;
};

// What op::compare found for one output (gate/check.h verdicts, computed on the device).
struct output_stats {
  uint64_t unwritten = 0, mismatches = 0, nonfinite = 0;
  uint64_t first_unwritten = ~uint64_t{0}, first_bad = ~uint64_t{0};
  double got = 0, want = 0;            // at first_bad
  double max_abs = 0, max_rel = 0, sum_d = 0, sum_r = 0;
  uint64_t checksum = 0;               // of the output's bytes (cached-result detection)
};
constexpr int max_compared = 4;        // outputs per compare reply

struct bench_stats {
  uint32_t trials = 0;
  double mean_s = 0, std_s = 0, min_s = 0, max_s = 0, median_s = 0, p20_s = 0, p80_s = 0;
};

enum class status : int32_t {
  ok = 0,
  kernel_error = 1,     // lathe_launch returned non-zero (code in `code`)
  dlopen_failed = 2,
  no_launch = 3,        // no lathe_launch symbol
  no_abi_tag = 4,
  abi_mismatch = 5,     // tag present, other version (in `code`)
  init_failed = 6,      // lathe_init returned non-zero
  workspace_too_large = 7,
  bad_command = 8,
  device_error = 9,     // CUDA reported an error (sticky or not); message has its name.
  wrong_output = 10,    // a Python ModelNew returned outputs of another count, shape or dtype
                        // than the problem's (message says which).
  forbidden = 11,       // a Python candidate ran what its policy forbids: torch compute on a task
                        // without libraries, the reference's ops with --refuse-torch-fallback,
                        // a result in lathe's region (python/lathe_ops.py; message says which).
                        // The last status: gate/cpu/worker.cpp refuses anything beyond it
};

struct reply {
  uint32_t magic = wire::magic;
  status st = status::ok;
  int64_t code = 0;
  uint64_t calls_done = 0;
  uint64_t workspace_bytes = 0;
  double device_seconds = 0;  // CUDA: event time of the run's launches (advisory; lathe times
                              // the request itself)
  uint32_t graph_used = 0;    // run: 1 when the calls were replayed from a CUDA graph
  uint32_t graph_nodes = 0;   // nodes in the captured graph
  uint32_t graph_captured = 0;  // 1 when this request captured the graph (its host time
                                // includes capture and instantiation, which events do not see)
  uint64_t input_differences = 0;  // compare: bytes of the peer's inputs unlike the oracle's
  output_stats outputs[max_compared];
  bench_stats bench;
  uint8_t ipc_handle[64] = {};     // share
  char message[message_bytes] = {};
};

}  // namespace lathe::wire
