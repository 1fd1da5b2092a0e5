// The gate's check stage (PROTOCOL.md "Correctness"): every shape set and seed run in the
// candidate's worker, its outputs judged against the fp64 reference, on the host or on the
// device through the oracle's link; the stop each failure means. Split from gate.cpp.
#include "gate/gate.h"
#include "gate/evaluator.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <random>

#include "core/hash.h"
#include "core/text.h"
#include "core/target.h"
#include "gate/check.h"
#include "gate/device_lock.h"
#include "gate/device_trial.h"
#include "gate/fresh_windows.h"
#include "gate/host_target.h"
#include "gate/nvml.h"
#include "gate/paired.h"
#include "spec/problem.h"
#include "gate/python_build.h"
#include "gate/python_kernel.h"
#include "gate/problem_ipc.h"
#include "gate/reference.h"
#include "gate/screen.h"
#include "spec/task_file.h"
#include "gate/timing.h"
#include "gate/trial.h"

namespace fs = std::filesystem;

namespace lathe::gate::detail {

// The stop a failed output check means (nullopt when it passed).
std::optional<stop> verdict_stop(const output_check& oc, const std::string& what) {
  std::string first = oc.rec.first_mismatches.empty() ? "" : "; first: " + oc.rec.first_mismatches[0];
  switch (oc.v) {
    case verdict::pass: return std::nullopt;
    case verdict::unwritten:
      return stop{outcome::unwritten_output,
                  std::to_string(oc.rec.mismatches) + " elements never written in " + what + first, {}};
    case verdict::nan_or_inf:
      return stop{outcome::nan_or_inf, "NaN or Inf where the reference is finite in " + what + first, {}};
    case verdict::mismatch: {
      char buf[160];
      std::snprintf(buf, sizeof buf, " (max abs err %.3g, max rel err %.3g, normalized err %.3g)",
                    oc.rec.max_abs_err, oc.rec.max_rel_err, oc.rec.norm_err);
      return stop{outcome::wrong_result,
                  std::to_string(oc.rec.mismatches) + " elements wrong in " + what + buf + first, {}};
    }
  }
  return std::nullopt;
}

std::string output_where(const task& t, size_t i, const slot_layout& l, uint64_t seed,
                         const std::string& where) {
  return "output '" + t.outputs[i].name + "', shape set '" + l.shapes->name + "', seed " +
         std::to_string(seed) + where;
}

std::optional<stop> evaluator::check_slot_outputs(const slot_layout& l, const trial_data& d,
                                                  const uint8_t* slot, const std::string& where) {
  return check_outputs(l, d, slot + l.input_bytes, where);
}

std::optional<stop> evaluator::check_outputs(const slot_layout& l, const trial_data& d,
                                             const uint8_t* outputs, const std::string& where) {
  auto at = [&](size_t i) { return outputs + (l.output_offset[i] - l.input_bytes); };
  for (size_t i = 0; i < t_.outputs.size(); ++i) {
    // topk: the indices (output 1) are checked against the trial's input, not the reference
    // (ties make the reference's indices one right answer of several).
    output_check oc =
        t_.compare.kind == comparison_kind::topk && i == 1
            ? check_topk_indices(t_.outputs[1].type, l.outputs[1].shape, at(1), t_.outputs[0].type, at(0),
                                 t_.inputs[0].type, l.inputs[0].shape, d.inputs.data() + l.input_offset[0])
            : check_output(t_.compare, t_.outputs[i].type, l.outputs[i].shape, at(i), d.ref[i].data());
    oc.rec.shape_set = l.shapes->name;
    oc.rec.seed = d.spec.seed;
    oc.rec.output = t_.outputs[i].name;
    e_.checks.push_back(oc.rec);
    if (auto s = verdict_stop(oc, output_where(t_, i, l, d.spec.seed, where))) return s;
  }
  return std::nullopt;
}

std::optional<stop> evaluator::oracle_failed(const worker_result& r, const std::string& when) {
  return stop{outcome::infra_error, "the task's GPU reference failed (" + when + "; a task problem)",
              r.end == worker_end::replied ? std::string(r.reply.message) : r.detail};
}

std::optional<stop> evaluator::share_with_oracle(worker& w, uint32_t peer) {
  if (!ipc_) return std::nullopt;
  worker_result r = w.request(share_command(), cfg_.call_timeout_s);
  if (r.end != worker_end::replied) return from_worker(r, "sharing the device buffer");
  if (r.ok()) {
    worker_result a = oracle_->attach(peer, r.reply.ipc_handle);
    if (a.end != worker_end::replied) return oracle_failed(a, "opening a kernel's buffer");
    if (a.ok()) return std::nullopt;
    e_.diagnostics += std::string("CUDA IPC unavailable (") + a.reply.message + "): outputs staged through host memory\n";
  } else {
    e_.diagnostics += std::string("CUDA IPC unavailable (") + r.reply.message + "): outputs staged through host memory\n";
  }
  ipc_ = false;
  return std::nullopt;
}

std::optional<stop> evaluator::open_link() {
  worker_result r = cand_worker_.request(share_command(), cfg_.call_timeout_s);
  if (r.end != worker_end::replied) return from_worker(r, "sharing the device buffer");
  if (!r.ok()) {
    drop_link(r.reply.message);
    return std::nullopt;
  }
  auto l = problem_link::attach(*ref_.problem(), r.reply.ipc_handle, region_.size());
  if (!l) {
    drop_link(l.error().message);
    return std::nullopt;
  }
  link_ = std::move(*l);
  e_.problem_path = tensor_path::cuda_ipc;
  return std::nullopt;
}

void evaluator::drop_link(const std::string& why) {
  link_.reset();
  e_.problem_path = tensor_path::host;
  e_.diagnostics += "CUDA IPC with the problem's worker unavailable (" + why +
                    "): the checks from here on staged through host memory\n";
}

std::optional<stop> evaluator::check_trial_ipc(const slot_layout& l, const trial_spec& spec,
                                               bool mirror,
                                               std::string& previous,
                                               uint64_t& checksum, bool& checked) {
  checked = false;
  trial_data host;
  if (auto p = link_.prepare(t_, l, 0, spec, mirror ? &host : nullptr); !p) {
    drop_link("writing a trial's inputs: " + p.error().message);
    return std::nullopt;
  }
  worker_result r = cand_worker_.request(poison_command(0, 1), cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "poisoning outputs on the device");
  r = cand_worker_.run(0, 1, 1, cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "shape set '" + l.shapes->name + "'");
  auto c = link_.compare(t_, l, 0);
  if (!c) {
    drop_link("comparing: " + c.error().message);
    return std::nullopt;
  }
  checked = true;
  const device_verdict v = judge(t_, l, *c, spec.seed);
  if (mirror) {
    // The first trial also comes back through host memory: the two checks must agree before
    // the link is trusted with the others (as a GPU reference is checked against the CPU one).
    if (auto s = download(cand_worker_, 0, 1)) return s;
    if (std::string why = host_disagreement(t_, l, host, region_.data(), v); !why.empty()) {
      drop_link("its check of the first trial disagrees with the host's: " + why);
      if (comparability_) last_host_trial_ = host;
      return judge_host_slot(l, host, region_.data(), previous, "");
    }
    previous = outputs_digest(l, region_.data());
  }
  return apply_verdict(l, v, spec.seed, "", &checksum);
}

std::optional<stop> evaluator::prepare_slot(worker& w, uint8_t* slot_mem, const slot_layout& l,
                                            uint32_t k, const trial_spec& spec,
                                            const trial_data* host) {
  if (!dev_trials_) {
    stage_inputs(t_, l, *host, slot_mem);
    return upload(w, k, 1);
  }
  worker_result r = w.request(fill_command(k, spec), cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "generating inputs on the device");
  r = w.request(poison_command(k, 1), cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "poisoning outputs on the device");
  return std::nullopt;
}

std::optional<stop> evaluator::device_verify(worker& w, const shared_region& region, uint32_t peer,
                                             const slot_layout& l, uint32_t oracle_slot, uint32_t k,
                                             uint64_t seed, const std::string& where,
                                             uint64_t* checksum) {
  worker_result r;
  if (ipc_) {
    r = oracle_->compare(oracle_slot, peer, k);
  } else {
    if (auto s = download(w, k, 1)) return s;
    r = oracle_->stage(region.data() + uint64_t{k} * l.slot_bytes, l.slot_bytes);
    if (!r.ok()) return oracle_failed(r, "staging a kernel's slot");
    r = oracle_->compare(oracle_slot, 0, 0);
  }
  if (!r.ok()) return oracle_failed(r, "comparing");
  return apply_verdict(l, judge(t_, l, r.reply, seed), seed, where, checksum);
}

std::optional<stop> evaluator::apply_verdict(const slot_layout& l, const device_verdict& v,
                                             uint64_t seed, const std::string& where,
                                             uint64_t* checksum) {
  if (v.inputs_mutated)
    return stop{outcome::input_mutated,
                "the kernel wrote into its inputs (shape set '" + l.shapes->name + "'" + where + ")", {}};
  if (checksum) {
    // Cached results: different inputs, byte-identical outputs to the previous trial.
    if (*checksum != 0 && *checksum == v.checksum)
      return stop{outcome::cached_output,
                  "the same output for different inputs (shape set '" + l.shapes->name +
                      "'): results cached across calls",
                  {}};
    *checksum = v.checksum;
  }
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    e_.checks.push_back(v.outputs[i].rec);
    if (auto s = verdict_stop(v.outputs[i], output_where(t_, i, l, seed, where))) return s;
  }
  return std::nullopt;
}

std::string evaluator::outputs_digest(const slot_layout& l, const uint8_t* slot) const {
  // A digest, not a copy: a copy of softmax's 64 MiB output cost a trial more in page faults
  // than the check itself on the 2-core VM; XXH3-128 makes two different outputs that digest
  // alike a 2^-128 event.
  hasher h;
  for (size_t i = 0; i < t_.outputs.size(); ++i)
    h.add(std::string_view(reinterpret_cast<const char*>(slot + l.output_offset[i]), l.outputs[i].bytes));
  return h.hex();
}

std::optional<stop> evaluator::check_trial(const slot_layout& l, const trial_data& d, uint8_t* slot,
                                           std::string& previous,
                                           const std::string& where) {
  stage_inputs(t_, l, d, slot);
  if (auto s = upload(cand_worker_, 0, 1)) return s;
  worker_result r = cand_worker_.run(0, 1, 1, cfg_.call_timeout_s);
  if (!r.ok()) return from_worker(r, "shape set '" + l.shapes->name + "'");
  if (auto s = download(cand_worker_, 0, 1)) return s;
  return judge_host_slot(l, d, slot, previous, where);
}

std::optional<stop> evaluator::judge_host_slot(const slot_layout& l, const trial_data& d,
                                               const uint8_t* slot,
                                               std::string& previous,
                                               const std::string& where) {
  if (!inputs_intact(l, d, slot))
    return stop{outcome::input_mutated,
                "the kernel wrote into its inputs (shape set '" + l.shapes->name + "')", {}};
  // Cached results: different inputs, byte-identical outputs to the previous trial.
  std::string now = outputs_digest(l, slot);
  if (!previous.empty() && previous == now) {
    return stop{outcome::cached_output,
                "the same output for different inputs (shape set '" + l.shapes->name +
                    "'): results cached across calls",
                {}};
  }
  previous = std::move(now);
  return check_slot_outputs(l, d, slot, where);
}

// How many slots a timed process rotates over and how many process pairs time: the timing
// shape's layout against the last-level cache and, on CUDA, the device's memory.
void evaluator::size_timing(const slot_layout& l) {
  // The last-level cache the data must not sit in: the GPU's L2 for CUDA tasks (60 MB on an
  // H200 when the target does not say), the host's LLC otherwise.
  const uint64_t llc = cuda_ ? (cfg_.tgt.plat == platform::cuda && cfg_.tgt.llc_bytes
                                    ? cfg_.tgt.llc_bytes
                                    : uint64_t{60} << 20)
                             : (cfg_.tgt.llc_bytes ? cfg_.tgt.llc_bytes : (uint64_t{32} << 20));
  // Rotate over enough slots that the working set of a block exceeds the LLC twice, so calls
  // do not run from a cache the previous call warmed; capped because each slot needs its own
  // fp64 reference (computed on the host: 4; on the device: 16).
  const uint64_t cap = dev_trials_ ? 16 : 4;
  timing_slots_ = l.slot_bytes >= llc ? 1
                                       : static_cast<uint32_t>(std::min<uint64_t>(
                                             cap, (2 * llc + l.slot_bytes - 1) / l.slot_bytes));
  timing_processes_ = std::max<uint32_t>(cfg_.policy.processes, 1);
  timing_processes_cap_ = std::max<uint32_t>(timing_processes_, 8);
  if (cuda_) {
    // Three processes per pair (and, with device trials, the oracle's copy) each hold the
    // slots on the device: stay within half of its memory (141 GB when the target does not
    // say, as on an H200).
    const double memory = cfg_.tgt.plat == platform::cuda && cfg_.tgt.memory_bytes
                              ? static_cast<double>(cfg_.tgt.memory_bytes)
                              : 141e9;
    const double slot = static_cast<double>(make_windows(l, timing_slots_).slot_bytes);
    const double per_pair = (dev_trials_ ? 5.0 : 3.0) * slot * timing_slots_;
    timing_processes_cap_ = std::clamp<uint32_t>(static_cast<uint32_t>(0.5 * memory / per_pair), 1,
                                                 timing_processes_cap_);
    timing_processes_ = std::min(timing_processes_, timing_processes_cap_);
  }
}

std::optional<stop> evaluator::check_all() {
  auto t0 = clock_type::now();
  progress("check");
  // Small shape first, so that a bad candidate costs milliseconds; then every set. A
  // comparability mode does the other harness's work: the timed shape only.
  std::vector<const shape_set*> order;
  if (comparability_) {
    order.push_back(&timing_shape(t_));
  } else {
    order.push_back(&smallest_shape(t_));
    for (const auto& s : t_.shapes)
      if (&s != order.front()) order.push_back(&s);
  }

  std::vector<slot_layout> layouts;
  uint64_t region_bytes = 0;
  for (const auto* s : order) {
    auto l = make_layout(t_, *s);
    if (!l) return stop{outcome::resource_limit, l.error().message, {}};
    region_bytes = std::max(region_bytes, l->slot_bytes);
    layouts.push_back(*l);
  }
  if (cfg_.time && !comparability_) {
    auto l = make_layout(t_, timing_shape(t_));
    size_timing(*l);
    // The oracle checks timed calls one at a time (time_cuda.cpp): one slot, staged through its
    // region where IPC is missing.
    timing_bytes_ = cuda_ ? make_windows(*l, timing_slots_).slot_bytes : 0;
  }
  auto region = shared_region::create(region_bytes);
  if (!region) return stop{outcome::resource_limit, region.error().message, {}};
  region_ = std::move(*region);

  if (dev_trials_) return check_all_device(layouts);  // records its own stages
  std::optional<stop> failed;
  auto w = start_worker(cand_, region_, failed, "kernel", problem_ipc_ && cuda_);
  if (!w) return stop{outcome::infra_error, "the kernel's worker could not start: " + w.error().message, {}};
  cand_worker_ = std::move(*w);
  if (failed) return failed;
  if (problem_ipc_ && cuda_)
    if (auto s = open_link()) return s;

  bool first = true;
  uint32_t set_index = 0;
  check_pace pace(cfg_.progress, t_, cfg_.seeds, static_cast<uint32_t>(layouts.size()));
  trial_data trial;  // every trial's, its buffers reused (trial.h)
  for (const auto& l : layouts) {
    worker_result r = cand_worker_.setup(setup_command(t_, l, 1), cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "setup of shape set '" + l.shapes->name + "'");
    std::string previous;  // the last trial's outputs_digest
    uint64_t checksum = 0;
    for (uint32_t i = 0; i < trials_on_set(t_, cfg_.seeds, set_index); ++i) {
      trial_spec spec = trial_for(t_, seed_base_ + 1000ull * set_index, i);
      last_spec_ = spec;
      bool checked = false;
      if (link_)
        if (auto s = check_trial_ipc(l, spec, first, previous, checksum, checked)) return s;
      if (!checked) {
        if (auto r = make_trial_into(t_, l, ref_, spec, trial); !r)
          return stop{outcome::crash, "lathe: " + r.error().message, {}};
        if (auto s = check_trial(l, trial, region_.data(), previous, "")) return s;
        if (comparability_) last_host_trial_ = trial;
      }
      if (first) {
        if (auto s = idle_check(cand_worker_, "first call")) return s;
        first = false;
      }
      pace.trial_done();
    }
    ++set_index;
  }
  if (auto s = mappings_check(cand_worker_, "after the checks")) return s;
  stage_done("check", t0);
  return std::nullopt;
}

std::optional<stop> evaluator::check_all_device(const std::vector<slot_layout>& layouts) {
  // The oracle and the kernel's worker start at once: each spends most of its start creating
  // a CUDA context.
  auto t0 = clock_type::now();
  uint64_t oracle_bytes = 0;
  for (const auto& l : layouts) oracle_bytes = std::max(oracle_bytes, l.slot_bytes);
  const slot_layout* small = nullptr;
  std::optional<slot_layout> small_storage;
  {
    auto l = make_layout(t_, smallest_shape(t_));
    if (!l) return stop{outcome::resource_limit, l.error().message, {}};
    small_storage = *l;
    small = &*small_storage;
    uint64_t refs = 0;
    for (const auto& o : small->outputs) refs += (o.elements * sizeof(double) + 255) / 256 * 256;
    oracle_bytes = std::max({oracle_bytes, refs, small->slot_bytes, timing_bytes_});
  }
  auto o_job = std::async(std::launch::async, [&] {
    return oracle::start(cfg_.sandbox, gpu_ref_obj_, oracle_bytes, cfg_.call_timeout_s);
  });
  std::optional<stop> failed;
  auto w = start_worker(cand_, region_, failed, "kernel", true);
  auto o = o_job.get();
  if (!o) return stop{outcome::infra_error, "the task's GPU reference could not start (a task problem)", o.error().message};
  oracle_ = std::move(*o);
  if (!w) return stop{outcome::infra_error, "the kernel's worker could not start: " + w.error().message, {}};
  cand_worker_ = std::move(*w);
  if (failed) return failed;
  stage_done("start", t0);

  // The GPU reference is trusted only as far as it agrees with the CPU reference: on the
  // smallest set, inputs bit for bit and outputs to 1e-9.
  {
    auto t1 = clock_type::now();
    auto d = make_trial(t_, *small, ref_, trial_for(t_, seed_base_ + 5'000'000, 0));
    if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
    std::string disagree = oracle_->cross_check(t_, *small, *d);
    if (!disagree.empty())
      return stop{outcome::infra_error,
                  "the task's GPU reference disagrees with its CPU reference (a task problem): " + disagree,
                  {}};
    stage_done("reference_cross_check", t1);
  }

  auto t2 = clock_type::now();
  bool first = true;
  uint32_t set_index = 0;
  check_pace pace(cfg_.progress, t_, cfg_.seeds, static_cast<uint32_t>(layouts.size()));
  for (const auto& l : layouts) {
    worker_result r = cand_worker_.setup(setup_command(t_, l, 1), cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "setup of shape set '" + l.shapes->name + "'");
    r = oracle_->setup(t_, l, 1);
    if (!r.ok()) return oracle_failed(r, "setup of shape set '" + l.shapes->name + "'");
    if (auto s = share_with_oracle(cand_worker_, 1)) return s;
    uint64_t checksum = 0;
    for (uint32_t i = 0; i < trials_on_set(t_, cfg_.seeds, set_index); ++i) {
      trial_spec spec = trial_for(t_, seed_base_ + 1000ull * set_index, i);
      r = oracle_->prepare(0, spec);
      if (!r.ok()) return oracle_failed(r, "shape set '" + l.shapes->name + "'");
      if (auto s = prepare_slot(cand_worker_, region_.data(), l, 0, spec, nullptr)) return s;
      r = cand_worker_.run(0, 1, 1, cfg_.call_timeout_s);
      if (!r.ok()) return from_worker(r, "shape set '" + l.shapes->name + "'");
      if (auto s = device_verify(cand_worker_, region_, 1, l, 0, 0, spec.seed, "", &checksum)) return s;
      if (first) {
        if (auto s = idle_check(cand_worker_, "first call")) return s;
        first = false;
      }
      last_seed_ = spec.seed;
      pace.trial_done();
    }
    ++set_index;
  }
  if (auto s = mappings_check(cand_worker_, "after the checks")) return s;
  stage_done("check", t2);
  return std::nullopt;
}

}  // namespace lathe::gate::detail
