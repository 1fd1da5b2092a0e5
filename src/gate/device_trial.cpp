#include <cstdint>
#include "gate/device_trial.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "core/rng.h"

namespace lathe::gate {

wire::command fill_command(uint32_t slot, const trial_spec& s) {
  wire::command c;
  c.kind = wire::op::fill;
  c.first_slot = slot;
  c.seed = s.seed;
  c.scale = s.scale;
  c.shift = s.shift;
  return c;
}

wire::command poison_command(uint32_t first, uint32_t count) {
  wire::command c;
  c.kind = wire::op::poison;
  c.first_slot = first;
  c.rotate = count;
  return c;
}

wire::command share_command() {
  wire::command c;
  c.kind = wire::op::share;
  return c;
}

device_verdict judge(const task& t, const slot_layout& l, const wire::reply& r, uint64_t seed) {
  device_verdict v;
  v.inputs_mutated = r.input_differences != 0;
  for (size_t o = 0; o < t.outputs.size() && o < wire::max_compared; ++o) {
    const wire::output_stats& st = r.outputs[o];
    const std::vector<int64_t>& shape = l.outputs[o].shape;
    v.checksum = v.checksum * 0x100000001b3ull ^ st.checksum;
    output_check oc;
    oc.rec.shape_set = l.shapes->name;
    oc.rec.seed = seed;
    oc.rec.output = t.outputs[o].name;
    // The order of verdicts of check_output: unwritten first, then NaN/Inf, then tolerances.
    if (st.unwritten > 0) {
      oc.v = verdict::unwritten;
      oc.rec.mismatches = st.unwritten;
      oc.rec.first_mismatches.push_back(index_text(st.first_unwritten, shape) + ": never written");
      v.outputs.push_back(std::move(oc));
      continue;
    }
    const effective_tolerance tol = tolerance_for(t.compare, t.outputs[o].type);
    oc.rec.max_abs_err = st.max_abs;
    oc.rec.max_rel_err = st.max_rel;
    oc.rec.mismatches = st.mismatches;
    oc.rec.norm_err = st.sum_r > 0 ? std::sqrt(st.sum_d / st.sum_r) : (st.sum_d > 0 ? INFINITY : 0.0);
    if (st.sum_r == 0 && st.mismatches == 0) oc.rec.norm_err = 0;
    if (st.mismatches > 0)
      oc.rec.first_mismatches.push_back(mismatch_text(st.first_bad, shape, st.got, st.want));
    if (st.nonfinite > 0) oc.v = verdict::nan_or_inf;
    else if (st.mismatches > 0 || oc.rec.norm_err > tol.nerr) oc.v = verdict::mismatch;
    oc.rec.passed = oc.v == verdict::pass;
    v.outputs.push_back(std::move(oc));
  }
  return v;
}

result<oracle> oracle::start(const sandbox_options& opt, const build_output& reference,
                             uint64_t region_bytes, double timeout_s) {
  oracle o;
  o.timeout_s_ = timeout_s;
  auto region = shared_region::create(region_bytes);
  if (!region) return tl::unexpected(region.error());
  o.region_ = std::move(*region);
  const int fd = open(reference.object.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errc::io_error, "cannot open " + reference.object.string());
  sandbox_options so = opt;
  so.worker_exe = opt.worker_exe.parent_path() / "lathe-worker-cuda";
  so.address_space_bytes = 0;  // CUDA reserves a huge virtual address space (PROTOCOL.md)
  so.seccomp = false;          // trusted code; it opens the kernels' IPC handles
  so.open_files = cuda_open_files;
  so.own_namespaces = false;   // the kernels' IPC handles are opened here (worker.h)
  auto w = worker::spawn(so, o.region_, fd);
  close(fd);
  if (!w) return tl::unexpected(w.error());
  o.w_ = std::move(*w);
  wire::command c;
  c.kind = wire::op::load;
  c.oracle = 1;
  worker_result r = o.w_.request(c, timeout_s);
  if (!r.ok())
    return fail(errc::internal, "the GPU reference did not load: " +
                                    (r.end == worker_end::replied ? std::string(r.reply.message) : r.detail));
  return o;
}

worker_result oracle::setup(const task& t, const slot_layout& l, uint32_t slots) {
  return w_.setup(setup_command(t, l, slots), timeout_s_);
}

worker_result oracle::setup(const wire::command& setup_cmd) { return w_.setup(setup_cmd, timeout_s_); }

worker_result oracle::prepare(uint32_t slot, const trial_spec& s, uint32_t window) {
  wire::command fill = fill_command(slot, s);
  fill.window = window;
  worker_result r = w_.request(fill, timeout_s_);
  if (!r.ok()) return r;
  wire::command c;
  c.kind = wire::op::reference;
  c.first_slot = slot;
  return w_.request(c, timeout_s_);
}

worker_result oracle::attach(uint32_t peer, const uint8_t (&handle)[64]) {
  wire::command c;
  c.kind = wire::op::attach;
  c.peer = peer;
  std::memcpy(c.ipc_handle, handle, sizeof handle);
  return w_.request(c, timeout_s_);
}

worker_result oracle::compare(uint32_t slot, uint32_t peer, uint32_t peer_slot, uint32_t window) {
  wire::command c;
  c.kind = wire::op::compare;
  c.first_slot = slot;
  c.peer = peer;
  c.peer_slot = peer_slot;
  c.window = window;
  return w_.request(c, timeout_s_);
}

worker_result oracle::stage(const uint8_t* slot, uint64_t bytes) {
  if (bytes > region_.size()) {
    worker_result r;
    r.end = worker_end::protocol;
    r.detail = "a slot larger than the oracle's region";
    return r;
  }
  std::memcpy(region_.data(), slot, bytes);
  wire::command c;
  c.kind = wire::op::stage;
  return w_.request(c, timeout_s_);
}

std::string oracle::cross_check(const task& t, const slot_layout& l, const trial_data& host) {
  auto what = [](const worker_result& r) {
    return r.end == worker_end::replied ? std::string(r.reply.message) : r.detail;
  };
  if (auto r = setup(t, l, 1); !r.ok()) return "setup: " + what(r);
  if (auto r = prepare(0, host.spec); !r.ok()) return "the GPU reference failed: " + what(r);
  if (auto r = w_.transfer(wire::op::download, 0, 1, timeout_s_); !r.ok()) return "download: " + what(r);
  if (std::memcmp(region_.data(), host.inputs.data(), l.input_bytes) != 0) {
    for (size_t i = 0; i < l.inputs.size(); ++i)
      if (std::memcmp(region_.data() + l.input_offset[i], host.inputs.data() + l.input_offset[i],
                      l.inputs[i].bytes) != 0)
        return "input '" + t.inputs[i].name +
               "' generated on the GPU differs from the host's (the shared RNG disagrees)";
  }
  wire::command c;
  c.kind = wire::op::fetch_ref;
  worker_result r = w_.request(c, timeout_s_);
  if (!r.ok()) return "fetch_ref: " + what(r);
  uint64_t offset = 0;
  for (size_t o = 0; o < t.outputs.size(); ++o) {
    const uint64_t n = l.outputs[o].elements;
    const auto* gpu = reinterpret_cast<const double*>(region_.data() + offset);
    const std::vector<double>& cpu = host.ref[o];
    double rms = 0;
    for (double v : cpu)
      if (std::isfinite(v)) rms += v * v;
    rms = std::sqrt(rms / static_cast<double>(std::max<uint64_t>(n, 1)));
    for (uint64_t i = 0; i < n; ++i) {
      const double g = gpu[i], w = cpu[i];
      const bool same_special = (std::isnan(g) && std::isnan(w)) || (!std::isfinite(w) && g == w);
      if (same_special) continue;
      if (!std::isfinite(g) || !std::isfinite(w) ||
          std::fabs(g - w) > 1e-9 * (std::fabs(w) + 1e-3 * rms))
        return "output '" + t.outputs[o].name + "' " +
               mismatch_text(i, l.outputs[o].shape, g, w) + " (GPU reference vs CPU reference)";
    }
    offset += (n * sizeof(double) + 255) / 256 * 256;
  }
  return {};
}

}  // namespace lathe::gate
