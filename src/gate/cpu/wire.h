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
constexpr int max_tensors = 16, max_dims = 8, max_scalars = 32;
constexpr int message_bytes = 512;

enum class op : uint32_t {
  load = 1,   // dlopen the object, resolve symbols, check the ABI tag, call lathe_init
  setup = 2,  // tensor layout of one slot, scalars, slot count; queries lathe_workspace_bytes
  run = 3,    // call lathe_launch `calls` times, rotating over slots
  quit = 4,
  upload = 5,    // CUDA: copy slots [first_slot, first_slot + rotate) region -> device
  download = 6,  // CUDA: copy slots [first_slot, first_slot + rotate) device -> region
};

struct tensor_desc {
  uint8_t code = 0, bits = 0, ndim = 0, is_output = 0;
  int64_t shape[max_dims] = {};
  uint64_t offset = 0;  // from the start of the slot
  uint64_t bytes = 0;
};

struct command {
  uint32_t magic = wire::magic;
  op kind = op::quit;
  // setup
  uint32_t num_inputs = 0, num_outputs = 0, num_scalars = 0, num_slots = 1;
  uint64_t slot_stride = 0;             // bytes between slots in the region
  uint64_t workspace_limit = 0;         // bytes the worker may allocate for lathe_workspace_bytes
  tensor_desc tensors[max_tensors];     // inputs first, then outputs
  double scalars[max_scalars] = {};
  // run
  uint32_t first_slot = 0;
  uint32_t rotate = 1;                  // call i uses slot (first_slot + i) % rotate
  uint64_t calls = 0;
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
  device_error = 9,     // CUDA reported an error (sticky or not); message has its name
};

struct reply {
  uint32_t magic = wire::magic;
  status st = status::ok;
  int64_t code = 0;
  uint64_t calls_done = 0;
  uint64_t workspace_bytes = 0;
  double device_seconds = 0;  // CUDA: event time of the run's launches (advisory; lathe times
                              // the request itself)
  char message[message_bytes] = {};
};

}  // namespace lathe::wire
