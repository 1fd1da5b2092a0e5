#include "gate/problem_ipc.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "gate/check.h"
#include "spec/problem.h"

namespace lathe::gate {
namespace {

uint64_t align(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// The dtypes python/lathe_ipc.py compares (its SIZES): torch has no arithmetic on the unsigned
// types beyond uint8 in every version lathe meets.
bool compared_on_device(dtype t) {
  switch (t) {
    case dtype::u16:
    case dtype::u32:
    case dtype::u64: return false;
    default: return true;
  }
}

// The fields of one reply, read strictly: a missing or unreadable field is an error (and the
// gate goes back to host trials), never a default that could pass a kernel.
struct reader {
  std::string missing;
  // JSON has no NaN or Inf: the worker sends them as "nan", "inf", "-inf".
  double number(const nlohmann::json& j, const char* key) {
    if (j.contains(key)) {
      const nlohmann::json& v = j[key];
      if (v.is_number()) return v.get<double>();
      if (v.is_string() && v == "nan") return NAN;
      if (v.is_string() && v == "inf") return INFINITY;
      if (v.is_string() && v == "-inf") return -INFINITY;
    }
    missing = key;
    return NAN;
  }
  uint64_t count(const nlohmann::json& j, const char* key) {
    if (j.contains(key) && j[key].is_number_unsigned()) return j[key].get<uint64_t>();
    if (j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0)
      return static_cast<uint64_t>(j[key].get<int64_t>());
    missing = key;
    return 0;
  }
};

}  // namespace

std::string problem_ipc_misfit(const task& t) {
  if (t.problem.empty()) return "not a PyTorch problem";
  if (t.plat != platform::cuda) return "a CPU task";
  if (t.compare.kind != comparison_kind::elementwise)
    return "its comparison is not element-wise (checked on the host)";
  if (t.outputs.size() > static_cast<size_t>(wire::max_compared))
    return "more than " + std::to_string(wire::max_compared) + " outputs";
  for (const auto* list : {&t.inputs, &t.outputs})
    for (const auto& s : *list)
      if (!compared_on_device(s.type))
        return std::string(s.name) + " is " + std::string(to_string(s.type)) + ", compared on the host";
  return {};
}

std::string host_disagreement(const task& t, const slot_layout& l, const trial_data& d,
                              const uint8_t* slot, const device_verdict& v) {
  if (v.inputs_mutated == inputs_intact(l, d, slot))
    return v.inputs_mutated ? "inputs written (IPC), intact (host)" : "inputs intact (IPC), written (host)";
  if (v.outputs.size() != t.outputs.size()) return "outputs compared";
  auto close = [](double a, double b) {
    return a == b || (std::isnan(a) && std::isnan(b)) ||
           std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
  };
  static const char* names[] = {"pass", "unwritten", "nan_or_inf", "mismatch"};
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    const output_check h = check_output(t.compare, t.outputs[i].type, l.outputs[i].shape,
                                        slot + l.output_offset[i], d.ref[i].data());
    const check_record& a = v.outputs[i].rec;
    const std::string what = "output '" + t.outputs[i].name + "': ";
    if (h.v != v.outputs[i].v)
      return what + names[static_cast<int>(v.outputs[i].v)] + " (IPC), " + names[static_cast<int>(h.v)] + " (host)";
    if (h.rec.mismatches != a.mismatches)
      return what + std::to_string(a.mismatches) + " mismatches (IPC), " + std::to_string(h.rec.mismatches) + " (host)";
    if (!close(h.rec.max_abs_err, a.max_abs_err) || !close(h.rec.norm_err, a.norm_err))
      return what + "errors differ (max abs " + std::to_string(a.max_abs_err) + " vs " +
             std::to_string(h.rec.max_abs_err) + ", normalized " + std::to_string(a.norm_err) + " vs " +
             std::to_string(h.rec.norm_err) + ")";
  }
  return {};
}

problem_link::problem_link(problem_link&& o) noexcept : o_(o.o_), peer_(o.peer_) { o.o_ = nullptr; }

problem_link& problem_link::operator=(problem_link&& o) noexcept {
  if (this != &o) {
    reset();
    o_ = o.o_;
    peer_ = o.peer_;
    o.o_ = nullptr;
  }
  return *this;
}

result<problem_link> problem_link::attach(problem_oracle& o, const uint8_t (&handle)[64],
                                          uint64_t bytes) {
  static const char hex[] = "0123456789abcdef";
  std::string h;
  for (uint8_t b : handle) h += hex[b >> 4], h += hex[b & 15];
  std::lock_guard<std::mutex> g(o.lock());
  auto r = o.request({{"op", "attach"}, {"handle", h}, {"bytes", bytes}}, 120);
  if (!r) return tl::unexpected(r.error());
  const int64_t peer = r->value("peer", int64_t{0});
  if (peer <= 0) return fail(errc::internal, "the problem's worker named no peer");
  problem_link l;
  l.o_ = &o;
  l.peer_ = peer;
  return l;
}

void problem_link::reset() {
  if (!o_) return;
  std::lock_guard<std::mutex> g(o_->lock());
  // A failure here leaves a mapping in the problem's worker; it ends with lathe.
  (void)o_->request({{"op", "detach"}, {"peer", peer_}}, 60);
  o_ = nullptr;
}

result<void> problem_link::prepare(const task& t, const slot_layout& l, uint32_t slot,
                                   const trial_spec& spec, trial_data* mirror) {
  if (!o_) return fail(errc::internal, "no CUDA IPC link");
  nlohmann::json req = {{"op", "device_trial"}, {"peer", peer_}, {"base", uint64_t{slot} * l.slot_bytes},
                        {"seed", spec.seed}, {"scale", spec.scale}, {"shift", spec.shift},
                        {"inputs", l.input_offset}, {"num_outputs", t.outputs.size()}};
  // The mirror: inputs at their offsets, then each output's float64 reference (as make_trial
  // lays out a problem's trial in the shared region).
  std::vector<uint64_t> outs;
  uint64_t end = align(l.input_bytes, 256);
  for (const auto& r : l.outputs) {
    outs.push_back(end);
    end += align(r.elements * sizeof(double), 256);
  }
  std::lock_guard<std::mutex> g(o_->lock());
  uint8_t* m = nullptr;
  if (mirror) {
    auto region = o_->region(end);
    if (!region) return tl::unexpected(region.error());
    m = *region;
    req["mirror"] = {{"bytes", end}, {"outputs", outs}};
  }
  auto reply = o_->request(req);
  if (!reply) return tl::unexpected(reply.error());
  if (mirror) {
    mirror->spec = spec;
    mirror->inputs.assign(m, m + l.input_bytes);
    mirror->ref.resize(l.outputs.size());
    for (size_t i = 0; i < l.outputs.size(); ++i) {
      const auto* p = reinterpret_cast<const double*>(m + outs[i]);
      mirror->ref[i].assign(p, p + l.outputs[i].elements);
    }
  }
  return {};
}

result<wire::reply> problem_link::compare(const task& t, const slot_layout& l, uint32_t slot) {
  if (!o_) return fail(errc::internal, "no CUDA IPC link");
  if (t.outputs.size() > static_cast<size_t>(wire::max_compared))
    return fail(errc::unsupported, "more outputs than a compare carries");
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t i = 0; i < t.outputs.size(); ++i) {
    const effective_tolerance tol = tolerance_for(t.compare, t.outputs[i].type);
    outputs.push_back({{"offset", l.output_offset[i]}, {"dtype", std::string(to_string(t.outputs[i].type))},
                       {"elements", l.outputs[i].elements}, {"rtol", tol.rtol}, {"atol", tol.atol}});
  }
  std::lock_guard<std::mutex> g(o_->lock());
  auto reply = o_->request({{"op", "compare"}, {"peer", peer_}, {"base", uint64_t{slot} * l.slot_bytes},
                            {"outputs", outputs}});
  if (!reply) return tl::unexpected(reply.error());
  const nlohmann::json& got = reply->value("outputs", nlohmann::json::array());
  if (!got.is_array() || got.size() != t.outputs.size())
    return fail(errc::parse_error, "the problem's worker compared " + std::to_string(got.size()) +
                                       " outputs of " + std::to_string(t.outputs.size()));
  wire::reply r;
  r.st = wire::status::ok;
  reader in;
  r.input_differences = in.count(*reply, "input_differences");
  for (size_t i = 0; i < got.size(); ++i) {
    const nlohmann::json& s = got[i];
    wire::output_stats& st = r.outputs[i];
    st.unwritten = in.count(s, "unwritten");
    st.mismatches = in.count(s, "mismatches");
    st.nonfinite = in.count(s, "nonfinite");
    st.first_unwritten = in.count(s, "first_unwritten");
    st.first_bad = in.count(s, "first_bad");
    st.got = in.number(s, "got");
    st.want = in.number(s, "want");
    st.max_abs = in.number(s, "max_abs");
    st.max_rel = in.number(s, "max_rel");
    st.sum_d = in.number(s, "sum_d");
    st.sum_r = in.number(s, "sum_r");
    st.checksum = in.count(s, "checksum");
  }
  if (!in.missing.empty())
    return fail(errc::parse_error, "the problem worker's comparison lacks '" + in.missing + "'");
  return r;
}

}  // namespace lathe::gate
