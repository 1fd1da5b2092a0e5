// The device side of a CUDA worker (lathe-worker-cuda): one context, one stream, device copies
// of the region's slots. Built only into the CUDA worker (LATHE_WORKER_CUDA).
#pragma once

#include <cstdint>
#include <string>

namespace lathe::worker {

class cuda_device {
 public:
  // Creates the context. Called before the seccomp filter: opening /dev/nvidia* read-write is
  // exactly what the filter forbids afterwards.
  std::string init();
  // The device mirror of the region, `bytes` long, and, when `share`, its CUDA IPC handle (so
  // that the oracle can read it). Called before the seccomp filter and before any kernel code
  // has run: the handle is lathe's, not something a kernel could have forged. Only candidates'
  // workers share: an exported buffer can be opened by anyone who forges its handle.
  std::string reserve(uint64_t bytes, bool share);
  bool shared() const { return shared_; }
  const uint8_t* ipc_handle() const { return handle_; }
  uint64_t capacity() const { return capacity_; }
  // A workspace of `workspace_bytes` (replacing the previous one).
  std::string allocate_workspace(uint64_t workspace_bytes);
  std::string upload(const uint8_t* host, uint64_t offset, uint64_t bytes);
  std::string download(uint8_t* host, uint64_t offset, uint64_t bytes);
  // Records events around `launches`, synchronizes the device; the first error, if any.
  template <class F>
  std::string timed(F&& launches, double& seconds) {
    std::string e = begin();
    if (!e.empty()) return e;
    launches();
    return end(seconds);
  }
  // The two halves of timed(), for callers that enqueue something other than launches.
  std::string start_event() { return begin(); }
  std::string stop_event(double& seconds);
  uint8_t* base() const { return base_; }
  void* workspace() const { return workspace_; }
  void* stream() const { return stream_; }

 private:
  std::string begin();
  std::string end(double& seconds);
  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
  bool shared_ = false;
  uint8_t handle_[64] = {};
  void* workspace_ = nullptr;
  void* stream_ = nullptr;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace lathe::worker
