#include "worker/kernel_host.h"
#include "worker/replies.h"
#include "worker/confine.h"

#ifdef LATHE_WORKER_CUDA
#include "worker/cuda_device.h"
#endif

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace lathe::worker {

namespace {

constexpr uint64_t tensor_alignment = 256;  // the ABI's promise for tensors and the workspace

bool bytes_of(const wire::tensor_desc& t, uint64_t& bytes) {
  uint64_t elements = 1;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] < 0) return false;
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(t.shape[d]), &elements))
      return false;
  }
  if (__builtin_mul_overflow(elements, uint64_t{t.bits}, &elements)) return false;
  bytes = (elements + 7) / 8;
  return true;
}

}  // namespace

kernel_host::~kernel_host() {
  std::free(workspace_);
}

wire::reply kernel_host::load(const wire::command& c) {
  if (handle_) return answer(wire::status::bad_command, 0, "the kernel is already loaded");
  oracle_ = c.oracle != 0;
  // Through /proc: glibc has no dlopen by descriptor. lathe made sure the worker's user may
  // open it (gate/cpu/worker.cpp, object_for).
  if (confine_ && !dev_ && !oracle_) {
    std::string why;
    const int abi = confine_files(wire::object_fd, why);
    confined_ = abi > 0 ? "files: Landlock ABI " + std::to_string(abi)
                        : "files: not confined (" + why + ")";
  }
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", wire::object_fd);
  handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = dlerror();
    return answer(wire::status::dlopen_failed, 0, "dlopen: %s", e ? e : "unknown error");
  }
  // The tag first: an object built against another lathe_args layout must not be called at all.
  auto* tag = static_cast<const uint32_t*>(dlsym(handle_, "lathe_abi_version"));
  if (!tag)
    return answer(wire::status::no_abi_tag, 0,
                  "no lathe_abi_version symbol: include <lathe/abi.h> in the kernel");
  if (*tag != LATHE_ABI_VERSION)
    return answer(wire::status::abi_mismatch, *tag,
                  "the kernel was built for lathe ABI version %u, this worker speaks %u", *tag,
                  LATHE_ABI_VERSION);
  if (oracle_) {
    reference_ = reinterpret_cast<reference_fn>(dlsym(handle_, "lathe_reference"));
    if (!reference_)
      return answer(wire::status::no_launch, 0, "the reference exports no lathe_reference");
    return answer(wire::status::ok, 0, "reference loaded");
  }
  launch_ = reinterpret_cast<launch_fn>(dlsym(handle_, "lathe_launch"));
  if (!launch_)
    return answer(wire::status::no_launch, 0, "no lathe_launch symbol (extern \"C\" missing?)");
  workspace_bytes_ = reinterpret_cast<workspace_fn>(dlsym(handle_, "lathe_workspace_bytes"));
  init_ = reinterpret_cast<init_fn>(dlsym(handle_, "lathe_init"));
  if (init_) {
    int rc = 0;
    std::string what;
    if (!call_kernel([&] { rc = init_(); }, what))
      return answer(wire::status::init_failed, -1, "lathe_init: %s", what.c_str());
    if (rc != 0) return answer(wire::status::init_failed, rc, "lathe_init returned %d", rc);
  }
  return answer(wire::status::ok, 0, "loaded%s%s", confined_.empty() ? "" : "; ", confined_.c_str());
}

// The timing arena's pools: their pages mapped into this process before the first timed call,
// not during it (a first touch costs 4 us a page on the 2-core VM: 80 MiB of pools were 80 ms
// spread over a process's first blocks, and the A/A control read 1.4 with identical kernels).
void kernel_host::populate(const wire::command& c) {
  if (c.populate_bytes == 0) return;
  const uint64_t n = std::min(c.populate_bytes, size_) / 4096 * 4096;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
  if (n > 0) madvise(region_, n, MADV_POPULATE_WRITE);
  // And each page touched once by this process: on the 2-core VM a process's first access to a
  // page of the region cost 5-6 us even once it was mapped (no fault counted: the hypervisor's),
  // so that a fresh worker's first blocks ran 10-20x slow, calibration sized its blocks from
  // them and an A/A control against a fresh copy read 1.25. Output areas are written (each
  // page's first byte with its own value: lathe's poison stays), inputs only read.
  const uint64_t from = std::min((c.written_from + 4095) / 4096 * 4096, n);
  uint64_t sum = 0;
  for (uint64_t at = 0; at < from; at += 4096) sum += *static_cast<volatile uint8_t*>(region_ + at);
  for (uint64_t at = from; at < n; at += 4096) {
    volatile uint8_t* b = region_ + at;
    *b = *b;
  }
  touched_ = sum;
}

// Every slot's tensors and arguments, pointing into the region as the layout says.
void kernel_host::bind_slots(uint32_t nt) {
  slots_ = layout_.num_slots;
  tensors_.assign(static_cast<size_t>(slots_) * nt, DLTensor{});
  args_.assign(slots_, lathe_args{});
  for (uint32_t s = 0; s < slots_; ++s) {
    uint8_t* base = region_ + uint64_t{s} * layout_.slot_stride;
    for (uint32_t i = 0; i < nt; ++i) {
      wire::tensor_desc& d = layout_.tensors[i];
      DLTensor& t = tensors_[size_t{s} * nt + i];
      t.data = base + d.offset;
      t.device = DLDevice{kDLCPU, 0};
      t.ndim = d.ndim;
      t.dtype = DLDataType{d.code, d.bits, 1};
      t.shape = d.shape;
      t.strides = nullptr;  // contiguous row-major
      t.byte_offset = 0;
    }
    lathe_args& a = args_[s];
    a.abi_version = LATHE_ABI_VERSION;
    a.inputs = &tensors_[size_t{s} * nt];
    a.num_inputs = static_cast<int32_t>(layout_.num_inputs);
    a.outputs = &tensors_[size_t{s} * nt + layout_.num_inputs];
    a.num_outputs = static_cast<int32_t>(layout_.num_outputs);
    a.scalars = layout_.scalars;
    a.num_scalars = static_cast<int32_t>(layout_.num_scalars);
    a.stream = nullptr;
    a.error = error_;
    a.error_bytes = sizeof error_;
  }
}

wire::reply kernel_host::setup(const wire::command& c) {
  ready_ = false;
  std::free(workspace_);
  workspace_ = nullptr;
  workspace_size_ = 0;
  if (!launch_ && !reference_)
    return answer(wire::status::bad_command, 0, "setup before a successful load");
  if (c.num_inputs > wire::max_tensors || c.num_outputs > wire::max_tensors ||
      c.num_inputs + c.num_outputs > wire::max_tensors || c.num_scalars > wire::max_scalars ||
      c.num_slots == 0)
    return answer(wire::status::bad_command, 0,
                  "setup: bad counts (%u in, %u out, %u scalars, "
                  "%u slots)",
                  c.num_inputs, c.num_outputs, c.num_scalars, c.num_slots);
  const uint32_t nt = c.num_inputs + c.num_outputs;
  uint64_t slots_end = 0;  // start of the last slot
  if (__builtin_mul_overflow(uint64_t{c.num_slots - 1}, c.slot_stride, &slots_end))
    return answer(wire::status::bad_command, 0, "setup: slot stride overflows");
  for (uint32_t i = 0; i < nt; ++i) {
    const wire::tensor_desc& t = c.tensors[i];
    uint64_t need = 0, end = 0;
    if (t.ndim > wire::max_dims || !bytes_of(t, need) || t.bytes < need)
      return answer(wire::status::bad_command, 0, "setup: tensor %u has a bad shape or size", i);
    // An input's slack (decision timing on CUDA) is part of its buffer: inside the slot too.
    const uint64_t slack = i < c.num_inputs ? t.slack : 0;
    if (slack % 256 != 0 || slack > t.bytes || __builtin_add_overflow(t.offset, t.bytes, &end) ||
        __builtin_add_overflow(end, slack, &end) ||
        (c.num_slots > 1 && end > c.slot_stride) || __builtin_add_overflow(end, slots_end, &end) ||
        end > size_)
      return answer(wire::status::bad_command, 0,
                    "setup: tensor %u lies outside its slot or the region", i);
  }
  if (c.table_entries > 0) {
    uint64_t table = 0, end = 0;
    if (__builtin_mul_overflow(uint64_t{c.table_entries}, uint64_t{nt} * sizeof(uint64_t), &table) ||
        __builtin_add_overflow(c.table_offset, table, &end) || end > size_ || c.table_offset % 8 != 0)
      return answer(wire::status::bad_command, 0, "setup: the call table lies outside the region");
  }
  populate(c);
  layout_ = c;
  bind_slots(nt);
  uint64_t want = 0;
  if (workspace_bytes_) {
    std::string what;
    error_[0] = 0;
    if (!call_kernel([&] { want = workspace_bytes_(&args_[0]); }, what))
      return answer(wire::status::kernel_error, -1, "lathe_workspace_bytes: %s", what.c_str());
  }
  if (want > c.workspace_limit)
    return answer(wire::status::workspace_too_large, static_cast<int64_t>(want),
                  "the kernel asks for a %llu-byte workspace, the limit is %llu",
                  static_cast<unsigned long long>(want),
                  static_cast<unsigned long long>(c.workspace_limit));
#ifdef LATHE_WORKER_CUDA
  if (dev_) return setup_device(want);
#endif
  if (want > 0) {
    const uint64_t rounded = (want + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
    workspace_ = std::aligned_alloc(tensor_alignment, rounded);
    if (!workspace_)
      return answer(wire::status::workspace_too_large, static_cast<int64_t>(want),
                    "cannot allocate a %llu-byte workspace", static_cast<unsigned long long>(want));
    workspace_size_ = want;
  }
  for (lathe_args& a : args_) {
    a.workspace = workspace_;
    a.workspace_bytes = workspace_size_;
  }
  ready_ = true;
  wire::reply r = answer(wire::status::ok, 0, "ready");
  r.workspace_bytes = workspace_size_;
  return r;
}


wire::reply kernel_host::transfer(const wire::command& c) {
#ifdef LATHE_WORKER_CUDA
  if (!ready_ || !dev_) return answer(wire::status::bad_command, 0, "transfer before setup");
  if (c.rotate == 0 || c.first_slot >= slots_ || c.rotate > slots_ - c.first_slot)
    return answer(wire::status::bad_command, 0, "transfer: slots outside 0..%u", slots_);
  const uint64_t off = uint64_t{c.first_slot} * layout_.slot_stride;
  const uint64_t bytes = uint64_t{c.rotate} * layout_.slot_stride;
  std::string e = c.kind == wire::op::upload ? dev_->upload(region_ + off, off, bytes)
                                              : dev_->download(region_ + off, off, bytes);
  if (!e.empty()) return answer(wire::status::device_error, 0, "%s", e.c_str());
  return answer(wire::status::ok, 0, "%s", "");
#else
  return answer(wire::status::bad_command, 0, "this worker has no device (not lathe-worker-cuda)");
#endif
}

wire::reply kernel_host::run(const wire::command& c) {
  if (!ready_) return answer(wire::status::bad_command, 0, "run before a successful setup");
  if (c.rotate == 0 || c.rotate > slots_)
    return answer(wire::status::bad_command, 0, "run: rotate %u outside 1..%u slots", c.rotate,
                  slots_);
#ifdef LATHE_WORKER_CUDA
  if (dev_) return run_device(c);
#endif
  for (uint64_t i = 0; i < c.calls; ++i) {
    const uint64_t slot = (uint64_t{c.first_slot} + i) % c.rotate;
    error_[0] = 0;
    int rc = 0;
    std::string what;
    if (!call_kernel([&] { rc = launch_(&args_[slot]); }, what)) {
      wire::reply r = answer(wire::status::kernel_error, -1, "%s", what.c_str());
      r.calls_done = i;
      return r;
    }
    if (rc != 0) {
      error_[sizeof error_ - 1] = 0;  // the kernel may have filled it to the brim
      wire::reply r = answer(wire::status::kernel_error, rc, "%s", error_);
      r.calls_done = i;
      return r;
    }
  }
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  r.calls_done = c.calls;
  r.workspace_bytes = workspace_size_;
  return r;
}


wire::reply kernel_host::run_table(const wire::command& c) {
  if (!ready_) return answer(wire::status::bad_command, 0, "run before a successful setup");
  if (dev_) return answer(wire::status::bad_command, 0, "run_table: CPU workers only");
  if (c.calls > layout_.table_entries)
    return answer(wire::status::bad_command, 0, "run_table: %llu calls, the table has %u entries",
                  static_cast<unsigned long long>(c.calls), layout_.table_entries);
  const uint32_t nt = layout_.num_inputs + layout_.num_outputs;
  std::vector<DLTensor> t(tensors_.begin(), tensors_.begin() + nt);
  lathe_args a = args_[0];
  a.inputs = t.data();
  a.outputs = t.data() + layout_.num_inputs;
  const auto* table = reinterpret_cast<const uint64_t*>(region_ + layout_.table_offset);
  for (uint64_t i = 0; i < c.calls; ++i) {
    // Lathe wrote the table, but the region is the kernel's too: every offset is checked as read.
    for (uint32_t k = 0; k < nt; ++k) {
      const uint64_t off = table[i * nt + k];
      if (off % 256 != 0 || off > size_ || layout_.tensors[k].bytes > size_ - off) {
        wire::reply r = answer(wire::status::bad_command, 0,
                               "run_table: entry %llu, tensor %u outside the region",
                               static_cast<unsigned long long>(i), k);
        r.calls_done = i;
        return r;
      }
      t[k].data = region_ + off;
    }
    error_[0] = 0;
    int rc = 0;
    std::string what;
    if (!call_kernel([&] { rc = launch_(&a); }, what)) {
      wire::reply r = answer(wire::status::kernel_error, -1, "%s", what.c_str());
      r.calls_done = i;
      return r;
    }
    if (rc != 0) {
      error_[sizeof error_ - 1] = 0;
      wire::reply r = answer(wire::status::kernel_error, rc, "%s", error_);
      r.calls_done = i;
      return r;
    }
  }
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  r.calls_done = c.calls;
  return r;
}

}  // namespace lathe::worker
