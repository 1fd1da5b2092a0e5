#include <cstdint>
#include "worker/cuda_device.h"

#include <cuda_runtime_api.h>

#include <cstring>

namespace lathe::worker {
namespace {

std::string check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace

std::string cuda_device::init() {
  if (auto e = check(cudaSetDevice(0), "cudaSetDevice"); !e.empty()) return e;
  if (auto e = check(cudaFree(nullptr), "creating the context"); !e.empty()) return e;
  cudaStream_t s = nullptr;
  if (auto e = check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"); !e.empty())
    return e;
  stream_ = s;
  cudaEvent_t a = nullptr, b = nullptr;
  if (auto e = check(cudaEventCreate(&a), "cudaEventCreate"); !e.empty()) return e;
  if (auto e = check(cudaEventCreate(&b), "cudaEventCreate"); !e.empty()) return e;
  start_ = a;
  stop_ = b;
  return {};
}

std::string cuda_device::reserve(uint64_t bytes, bool share) {
  void* p = nullptr;
  if (auto e = check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc (tensors)"); !e.empty()) return e;
  base_ = static_cast<uint8_t*>(p);
  capacity_ = bytes;
  cudaIpcMemHandle_t h{};
  if (share && cudaIpcGetMemHandle(&h, p) == cudaSuccess) {
    static_assert(sizeof h <= sizeof handle_);
    std::memcpy(handle_, &h, sizeof h);
    shared_ = true;
  } else if (share) {
    cudaGetLastError();  // no IPC here: the oracle gets outputs staged through the region
  }
  return {};
}

std::string cuda_device::allocate_workspace(uint64_t workspace_bytes) {
  if (workspace_) cudaFree(workspace_);
  workspace_ = nullptr;
  if (workspace_bytes) {
    void* p = nullptr;
    if (auto e = check(cudaMalloc(&p, workspace_bytes), "cudaMalloc (workspace)"); !e.empty()) return e;
    workspace_ = p;
  }
  return {};
}

std::string cuda_device::upload(const uint8_t* host, uint64_t offset, uint64_t bytes) {
  return check(cudaMemcpy(base_ + offset, host, bytes, cudaMemcpyHostToDevice), "upload");
}

std::string cuda_device::download(uint8_t* host, uint64_t offset, uint64_t bytes) {
  return check(cudaMemcpy(host, base_ + offset, bytes, cudaMemcpyDeviceToHost), "download");
}

std::string cuda_device::stop_event(double& seconds) { return end(seconds); }

std::string cuda_device::begin() {
  return check(cudaEventRecord(static_cast<cudaEvent_t>(start_), static_cast<cudaStream_t>(stream_)),
               "cudaEventRecord");
}

std::string cuda_device::end(double& seconds) {
  auto s = static_cast<cudaStream_t>(stream_);
  if (auto e = check(cudaEventRecord(static_cast<cudaEvent_t>(stop_), s), "cudaEventRecord"); !e.empty())
    return e;
  // The whole device, not the stream: work a kernel left on another stream (the legacy default
  // stream, say) belongs to its block, not to whichever process runs next. A kernel's fault
  // (illegal address, trap) surfaces here; it is sticky: the context is lost and the worker must
  // end (lathe treats device_error as the end of this worker).
  if (auto e = check(cudaDeviceSynchronize(), "the kernel"); !e.empty()) return e;
  if (auto e = check(cudaGetLastError(), "the kernel"); !e.empty()) return e;
  float ms = 0;
  if (auto e = check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_),
                                          static_cast<cudaEvent_t>(stop_)), "cudaEventElapsedTime");
      !e.empty())
    return e;
  seconds = ms * 1e-3;
  return {};
}

}  // namespace lathe::worker
