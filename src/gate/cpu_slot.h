// CPU slots (DESIGN.md "slot"; issue 46 item 1): the cores lathe may run on, split into disjoint
// sets. An evaluation on slot k holds slot k's lock from its first check to its last timed call,
// and its workers are pinned to slot k's cores (sandbox.h child_plan::cores, set before exec)
// with as many OMP/torch threads as the slot has cores. So both sides of a paired series and its
// A/A control run on one slot, and two lathe processes on one host never run evaluations on the
// same cores at once.
//
// The lock is one flock per core ("cpu-core-<n>.lock" beside the device locks, in a folder of
// this user's alone, mode 0700: device_lock::own_directory), taken in ascending core order: a
// process that splits the machine into 2 slots and one that uses it whole (1 slot) exclude each
// other on the cores they share, and no two holders wait on each other in a cycle.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"

namespace lathe::gate {

struct cpu_slot {
  uint32_t index = 0;           // 0 .. count - 1
  uint32_t count = 1;           // slots the cores were split into
  std::vector<uint32_t> cores;  // ascending, never empty
};

// The CPUs in lathe's affinity mask, ascending (what `nproc` counts).
std::vector<uint32_t> allowed_cores();

// `cores` split into `n` disjoint slots of consecutive cores (sizes differ by at most one, the
// larger first). n == 0 or n > cores.size(): invalid_argument, saying how many cores there are.
result<std::vector<cpu_slot>> split_cores(const std::vector<uint32_t>& cores, uint32_t n);

// Held: every core of one slot locked. Moving keeps it; destroying releases it.
class slot_lock {
 public:
  // Blocks until every core of `s` is locked.
  static result<slot_lock> acquire(const cpu_slot& s);
  // Never blocks: locked, or none when another holder has one of its cores (nothing held then).
  static result<std::unique_ptr<slot_lock>> try_acquire(const cpu_slot& s);
  slot_lock() = default;
  slot_lock(slot_lock&&) noexcept;
  slot_lock& operator=(slot_lock&&) noexcept;
  slot_lock(const slot_lock&) = delete;
  slot_lock& operator=(const slot_lock&) = delete;
  ~slot_lock();
  // The lock file of one core (under device_lock::directory()).
  static std::string core_file(uint32_t core);

 private:
  static result<slot_lock> take(const cpu_slot& s, bool wait, bool& busy);
  std::vector<int> fds_;
};

// The slots of this process: an evaluation takes any free one (free here and in every other
// lathe process on the host) and gives it back when its held_slot ends.
class cpu_slot_pool {
 public:
  explicit cpu_slot_pool(std::vector<cpu_slot> slots) : slots_(std::move(slots)), taken_(slots_.size(), false) {}
  class held_slot;
  // Blocks until a slot is free; tries them in order, so with fewer evaluations than slots the
  // first slots do the work.
  result<held_slot> take();
  const std::vector<cpu_slot>& slots() const { return slots_; }

 private:
  void give_back(uint32_t index);
  std::vector<cpu_slot> slots_;
  std::vector<bool> taken_;  // by this process's evaluations (flock is per open file, not per process)
  std::mutex mu_;
};

class cpu_slot_pool::held_slot {
 public:
  held_slot(held_slot&& o) noexcept : pool_(o.pool_), slot_(o.slot_), lock_(std::move(o.lock_)) { o.pool_ = nullptr; }
  held_slot(const held_slot&) = delete;
  held_slot& operator=(const held_slot&) = delete;
  held_slot& operator=(held_slot&&) = delete;
  ~held_slot();
  const cpu_slot& slot() const { return slot_; }

 private:
  friend class cpu_slot_pool;
  held_slot(cpu_slot_pool* pool, cpu_slot s, slot_lock l) : pool_(pool), slot_(std::move(s)), lock_(std::move(l)) {}
  cpu_slot_pool* pool_;
  cpu_slot slot_;
  slot_lock lock_;
};

}  // namespace lathe::gate
