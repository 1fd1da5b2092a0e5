// The record of the torch operations a Python candidate ran (python/lathe_ops.py), judged by lathe.
//
// The observer lives in the candidate's interpreter, and so did the only record of what it saw:
// a kernel that ran aten::mm on the no-library gemm task and then overwrote its entries in the
// observer's log with "view" got `ok` (tests/problems/python/edits_op_log.py). Now the observer
// also writes each op's name to a pipe before the op runs (fd 9 of the worker, wire.h record_fd),
// whose only read end lathe holds; the worker's seccomp filter forbids closing that descriptor or
// duplicating another onto it (worker/seccomp.h). What the candidate can still do to the pipe is
// write to it: a well-formed record only adds an op (never helps it), and anything else is
// refused as tampering. What lathe cannot see is what never reached the observer (python/lathe_ops.py
// says what). Only compute ops are written (plumbing is never judged), and lathe reads the pipe on
// its ~10 ms watchdog ticks rather than waking on each write: bench/gate/op_record_cost.py on the
// 2-core VM, per compute op, +8 us over the mode's 14 us (+18 us with a reader woken by each
// write), plumbing ops +0.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "core/error.h"

namespace lathe::gate {

// What a task allows a Python candidate's torch to compute (python/lathe_kernel.py --torch-compute).
enum class torch_compute : uint8_t {
  allowed,   // no observer: the task allows torch (a ModelNew, a task with "torch" allowed)
  forbid,    // a task that allows no libraries: no torch compute at all, from the import on
  fallback,  // --refuse-torch-fallback: none of the compute ops the reference's Model runs
};
const char* to_string(torch_compute c);  // "allowed", "forbid", "fallback"

// The names of the ops that move or make data without computing (python/lathe_plumbing.txt, the
// list the Python side reads too): white-space separated, '#' to the end of a line a comment.
std::set<std::string, std::less<>> parse_plumbing(std::string_view text);
result<std::set<std::string, std::less<>>> read_plumbing(const std::filesystem::path& file);

struct op_policy {
  torch_compute mode = torch_compute::allowed;
  std::set<std::string, std::less<>> refused;   // fallback: the reference's compute ops
  std::set<std::string, std::less<>> plumbing;  // never compute
};

// Bytes of the record pipe fed in the order read; judged as they come.
class op_record {
 public:
  // Record framing, as python/lathe_ops.py writes it: start byte, base name, newline.
  static constexpr char record_start = '\x1e';
  static constexpr size_t name_cap = 200;

  op_record() = default;
  explicit op_record(op_policy policy) : policy_(std::move(policy)) {}

  // `judged` false for what a load runs under `fallback` (a Model's constructor may run its
  // reference's ops: the candidate's forward is what is judged), true otherwise.
  void feed(std::string_view bytes, bool judged);
  // Empty while nothing refused; else the first reason, which stays.
  const std::string& violation() const { return violation_; }
  uint64_t ops() const { return ops_; }
  bool judges_loads() const { return policy_.mode == torch_compute::forbid; }

 private:
  void judge(std::string_view name, bool judged);
  op_policy policy_;
  std::string name_;       // the record being read
  bool in_record_ = false;
  uint64_t ops_ = 0;
  std::string violation_;
};

}  // namespace lathe::gate
