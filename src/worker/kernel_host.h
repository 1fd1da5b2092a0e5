// The kernel as the worker holds it: the loaded object, the DLTensors of every slot of the shared
// region, the scalars, the workspace, and the calls to lathe_launch. Each method answers one
// command of wire.h with one reply; nothing here trusts the command beyond the region's bounds.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gate/cpu/wire.h"
#include "lathe/abi.h"

namespace lathe::worker {

class cuda_device;

class kernel_host {
 public:
  kernel_host(uint8_t* region, uint64_t region_bytes) : region_(region), size_(region_bytes) {}
  kernel_host(const kernel_host&) = delete;
  kernel_host& operator=(const kernel_host&) = delete;
  ~kernel_host();

  wire::reply load();                         // the object on wire::object_fd
  wire::reply setup(const wire::command& c);  // layout, scalars, workspace
  wire::reply run(const wire::command& c);    // `calls` launches rotating over slots
  // CUDA workers: tensors live on the device; the region is their staging copy.
  void attach(class cuda_device* dev) { dev_ = dev; }
  wire::reply transfer(const wire::command& c);  // upload / download of slots

 private:
#ifdef LATHE_WORKER_CUDA
  wire::reply setup_device(uint64_t workspace_bytes);
  wire::reply run_device(const wire::command& c);
#endif
  using launch_fn = int (*)(const lathe_args*);
  using workspace_fn = size_t (*)(const lathe_args*);
  using init_fn = int (*)();

  uint8_t* region_;
  uint64_t size_;
  void* handle_ = nullptr;  // never dlclosed: the kernel's threads may still run its code
  launch_fn launch_ = nullptr;
  workspace_fn workspace_bytes_ = nullptr;
  init_fn init_ = nullptr;

  bool ready_ = false;  // setup succeeded
  uint32_t slots_ = 0;
  wire::command layout_;           // the setup command (owns the shapes)
  std::vector<DLTensor> tensors_;  // slot-major: inputs then outputs of each slot
  std::vector<lathe_args> args_;   // one per slot
  void* workspace_ = nullptr;
  uint64_t workspace_size_ = 0;
  char error_[wire::message_bytes] = {};  // the kernel's message buffer (lathe_args.error)
  cuda_device* dev_ = nullptr;            // null in the CPU worker
};

}  // namespace lathe::worker
