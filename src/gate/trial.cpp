#include <cstdint>
#include "gate/trial.h"

#include <algorithm>
#include <cstring>

#include "core/rng.h"
#include "gate/check.h"
#include "spec/problem.h"
#include "spec/task_file.h"

namespace lathe::gate {
namespace {

uint64_t align(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

DLTensor make_tensor(dtype t, const resolved_tensor& r, void* data, std::vector<int64_t>& shape) {
  DLTensor d{};
  d.data = data;
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(r.shape.size());
  d.dtype = {dl_code(t), dl_bits(t), 1};
  shape = r.shape;
  d.shape = shape.data();
  d.strides = nullptr;
  d.byte_offset = 0;
  return d;
}

}  // namespace

result<slot_layout> make_layout(const task& t, const shape_set& s) {
  slot_layout l;
  l.shapes = &s;
  uint64_t off = 0;
  auto place = [&](const tensor_spec& spec, std::vector<resolved_tensor>& dst,
                   std::vector<uint64_t>& offs) -> result<void> {
    auto r = resolve(spec, s);
    if (!r) return tl::unexpected(r.error());
    offs.push_back(off);
    if (__builtin_add_overflow(off, align(r->bytes, 256), &off))
      return fail(errc::invalid_argument, "shape set '" + s.name + "' is too large");
    dst.push_back(*r);
    return {};
  };
  for (const auto& in : t.inputs)
    if (auto r = place(in, l.inputs, l.input_offset); !r) return tl::unexpected(r.error());
  l.input_bytes = off;
  for (const auto& out : t.outputs)
    if (auto r = place(out, l.outputs, l.output_offset); !r) return tl::unexpected(r.error());
  l.output_bytes = off - l.input_bytes;
  l.slot_bytes = align(std::max<uint64_t>(off, 1), 4096);
  if (t.inputs.size() + t.outputs.size() > wire::max_tensors)
    return fail(errc::unsupported, "more than " + std::to_string(wire::max_tensors) + " tensors");
  return l;
}

wire::command setup_command(const task& t, const slot_layout& l, uint32_t slots) {
  wire::command c;
  c.kind = wire::op::setup;
  c.num_inputs = static_cast<uint32_t>(t.inputs.size());
  c.num_outputs = static_cast<uint32_t>(t.outputs.size());
  c.num_scalars = static_cast<uint32_t>(std::min<size_t>(t.scalars.size(), wire::max_scalars));
  c.num_slots = slots;
  c.slot_stride = l.slot_bytes;
  c.workspace_limit = uint64_t{1} << 32;
  size_t k = 0;
  auto put = [&](const tensor_spec& spec, const resolved_tensor& r, uint64_t offset, bool out) {
    wire::tensor_desc& d = c.tensors[k++];
    d.code = dl_code(spec.type);
    d.bits = dl_bits(spec.type);
    d.ndim = static_cast<uint8_t>(r.shape.size());
    for (size_t i = 0; i < r.shape.size() && i < wire::max_dims; ++i) d.shape[i] = r.shape[i];
    d.offset = offset;
    d.bytes = r.bytes;
    d.is_output = out;
    d.type = static_cast<uint8_t>(spec.type);
    if (!out) {
      // What the device generates from (op::fill): rng::element_params as core/rng.cpp sets it.
      const distribution& dist = spec.dist;
      d.dist_kind = static_cast<uint8_t>(dist.kind);
      switch (dist.kind) {
        case distribution_kind::uniform:
        case distribution_kind::integers: d.dist_a = dist.low, d.dist_b = dist.high; break;
        case distribution_kind::normal: d.dist_a = dist.mean, d.dist_b = dist.stddev; break;
        case distribution_kind::constant: d.dist_a = dist.value, d.dist_b = 0; break;
      }
    } else {
      const effective_tolerance tol = tolerance_for(t.compare, spec.type);
      d.rtol = tol.rtol;
      d.atol = tol.atol;
      d.nerr = tol.nerr;
    }
  };
  for (size_t i = 0; i < t.inputs.size(); ++i) put(t.inputs[i], l.inputs[i], l.input_offset[i], false);
  for (size_t i = 0; i < t.outputs.size(); ++i)
    put(t.outputs[i], l.outputs[i], l.output_offset[i], true);
  for (size_t i = 0; i < c.num_scalars; ++i) c.scalars[i] = t.scalars[i].value;
  return c;
}

trial_spec trial_for(const task& t, uint64_t seed_base, uint32_t i) {
  trial_spec s;
  s.seed = seed_base + i;
  std::vector<std::pair<double, double>> options{{1.0, 0.0}};
  for (double sc : t.perturb.scale) options.push_back({sc, 0.0});
  for (double sh : t.perturb.shift) options.push_back({1.0, sh});
  std::tie(s.scale, s.shift) = options[i % options.size()];
  return s;
}

uint32_t trials_on_set(const task& t, uint32_t seeds, uint32_t set_index) {
  const uint32_t n = std::max<uint32_t>(seeds, 3);
  const auto options = static_cast<uint32_t>(1 + t.perturb.scale.size() + t.perturb.shift.size());
  return set_index == 0 ? std::max(n, options) : n;
}

// The shared region a problem's Python worker fills: the inputs at the slot's input offsets,
// then each reference output (float64), 256-byte aligned.
struct problem_region {
  uint64_t bytes = 0;
  std::vector<uint64_t> outputs;  // offsets
};
static problem_region region_of(const slot_layout& l) {
  problem_region r;
  r.bytes = align(l.input_bytes, 256);
  for (const auto& o : l.outputs) {
    r.outputs.push_back(r.bytes);
    r.bytes += align(o.elements * sizeof(double), 256);
  }
  return r;
}
static void read_outputs(const slot_layout& l, const problem_region& r, const uint8_t* m, trial_data& d) {
  d.ref.resize(l.outputs.size());
  for (size_t i = 0; i < l.outputs.size(); ++i) {
    const auto* p = reinterpret_cast<const double*>(m + r.outputs[i]);
    d.ref[i].assign(p, p + l.outputs[i].elements);
  }
}

// A problem's trial: its Python worker writes the inputs (their own dtypes) and the reference's
// outputs into the shared region.
static result<trial_data> problem_trial(const slot_layout& l, problem_oracle& o, const trial_spec& spec) {
  trial_data d;
  d.spec = spec;
  std::lock_guard<std::mutex> g(o.lock());
  const problem_region pr = region_of(l);
  auto region = o.region(pr.bytes);
  if (!region) return tl::unexpected(region.error());
  auto reply = o.request({{"op", "trial"}, {"seed", spec.seed}, {"scale", spec.scale},
                          {"shift", spec.shift}, {"bytes", pr.bytes}, {"inputs", l.input_offset},
                          {"outputs", pr.outputs}});
  if (!reply) return fail(reply.error().code, "the problem's reference: " + reply.error().message);
  const uint8_t* m = *region;
  d.inputs.assign(m, m + l.input_bytes);
  read_outputs(l, pr, m, d);
  return d;
}

// A problem's reference of inputs lathe gives it (a timed call's): they go into the shared
// region, the Python worker computes the outputs (float64) after them.
static result<void> problem_reference(const slot_layout& l, problem_oracle& o, trial_data& d) {
  std::lock_guard<std::mutex> g(o.lock());
  const problem_region pr = region_of(l);
  auto region = o.region(pr.bytes);
  if (!region) return tl::unexpected(region.error());
  std::memcpy(*region, d.inputs.data(), l.input_bytes);
  auto reply = o.request({{"op", "reference"}, {"seed", d.spec.seed}, {"bytes", pr.bytes},
                          {"inputs", l.input_offset}, {"outputs", pr.outputs}});
  if (!reply) return fail(reply.error().code, "the problem's reference: " + reply.error().message);
  read_outputs(l, pr, *region, d);
  return {};
}

result<void> make_inputs_into(const task& t, const slot_layout& l, const reference& ref,
                              const trial_spec& spec, trial_data& d) {
  if (problem_oracle* o = ref.problem()) {  // draws outputs too
    auto p = problem_trial(l, *o, spec);
    if (!p) return tl::unexpected(p.error());
    d = std::move(*p);
    return {};
  }
  d.spec = spec;
  d.inputs.assign(l.input_bytes, 0);
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    const bool floating = is_floating(t.inputs[i].type);
    fill_tensor(t.inputs[i].type, t.inputs[i].dist, floating ? spec.scale : 1.0,
                floating ? spec.shift : 0.0, spec.seed, static_cast<uint32_t>(i),
                d.inputs.data() + l.input_offset[i], l.inputs[i].elements);
  }
  return {};
}

result<trial_data> make_inputs(const task& t, const slot_layout& l, const reference& ref,
                               const trial_spec& spec) {
  trial_data d;
  if (auto r = make_inputs_into(t, l, ref, spec, d); !r) return tl::unexpected(r.error());
  return d;
}

result<void> make_trial_into(const task& t, const slot_layout& l, const reference& ref,
                             const trial_spec& spec, trial_data& d) {
  if (auto r = make_inputs_into(t, l, ref, spec, d); !r) return r;
  if (ref.problem()) return {};  // the problem's draw brought its reference
  return compute_reference(t, l, ref, d);
}

result<trial_data> make_trial(const task& t, const slot_layout& l, const reference& ref,
                              const trial_spec& spec) {
  trial_data d;
  if (auto r = make_trial_into(t, l, ref, spec, d); !r) return tl::unexpected(r.error());
  return d;
}

result<void> compute_reference(const task& t, const slot_layout& l, const reference& ref,
                               trial_data& d) {
  if (problem_oracle* o = ref.problem()) return problem_reference(l, *o, d);
  std::vector<DLTensor> in(t.inputs.size()), out(t.outputs.size());
  std::vector<std::vector<int64_t>> shapes(t.inputs.size() + t.outputs.size());
  for (size_t i = 0; i < t.inputs.size(); ++i)
    in[i] = make_tensor(t.inputs[i].type, l.inputs[i], d.inputs.data() + l.input_offset[i], shapes[i]);
  d.ref.resize(t.outputs.size());
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    d.ref[i].assign(l.outputs[i].elements, 0.0);
    out[i] = make_tensor(dtype::f64, l.outputs[i], d.ref[i].data(), shapes[t.inputs.size() + i]);
  }
  std::vector<double> scalars;
  for (const auto& s : t.scalars) scalars.push_back(s.value);
  char msg[512] = {};
  lathe_args a{};
  a.abi_version = LATHE_ABI_VERSION;
  a.inputs = in.data();
  a.num_inputs = static_cast<int32_t>(in.size());
  a.outputs = out.data();
  a.num_outputs = static_cast<int32_t>(out.size());
  a.scalars = scalars.data();
  a.num_scalars = static_cast<int32_t>(scalars.size());
  a.error = msg;
  a.error_bytes = sizeof msg;
  return ref.compute(a);
}

void stage_inputs(const task& t, const slot_layout& l, const trial_data& d, uint8_t* slot) {
  std::memcpy(slot, d.inputs.data(), l.input_bytes);
  poison_outputs(t, l, slot);
}

void poison_outputs(const task& t, const slot_layout& l, uint8_t* slot) {
  for (size_t i = 0; i < t.outputs.size(); ++i)
    poison(t.outputs[i].type, slot + l.output_offset[i], l.outputs[i].elements);
}

bool inputs_intact(const slot_layout& l, const trial_data& d, const uint8_t* slot) {
  return std::memcmp(slot, d.inputs.data(), l.input_bytes) == 0;
}

}  // namespace lathe::gate
