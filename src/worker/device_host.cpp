// The CUDA half of kernel_host: tensors on the device, timed runs (with CUDA-graph replay for
// short kernels), device trials (inputs generated here, outputs poisoned here, an oracle's fp64
// references and its comparison of a peer's outputs) and the comparability protocols.
#include <cstdint>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "worker/cuda_device.h"
#include "worker/device_ops.h"
#include "worker/kernel_host.h"
#include "worker/replies.h"

namespace lathe::worker {
namespace {

constexpr uint64_t ref_alignment = 256;

uint64_t elements_of(const wire::tensor_desc& t) {
  uint64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= static_cast<uint64_t>(t.shape[d]);
  return n;
}

std::string cuda_error(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

wire::reply device_failure(const std::string& e) {
  return answer(wire::status::device_error, 0, "%s", e.c_str());
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

wire::bench_stats stats_of(const std::vector<double>& t) {
  wire::bench_stats s;
  s.trials = static_cast<uint32_t>(t.size());
  if (t.empty()) return s;
  double sum = 0;
  for (double x : t) sum += x;
  s.mean_s = sum / static_cast<double>(t.size());
  double var = 0;
  for (double x : t) var += (x - s.mean_s) * (x - s.mean_s);
  s.std_s = std::sqrt(var / static_cast<double>(t.size()));  // population std, as numpy's np.std
  s.min_s = *std::min_element(t.begin(), t.end());
  s.max_s = *std::max_element(t.begin(), t.end());
  s.median_s = percentile(t, 0.5);
  s.p20_s = percentile(t, 0.2);
  s.p80_s = percentile(t, 0.8);
  return s;
}

}  // namespace

// Tensors move to the device: one buffer laid out like the region, so slot s of the region and
// of the device share offsets and a transfer is one copy.
wire::reply kernel_host::setup_device(uint64_t workspace_bytes) {
  const uint64_t bytes = uint64_t{slots_} * layout_.slot_stride;
  if (bytes > dev_->capacity())
    return answer(wire::status::bad_command, 0, "setup: %llu bytes of slots exceed the device mirror",
                  static_cast<unsigned long long>(bytes));
  std::string e = dev_->allocate_workspace(workspace_bytes);
  if (!e.empty()) return device_failure(e);
  const uint32_t nt = layout_.num_inputs + layout_.num_outputs;
  for (uint32_t s = 0; s < slots_; ++s) {
    for (uint32_t i = 0; i < nt; ++i) {
      DLTensor& t = tensors_[size_t{s} * nt + i];
      t.data = dev_->base() + uint64_t{s} * layout_.slot_stride + layout_.tensors[i].offset;
      t.device = DLDevice{kDLCUDA, 0};
    }
    args_[s].stream = dev_->stream();
    args_[s].workspace = dev_->workspace();
    args_[s].workspace_bytes = workspace_bytes;
  }
  workspace_size_ = workspace_bytes;
  if (graph_exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph_exec_));
  graph_exec_ = nullptr;
  if (oracle_) {
    // One block of fp64 outputs per slot, laid out like the outputs.
    if (refs_) cudaFree(refs_);
    refs_ = nullptr;
    ref_offset_.clear();
    ref_stride_ = 0;
    for (uint32_t o = 0; o < layout_.num_outputs; ++o) {
      ref_offset_.push_back(ref_stride_);
      const uint64_t b = elements_of(layout_.tensors[layout_.num_inputs + o]) * sizeof(double);
      ref_stride_ += (b + ref_alignment - 1) / ref_alignment * ref_alignment;
    }
    if (auto err = cuda_error(cudaMalloc(&refs_, std::max<uint64_t>(ref_stride_ * slots_, 1)),
                              "cudaMalloc (references)");
        !err.empty())
      return device_failure(err);
    rms_.assign(size_t{slots_} * layout_.num_outputs, 0.0);
  }
  ready_ = true;
  wire::reply r = answer(wire::status::ok, 0, "ready on the device");
  r.workspace_bytes = workspace_bytes;
  return r;
}

// Call i reads window c.window + (first_slot + i) / rotate of its slot's inputs: each input at
// the shift its slack allows (wire.h window_shift; none without slack).
void kernel_host::place_window(uint64_t slot, uint64_t window) {
  const uint32_t nt = layout_.num_inputs + layout_.num_outputs;
  uint8_t* base = dev_->base() + slot * layout_.slot_stride;
  for (uint32_t i = 0; i < layout_.num_inputs; ++i) {
    const wire::tensor_desc& d = layout_.tensors[i];
    tensors_[slot * nt + i].data = base + d.offset + wire::window_shift(d.slack, window);
  }
}

bool kernel_host::launch_calls(const wire::command& c, uint64_t& done, int& rc, std::string& what) {
  for (; done < c.calls; ++done) {
    const uint64_t slot = (uint64_t{c.first_slot} + done) % c.rotate;
    place_window(slot, uint64_t{c.window} + (uint64_t{c.first_slot} + done) / c.rotate);
    error_[0] = 0;
    if (!call_kernel([&] { rc = launch_(&args_[slot]); }, what)) return false;
    if (rc != 0) return true;
  }
  return true;
}

wire::reply kernel_host::launch_failure(int rc, const std::string& what, bool threw) {
  if (threw) return answer(wire::status::kernel_error, -1, "%s", what.c_str());
  error_[sizeof error_ - 1] = 0;  // the kernel may have filled it to the brim
  return answer(wire::status::kernel_error, rc, "%s", error_);
}

// Launches enqueue on the worker's stream; events around them, one synchronization of the whole
// device at the end. A launch that returns non-zero stops the loop; a device fault is reported
// as device_error.
wire::reply kernel_host::run_device(const wire::command& c) {
  if (oracle_) return answer(wire::status::bad_command, 0, "an oracle does not run kernels");
  if (c.graph && !graph_failed_) return run_graph(c);
  uint64_t done = 0;
  int rc = 0;
  std::string what;
  bool threw = false;
  double seconds = 0;
  std::string e = dev_->timed([&] { threw = !launch_calls(c, done, rc, what); }, seconds);
  wire::reply r;
  if (!e.empty()) r = device_failure(e);
  else if (threw || rc != 0) r = launch_failure(rc, what, threw);
  else r = answer(wire::status::ok, 0, "%s", c.graph ? "graph capture impossible: events" : "");
  r.calls_done = done;
  r.device_seconds = seconds;
  r.workspace_bytes = workspace_size_;
  return r;
}

// Short kernels: the calls of a block are captured once into a CUDA graph and the block replays
// it, so that launch overhead does not dilute the kernel's time. A kernel that cannot be captured
// (it synchronizes, say) is timed by events from then on, and the reply says so.
wire::reply kernel_host::run_graph(const wire::command& c) {
  auto stream = static_cast<cudaStream_t>(dev_->stream());
  const bool same = graph_exec_ && graph_first_ == c.first_slot && graph_rotate_ == c.rotate &&
                    graph_calls_ == c.calls && graph_window_ == c.window;
  if (!same) {
    if (graph_exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph_exec_));
    graph_exec_ = nullptr;
    uint64_t done = 0;
    int rc = 0;
    std::string what;
    bool threw = false;
    cudaError_t began = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (began == cudaSuccess) threw = !launch_calls(c, done, rc, what);
    cudaGraph_t g = nullptr;
    cudaError_t ended = began == cudaSuccess ? cudaStreamEndCapture(stream, &g) : began;
    cudaGetLastError();  // a failed capture leaves an error that is not the kernel's
    if (threw || rc != 0) {
      if (g) cudaGraphDestroy(g);
      wire::reply r = launch_failure(rc, what, threw);
      r.calls_done = done;
      return r;
    }
    cudaGraphExec_t exec = nullptr;
    size_t nodes = 0;
    if (ended == cudaSuccess && g && cudaGraphGetNodes(g, nullptr, &nodes) == cudaSuccess &&
        cudaGraphInstantiate(&exec, g, 0) == cudaSuccess) {
      graph_exec_ = exec;
      graph_nodes_ = static_cast<uint32_t>(nodes);
      graph_first_ = c.first_slot;
      graph_rotate_ = c.rotate;
      graph_calls_ = c.calls;
      graph_window_ = c.window;
    } else {
      graph_failed_ = true;
    }
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    // A capture that failed may have left the device faulted (a kernel that traps): the next
    // synchronization tells.
    if (auto e = cuda_error(cudaDeviceSynchronize(), "capturing the calls"); !e.empty())
      return device_failure(e);
    if (graph_failed_) return run_device(c);
    // The capture ran the calls once, outside the graph as well as into it: work the kernel put
    // on another stream (the legacy default one, named by its value) ran then and is in no
    // replay. Its outputs poisoned again here, only the replays can write them, and the check
    // after the timing loop finds what no replay wrote.
    for (uint64_t d = 0; d < std::min<uint64_t>(c.calls, c.rotate); ++d)
      if (auto e = poison_slot(static_cast<uint32_t>((uint64_t{c.first_slot} + d) % c.rotate));
          !e.empty())
        return device_failure(e);
  }
  double seconds = 0;
  std::string e = dev_->timed(
      [&] { cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph_exec_), stream); }, seconds);
  wire::reply r = e.empty() ? answer(wire::status::ok, 0, "%s", "") : device_failure(e);
  r.calls_done = e.empty() ? c.calls : 0;
  r.device_seconds = seconds;
  r.graph_used = 1;
  r.graph_captured = same ? 0 : 1;
  r.graph_nodes = graph_nodes_;
  r.workspace_bytes = workspace_size_;
  return r;
}

wire::reply kernel_host::device_op(const wire::command& c) {
  if (!dev_) return answer(wire::status::bad_command, 0, "this worker has no device");
  if (c.kind == wire::op::share) return share();
  if (!ready_) return answer(wire::status::bad_command, 0, "device operation before setup");
  const bool slot_ok = c.first_slot < slots_;
  switch (c.kind) {
    case wire::op::fill:
      if (c.rotate == 0 || c.first_slot >= slots_ || c.rotate > slots_ - c.first_slot)
        return answer(wire::status::bad_command, 0, "fill: slots outside 0..%u", slots_);
      return fill(c);
    case wire::op::poison:
      if (c.rotate == 0 || c.first_slot >= slots_ || c.rotate > slots_ - c.first_slot)
        return answer(wire::status::bad_command, 0, "poison: slots outside 0..%u", slots_);
      return poison(c);
    case wire::op::bench: return bench(c);
    default: break;
  }
  if (!oracle_) return answer(wire::status::bad_command, 0, "only an oracle compares");
  switch (c.kind) {
    case wire::op::reference:
      return slot_ok ? reference(c) : answer(wire::status::bad_command, 0, "reference: no such slot");
    case wire::op::attach: return attach_peer(c);
    case wire::op::compare:
      return slot_ok ? compare(c) : answer(wire::status::bad_command, 0, "compare: no such slot");
    case wire::op::fetch_ref:
      return slot_ok ? fetch_ref(c) : answer(wire::status::bad_command, 0, "fetch_ref: no such slot");
    case wire::op::stage: return stage();
    default: return answer(wire::status::bad_command, 0, "unknown device operation");
  }
}

// Slot s of [first_slot, first_slot + rotate) from seed + (s - first_slot): each input's buffer
// holds element (j + e) mod n of the draw at j, for the tensor and its slack, e being window
// c.window's shift in elements. Window 0 of a buffer then reads the draw itself, window w its
// rotation by w's shift, and an oracle filled at window w holds what a peer's window w reads.
wire::reply kernel_host::fill(const wire::command& c) {
  for (uint32_t s = c.first_slot; s < c.first_slot + c.rotate; ++s) {
    uint8_t* slot = dev_->base() + uint64_t{s} * layout_.slot_stride;
    for (uint32_t i = 0; i < layout_.num_inputs; ++i) {
      const wire::tensor_desc& t = layout_.tensors[i];
      const uint64_t size = std::max<uint64_t>(t.bits / 8, 1);
      device_ops::fill_params p;
      p.kind = t.dist_kind;
      p.a = t.dist_a;
      p.b = t.dist_b;
      p.scale = c.scale;
      p.shift = c.shift;
      p.seed = c.seed + (s - c.first_slot);
      p.tensor = i;
      p.period = elements_of(t);
      p.rotate = wire::window_shift(t.slack, c.window) / size;
      std::string e = device_ops::fill(static_cast<dtype>(t.type), p, slot + t.offset,
                                       p.period + t.slack / size, dev_->stream());
      if (!e.empty()) return device_failure(e);
    }
  }
  if (auto e = cuda_error(cudaStreamSynchronize(static_cast<cudaStream_t>(dev_->stream())),
                          "generating inputs");
      !e.empty())
    return device_failure(e);
  return answer(wire::status::ok, 0, "%s", "");
}

std::string kernel_host::poison_slot(uint32_t s) {
  uint8_t* slot = dev_->base() + uint64_t{s} * layout_.slot_stride;
  for (uint32_t o = 0; o < layout_.num_outputs; ++o) {
    const wire::tensor_desc& t = layout_.tensors[layout_.num_inputs + o];
    std::string e = device_ops::poison(static_cast<dtype>(t.type), slot + t.offset,
                                       elements_of(t), dev_->stream());
    if (!e.empty()) return e;
  }
  return {};
}

wire::reply kernel_host::poison(const wire::command& c) {
  for (uint32_t s = c.first_slot; s < c.first_slot + c.rotate; ++s)
    if (auto e = poison_slot(s); !e.empty()) return device_failure(e);
  if (auto e = cuda_error(cudaStreamSynchronize(static_cast<cudaStream_t>(dev_->stream())),
                          "poisoning outputs");
      !e.empty())
    return device_failure(e);
  return answer(wire::status::ok, 0, "%s", "");
}

// The handle taken when the mirror was reserved, before any kernel code ran.
wire::reply kernel_host::share() {
  if (!dev_->shared())
    return answer(wire::status::kernel_error, 0, "no CUDA IPC handle for the device buffer");
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  std::memcpy(r.ipc_handle, dev_->ipc_handle(), sizeof r.ipc_handle);
  return r;
}

wire::reply kernel_host::reference(const wire::command& c) {
  const uint32_t nt = layout_.num_inputs + layout_.num_outputs;
  lathe_args a = args_[c.first_slot];
  std::vector<DLTensor> outs(layout_.num_outputs);
  auto* block = static_cast<uint8_t*>(refs_) + uint64_t{c.first_slot} * ref_stride_;
  for (uint32_t o = 0; o < layout_.num_outputs; ++o) {
    outs[o] = tensors_[size_t{c.first_slot} * nt + layout_.num_inputs + o];
    outs[o].data = block + ref_offset_[o];
    outs[o].dtype = DLDataType{kDLFloat, 64, 1};
  }
  a.outputs = outs.data();
  error_[0] = 0;
  int rc = 0;
  std::string what;
  if (!call_kernel([&] { rc = reference_(&a); }, what))
    return answer(wire::status::kernel_error, -1, "the reference threw: %s", what.c_str());
  if (rc != 0) {
    error_[sizeof error_ - 1] = 0;
    return answer(wire::status::kernel_error, rc, "the reference failed: %s", error_);
  }
  if (auto e = cuda_error(cudaDeviceSynchronize(), "the reference"); !e.empty())
    return device_failure(e);
  for (uint32_t o = 0; o < layout_.num_outputs; ++o) {
    double rms = 0;
    const auto* ref = reinterpret_cast<const double*>(block + ref_offset_[o]);
    std::string e = device_ops::finite_rms(
        ref, elements_of(layout_.tensors[layout_.num_inputs + o]), rms, dev_->stream());
    if (!e.empty()) return device_failure(e);
    rms_[size_t{c.first_slot} * layout_.num_outputs + o] = rms;
  }
  return answer(wire::status::ok, 0, "%s", "");
}

wire::reply kernel_host::attach_peer(const wire::command& c) {
  if (c.peer == 0 || c.peer >= max_peers)
    return answer(wire::status::bad_command, 0, "attach: peer %u outside 1..%d", c.peer, max_peers - 1);
  if (peers_[c.peer]) cudaIpcCloseMemHandle(peers_[c.peer]);
  peers_[c.peer] = nullptr;
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, c.ipc_handle, sizeof h);
  void* p = nullptr;
  if (auto e = cuda_error(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess),
                          "cudaIpcOpenMemHandle");
      !e.empty()) {
    cudaGetLastError();
    return answer(wire::status::kernel_error, 0, "%s", e.c_str());  // not fatal: lathe stages
  }
  peers_[c.peer] = p;
  return answer(wire::status::ok, 0, "%s", "");
}

// The peer's slot has the oracle's layout (lathe set both up from one slot layout).
wire::reply kernel_host::compare(const wire::command& c) {
  const uint8_t* peer = nullptr;
  if (c.peer == 0) {
    if (!staging_) return answer(wire::status::bad_command, 0, "compare: nothing staged");
    peer = static_cast<const uint8_t*>(staging_);
  } else if (c.peer < max_peers && peers_[c.peer]) {
    peer = static_cast<const uint8_t*>(peers_[c.peer]) + uint64_t{c.peer_slot} * layout_.slot_stride;
  } else {
    return answer(wire::status::bad_command, 0, "compare: peer %u not attached", c.peer);
  }
  if (layout_.num_outputs > wire::max_compared)
    return answer(wire::status::bad_command, 0, "compare: more than %d outputs", wire::max_compared);
  const uint8_t* mine = dev_->base() + uint64_t{c.first_slot} * layout_.slot_stride;
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  for (uint32_t i = 0; i < layout_.num_inputs; ++i) {
    const wire::tensor_desc& t = layout_.tensors[i];
    uint64_t differ = 0;
    std::string e = device_ops::count_differences(
        mine + t.offset, peer + t.offset + wire::window_shift(t.slack, c.window), t.bytes, differ,
        dev_->stream());
    if (!e.empty()) return device_failure(e);
    r.input_differences += differ;
  }
  const auto* block = static_cast<const uint8_t*>(refs_) + uint64_t{c.first_slot} * ref_stride_;
  for (uint32_t o = 0; o < layout_.num_outputs; ++o) {
    const wire::tensor_desc& t = layout_.tensors[layout_.num_inputs + o];
    std::string e = device_ops::compare(
        static_cast<dtype>(t.type), peer + t.offset,
        reinterpret_cast<const double*>(block + ref_offset_[o]), elements_of(t), t.rtol, t.atol,
        rms_[size_t{c.first_slot} * layout_.num_outputs + o], r.outputs[o], dev_->stream());
    if (!e.empty()) return device_failure(e);
  }
  return r;
}

wire::reply kernel_host::fetch_ref(const wire::command& c) {
  if (ref_stride_ > size_) return answer(wire::status::bad_command, 0, "fetch_ref: region too small");
  const auto* block = static_cast<const uint8_t*>(refs_) + uint64_t{c.first_slot} * ref_stride_;
  if (auto e = cuda_error(cudaMemcpy(region_, block, ref_stride_, cudaMemcpyDeviceToHost), "fetch_ref");
      !e.empty())
    return device_failure(e);
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  r.workspace_bytes = ref_stride_;
  return r;
}

wire::reply kernel_host::stage() {
  const uint64_t bytes = layout_.slot_stride;
  if (bytes > size_) return answer(wire::status::bad_command, 0, "stage: region too small");
  if (staging_bytes_ < bytes) {
    if (staging_) cudaFree(staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    if (auto e = cuda_error(cudaMalloc(&staging_, bytes), "cudaMalloc (staging)"); !e.empty())
      return device_failure(e);
    staging_bytes_ = bytes;
  }
  if (auto e = cuda_error(cudaMemcpy(staging_, region_, bytes, cudaMemcpyHostToDevice), "stage");
      !e.empty())
    return device_failure(e);
  return answer(wire::status::ok, 0, "%s", "");
}

// Comparability mode: the protocols of other harnesses, reproduced so that numbers can be put
// side by side with theirs. Per-call times come from events in this (untrusted) process, as
// they do in those harnesses; lathe checks their sum against its own clock.
wire::reply kernel_host::bench(const wire::command& c) {
  if (oracle_) return answer(wire::status::bad_command, 0, "an oracle does not run kernels");
  auto stream = static_cast<cudaStream_t>(dev_->stream());
  wire::command one = c;
  one.first_slot = 0;
  one.rotate = 1;
  one.calls = 1;
  auto call = [&]() -> wire::reply {
    uint64_t done = 0;
    int rc = 0;
    std::string what;
    const bool threw = !launch_calls(one, done, rc, what);
    if (threw || rc != 0) return launch_failure(rc, what, threw);
    return answer(wire::status::ok, 0, "%s", "");
  };
  cudaEvent_t a = nullptr, b = nullptr;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto elapsed = [&](double& s) -> std::string {
    float ms = 0;
    if (auto e = cuda_error(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime"); !e.empty())
      return e;
    s = ms * 1e-3;
    return {};
  };
  std::vector<double> times;
  std::string err;
  void* flush = nullptr;
  const uint64_t flush_bytes = uint64_t{256} << 20;  // do_bench's cache buffer
  auto fail = [&](wire::reply r) {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (flush) cudaFree(flush);
    return r;
  };
  if (c.protocol == wire::bench_protocol::kernelbench) {
    for (uint32_t i = 0; i < c.warmup; ++i) {
      wire::reply r = call();
      if (r.st != wire::status::ok) return fail(r);
    }
    if (auto e = cuda_error(cudaDeviceSynchronize(), "warm-up"); !e.empty()) return fail(device_failure(e));
    for (uint32_t i = 0; i < c.trials; ++i) {
      cudaEventRecord(a, stream);
      wire::reply r = call();
      if (r.st != wire::status::ok) return fail(r);
      cudaEventRecord(b, stream);
      if (auto e = cuda_error(cudaDeviceSynchronize(), "the kernel"); !e.empty()) return fail(device_failure(e));
      double s = 0;
      if (auto e = elapsed(s); !e.empty()) return fail(device_failure(e));
      times.push_back(s);
    }
  } else {
    if (auto e = cuda_error(cudaMalloc(&flush, flush_bytes), "cudaMalloc (L2 flush)"); !e.empty())
      return fail(device_failure(e));
    // Estimate from five flushed calls, then size warm-up and repetitions to the budgets.
    cudaEventRecord(a, stream);
    for (int i = 0; i < 5; ++i) {
      device_ops::clear(flush, flush_bytes, stream);
      wire::reply r = call();
      if (r.st != wire::status::ok) return fail(r);
    }
    cudaEventRecord(b, stream);
    if (auto e = cuda_error(cudaDeviceSynchronize(), "the kernel"); !e.empty()) return fail(device_failure(e));
    double est = 0;
    if (auto e = elapsed(est); !e.empty()) return fail(device_failure(e));
    est = std::max(est / 5, 1e-7);
    const auto n_warmup = static_cast<uint32_t>(std::max(1.0, c.warmup_ms * 1e-3 / est));
    const auto n_repeat =
        static_cast<uint32_t>(std::min(100000.0, std::max(1.0, c.rep_ms * 1e-3 / est)));
    for (uint32_t i = 0; i < n_warmup; ++i) {
      wire::reply r = call();
      if (r.st != wire::status::ok) return fail(r);
    }
    std::vector<cudaEvent_t> starts(n_repeat), stops(n_repeat);
    for (uint32_t i = 0; i < n_repeat; ++i) {
      cudaEventCreate(&starts[i]);
      cudaEventCreate(&stops[i]);
      device_ops::clear(flush, flush_bytes, stream);
      cudaEventRecord(starts[i], stream);
      wire::reply r = call();
      if (r.st != wire::status::ok) return fail(r);
      cudaEventRecord(stops[i], stream);
    }
    std::string e = cuda_error(cudaDeviceSynchronize(), "the kernel");
    for (uint32_t i = 0; i < n_repeat; ++i) {
      float ms = 0;
      if (e.empty()) e = cuda_error(cudaEventElapsedTime(&ms, starts[i], stops[i]), "cudaEventElapsedTime");
      times.push_back(ms * 1e-3);
      cudaEventDestroy(starts[i]);
      cudaEventDestroy(stops[i]);
    }
    if (!e.empty()) return fail(device_failure(e));
  }
  wire::reply r = answer(wire::status::ok, 0, "%s", "");
  r.bench = stats_of(times);
  r.calls_done = times.size();
  return fail(r);
}

}  // namespace lathe::worker
