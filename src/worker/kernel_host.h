// The kernel as the worker holds it: the loaded object, the DLTensors of every slot of the shared
// region, the scalars, the workspace, and the calls to lathe_launch. Each method answers one
// command of wire.h with one reply; nothing here trusts the command beyond the region's bounds.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
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

  // The object on wire::object_fd; an oracle's exports lathe_reference (trusted, fp64 outputs).
  wire::reply load(const wire::command& c);
  wire::reply setup(const wire::command& c);  // layout, scalars, workspace
  wire::reply run(const wire::command& c);    // `calls` launches rotating over slots
  wire::reply run_table(const wire::command& c);  // `calls` launches on the table's tensors
  // CUDA workers: tensors live on the device; the region is their staging copy.
  void attach(class cuda_device* dev) { dev_ = dev; }
  // CPU workers in a sandbox: the file system narrowed before the object loads (confine.h).
  void confine(bool on) { confine_ = on; }
  wire::reply transfer(const wire::command& c);  // upload / download of slots
#ifdef LATHE_WORKER_CUDA
  // Device trials and comparability timing (device_host.cpp): fill, poison, share, reference,
  // attach, compare, fetch_ref, stage, bench.
  wire::reply device_op(const wire::command& c);
#endif

 private:
  void populate(const wire::command& c);  // the arena's pages mapped and touched (setup)
  void bind_slots(uint32_t nt);           // each slot's DLTensors and lathe_args (setup)
#ifdef LATHE_WORKER_CUDA
  wire::reply setup_device(uint64_t workspace_bytes);
  wire::reply run_device(const wire::command& c);
  wire::reply run_graph(const wire::command& c);
  wire::reply fill(const wire::command& c);
  wire::reply poison(const wire::command& c);
  std::string poison_slot(uint32_t slot);  // outputs of one slot, on the stream
  wire::reply share();
  wire::reply reference(const wire::command& c);
  wire::reply attach_peer(const wire::command& c);
  wire::reply compare(const wire::command& c);
  wire::reply fetch_ref(const wire::command& c);
  wire::reply stage();
  wire::reply bench(const wire::command& c);
  // Calls lathe_launch for `calls` calls from first_slot rotating over `rotate`, each on its
  // window (no timing).
  void place_window(uint64_t slot, uint64_t window);
  bool launch_calls(const wire::command& c, uint64_t& done, int& rc, std::string& what);
  wire::reply launch_failure(int rc, const std::string& what, bool threw);
#endif
  using launch_fn = int (*)(const lathe_args*);
  using workspace_fn = size_t (*)(const lathe_args*);
  using init_fn = int (*)();
  using reference_fn = int (*)(const lathe_args*);

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
  bool confine_ = false;
  uint64_t touched_ = 0;                  // what setup's read of the pools summed (kept, not optimized out)
  std::string confined_;                  // what load reports of it

  // Oracle workers: the reference and its fp64 outputs, one block of outputs per slot.
  bool oracle_ = false;
  reference_fn reference_ = nullptr;
  void* refs_ = nullptr;                  // device: slots_ * ref_stride_ bytes
  uint64_t ref_stride_ = 0;
  std::vector<uint64_t> ref_offset_;      // per output, within a slot's block
  std::vector<double> rms_;               // per slot and output: RMS of the finite references
  void* staging_ = nullptr;               // peer 0: a slot copied through the region
  uint64_t staging_bytes_ = 0;
  static constexpr int max_peers = 16;
  void* peers_[max_peers] = {};           // opened IPC buffers of candidate workers
  // The CUDA graph of the last graph run, and what it was captured for.
  void* graph_exec_ = nullptr;
  uint32_t graph_nodes_ = 0;
  uint32_t graph_first_ = 0, graph_rotate_ = 0;
  uint64_t graph_calls_ = 0;
  uint32_t graph_window_ = 0;
  bool graph_failed_ = false;             // capture is impossible for this kernel: events only
};

}  // namespace lathe::worker
