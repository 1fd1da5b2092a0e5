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
  // Device buffer of `bytes` (replacing the previous one) and a workspace.
  std::string allocate(uint64_t bytes, uint64_t workspace_bytes);
  std::string upload(const uint8_t* host, uint64_t offset, uint64_t bytes);
  std::string download(uint8_t* host, uint64_t offset, uint64_t bytes);
  // Records events around `launches`, synchronizes; the error of the stream, if any.
  template <class F>
  std::string timed(F&& launches, double& seconds) {
    std::string e = begin();
    if (!e.empty()) return e;
    launches();
    return end(seconds);
  }
  uint8_t* base() const { return base_; }
  void* workspace() const { return workspace_; }
  void* stream() const { return stream_; }

 private:
  std::string begin();
  std::string end(double& seconds);
  uint8_t* base_ = nullptr;
  void* workspace_ = nullptr;
  void* stream_ = nullptr;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace lathe::worker
