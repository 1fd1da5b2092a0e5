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

namespace lathe::gate {
namespace detail {




// Maps how a worker request ended onto the outcome enum, with a message a user can act on.
stop from_worker(const worker_result& r, const std::string& when) {
  const std::string at = " (" + when + ")";
  switch (r.end) {
    case worker_end::timeout: return {outcome::timeout, "timed out" + at + ": " + r.detail, {}};
    case worker_end::crashed: return {outcome::crash, "crashed" + at + ": " + r.detail, {}};
    case worker_end::exited:
      return {outcome::crash, "the worker exited with code " + std::to_string(r.exit_code) + at +
                                  ": a kernel must return, not exit",
              {}};
    case worker_end::forbidden:
      return {outcome::forbidden, "made a forbidden system call" + at + ": " + r.detail, {}};
    case worker_end::memory_limit:
      return {outcome::resource_limit, "exceeded the memory limit" + at + ": " + r.detail, {}};
    case worker_end::protocol: return {outcome::crash, "broke the worker protocol" + at, r.detail};
    case worker_end::replied: break;
  }
  const std::string msg = r.reply.message;
  switch (r.reply.st) {
    case wire::status::wrong_output: return {outcome::wrong_result, msg + at, {}};
    case wire::status::forbidden: return {outcome::forbidden, msg, {}};
    case wire::status::kernel_error:
      // A Python kernel's launch raised or returned non-zero: its message says which.
      if (msg.starts_with("launch raised") || msg.starts_with("launch returned"))
        return {outcome::launch_error, "the kernel's " + msg + at, {}};
      return {outcome::launch_error,
              "lathe_launch returned " + std::to_string(r.reply.code) + at +
                  (msg.empty() ? "" : ": " + msg),
              {}};
    case wire::status::dlopen_failed: return {outcome::load_error, "cannot load the object: " + msg, {}};
    case wire::status::no_launch:
      return {outcome::load_error, "the object exports no lathe_launch (extern \"C\")", {}};
    case wire::status::no_abi_tag:
      return {outcome::load_error,
              "the object has no ABI tag: include <lathe/abi.h> (it defines lathe_abi_version)", {}};
    case wire::status::abi_mismatch:
      return {outcome::load_error,
              "the kernel was built for ABI version " + std::to_string(r.reply.code) +
                  "; this lathe speaks version " + std::to_string(LATHE_ABI_VERSION),
              {}};
    case wire::status::init_failed:
      return {outcome::load_error, "lathe_init returned " + std::to_string(r.reply.code), {}};
    case wire::status::device_error:
      return {outcome::crash, "CUDA error" + at + ": " + msg, {}};
    case wire::status::workspace_too_large:
      return {outcome::resource_limit, "lathe_workspace_bytes asked for too much: " + msg, {}};
    default: return {outcome::crash, "unexpected worker reply" + at + ": " + msg, {}};
  }
}

struct opened_object {
  int fd = -1;
  ~opened_object() {
    if (fd >= 0) close(fd);
  }
};


result<worker> evaluator::start_worker(const build_output& obj, const shared_region& region,
                                       std::optional<stop>& failed, const std::string& who,
                                       bool share) {
  opened_object so;
  // O_NOFOLLOW: the build checked this file's hash beneath its folder; a link put there since
  // is not followed (safe_file.h).
  so.fd = open(obj.object.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (so.fd < 0) return fail(errc::io_error, "cannot open " + obj.object.string());
  sandbox_options opt = cfg_.sandbox;
  if (cuda_) {
    // CUDA reserves a huge virtual address space: RLIMIT_AS breaks its initialization
    // (PROTOCOL.md); the resident-memory watchdog stays.
    opt.worker_exe = opt.worker_exe.parent_path() / "lathe-worker-cuda";
    opt.address_space_bytes = 0;
    opt.open_files = cuda_open_files;
    opt.own_namespaces = false;  // CUDA IPC with the oracle's worker (worker.h)
  }
  const bool python = obj.object.extension() == ".py";
  if (python) {
    auto staged = stage_python_build(obj.object);
    if (!staged) return tl::unexpected(staged.error());
    python_stages_.push_back(*staged);
    auto p = python_worker_options(std::move(opt), **staged);
    if (!p) return tl::unexpected(p.error());
    opt = std::move(*p);
    // The library policy decided by what runs (python/lathe_ops.py), for the candidate only: the
    // source screen reads names, and getattr(torch, "mm"), torch.ops.aten.mm or a fallback in a
    // helper passed it. Torch is allowed as the screen allows it (screen.cpp).
    if (who == "kernel" && req_.role == screen_role::candidate) {
      std::string text;  // read from the descriptor the worker gets: what runs is what is read
      char buf[65536];
      for (ssize_t n; (n = pread(so.fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0;)
        text.append(buf, static_cast<size_t>(n));
      const bool model_new = !t_.problem_model.empty() && defines_model_new(text);
      const bool torch_allowed =
          model_new || std::find(t_.allow_libraries.begin(), t_.allow_libraries.end(), "torch") !=
                           t_.allow_libraries.end();
      const char* policy = !torch_allowed ? "forbid"
                           : model_new && t_.problem_format == "kernelbench" && cfg_.refuse_torch_fallback
                               ? "fallback"
                               : nullptr;
      if (policy) {
        opt.worker_args.push_back("--torch-compute");
        opt.worker_args.push_back(policy);
      }
    }
    opt.open_files = std::max<uint64_t>(opt.open_files, 256);  // the interpreter's imports
  }
  auto w = worker::spawn(opt, region, so.fd);
  if (!w) return w;
  wire::command load;
  load.kind = wire::op::load;
  load.share = share ? 1 : 0;
  // A Python worker imports torch before the kernel's code: seconds, not the call's watchdog.
  worker_result r = w->request(load, python ? std::max(cfg_.call_timeout_s, 120.0) : cfg_.call_timeout_s);
  if (!r.ok()) failed = from_worker(r, "loading the " + who);
  const std::string said = r.reply.message;
  if (r.ok() && who == "kernel" && said.find("not confined") != std::string::npos &&
      e_.diagnostics.find("not confined") == std::string::npos)
    e_.diagnostics += "isolation: the worker's " + said.substr(said.find("files:")) +
                      "; libraries it opens at run time are still looked for in its mappings\n";
  return w;
}


std::optional<stop> evaluator::build_all() {
  auto t0 = clock_type::now();
  progress("compile");
  auto lock = device_lock::acquire("cpu", device_lock::mode::shared);
  if (!lock) return stop{outcome::compile_error, lock.error().message, {}};
  const fs::path cache = cfg_.cache_dir;
  // Every object at once, one compiler per core: a cold evaluation waits for the slowest, not
  // the sum (nvcc takes seconds).
  auto start = [&](const kernel_bundle& b, const std::string& isa, build_kind kind) {
    return std::async(std::launch::async, [&b, isa, kind, this, cache] {
      return build(b, isa, cfg_.tools, cache, kind, t_.problem_model);
    });
  };
  const kernel_bundle ref_bundle =
      t_.problem.empty() ? reference_bundle(t_, t_.reference, language::cpp) : kernel_bundle{};
  kernel_bundle gpu_bundle;
  if (dev_trials_) gpu_bundle = reference_bundle(t_, t_.gpu_reference, language::cuda);
  auto c_job = start(req_.candidate, resolved_isa(req_.candidate, cfg_.tgt), build_kind::kernel);
  std::future<result<build_output>> b_job, g_job;
  // Comparability mode times the candidate alone, and checks alone time nothing: no baseline
  // to build (a PyTorch problem may have none).
  if (!comparability_ && (cfg_.time || !req_.baseline.sources.empty()))
    b_job = start(req_.baseline, resolved_isa(req_.baseline, cfg_.tgt), build_kind::kernel);
  // The CPU reference runs here, on the host, whatever the task's target.
  const std::string host_arch =
      cfg_.tgt.plat == platform::cpu ? cfg_.tgt.arch : detect_cpu_target().arch;
  // A PyTorch problem's reference is its Python worker: nothing to build.
  const bool problem = !t_.problem.empty();
  std::future<result<build_output>> r_job;
  if (!problem) r_job = start(ref_bundle, host_arch, build_kind::reference);
  if (dev_trials_) g_job = start(gpu_bundle, resolved_isa(gpu_bundle, cfg_.tgt), build_kind::reference);
  const bool with_baseline = b_job.valid(), with_gpu_ref = g_job.valid();
  auto c = c_job.get();
  auto b = with_baseline ? b_job.get() : result<build_output>{};
  auto r = problem ? result<build_output>{} : r_job.get();
  auto g = with_gpu_ref ? g_job.get() : result<build_output>{};

  if (!c) return stop{outcome::compile_error, c.error().message, {}};
  cand_ = *c;
  e_.diagnostics += cand_.log;
  e_.resources = cand_.resources;
  e_.ptx = cand_.ptx;
  if (!cand_.ok && !cand_.refused.empty()) return stop{outcome::forbidden, "refused at its build: " + cand_.refused, {}};
  if (!cand_.ok) {
    // The compiler's jail (process.h) refuses every file outside the bundle and the system's trees.
    const bool outside = cand_.log.find(": Permission denied") != std::string::npos;
    return stop{outcome::compile_error,
                outside ? "the kernel does not compile: it reads a file outside its bundle (the compiler "
                          "may read only the bundle and the system's headers and libraries)"
                        : "the kernel does not compile",
                {}};
  }
  if (with_baseline) {
    if (!b || !b->ok)
      return stop{outcome::compile_error,
                  "the baseline '" + req_.baseline.name + "' does not compile (a task problem)",
                  b ? b->log : b.error().message};
    base_ = *b;
  }
  if (!problem && (!r || !r->ok))
    return stop{outcome::compile_error, "the task's reference does not compile (a task problem)",
                r ? r->log : r.error().message};
  if (!problem) ref_obj_ = *r;
  if (with_gpu_ref) {
    if (!g || !g->ok)
      return stop{outcome::compile_error,
                  "the task's GPU reference does not compile (a task problem)",
                  g ? g->log : g.error().message};
    gpu_ref_obj_ = *g;
  }
  stage_done("compile", t0);

  auto t1 = clock_type::now();
  // A Python kernel has no object: its source was screened (lathe_screen.py) before the build.
  const bool python = req_.candidate.manifest.lang == language::python;
  auto findings = python ? std::vector<finding>{} : screen_object(cand_.object, t_, req_.role);
  if (req_.role == screen_role::candidate)
    for (auto& f : screen_ptx(cand_.ptx)) findings.push_back(std::move(f));
  stage_done("screen_object", t1);
  if (!findings.empty())
    return stop{outcome::forbidden, findings.front().what + ": " + findings.front().detail,
                describe(findings)};
  if (problem) {
    auto oracle = problem_oracle::shared(t_.problem, t_.plat);
    if (!oracle)
      return stop{outcome::compile_error, "the problem's Python worker: " + oracle.error().message, {}};
    ref_ = reference::of_problem(*oracle);
    e_.reference_runtime = (*oracle)->runtime();
    return std::nullopt;
  }
  auto loaded = reference::load(ref_obj_.object);
  if (!loaded) return stop{outcome::compile_error, loaded.error().message, {}};
  ref_ = *loaded;
  return std::nullopt;
}

std::optional<stop> evaluator::mappings_check(const worker& w, const std::string& when) {
  if (req_.role != screen_role::candidate) return std::nullopt;  // a library baseline links its library
  // A Python worker maps torch and what torch links (its BLAS): the source screen decides
  // whether the kernel may call torch (allow_libraries "torch"), not the mappings.
  if (req_.candidate.manifest.lang == language::python) return std::nullopt;
  bool readable = false;
  const std::vector<std::string> mapped = w.mapped_files(readable);
  if (!readable) {
    if (e_.diagnostics.find("mappings not readable") == std::string::npos)
      e_.diagnostics += "isolation: the worker's mappings not readable here (lathe is not root): "
                        "libraries opened at run time are not looked for\n";
    return std::nullopt;
  }
  auto findings = screen_mappings(mapped, t_);
  if (findings.empty()) return std::nullopt;
  return stop{outcome::forbidden, findings.front().what + " (" + when + "): " + findings.front().detail,
              describe(findings)};
}

std::optional<stop> evaluator::idle_check(const worker& w, const std::string& when) {
  // A thread left running after a call would slow the alternating baseline (PROTOCOL.md).
  // Counted as the time the worker's threads ran *or waited to run* (schedstat), which a loaded
  // machine does not shrink: under a load of 9 on two cores a spinning thread used 22 % of a core
  // and passed a 30 % threshold on CPU time. CPU time where the kernel keeps no schedstat.
  // Waiting is not wanting at once, though: threads thawed behind a hog queue for a core before
  // they go back to sleep (an honest OpenMP team "wanted" 61 % of a core over its first 50 ms
  // beside one). So a first window over the threshold is only a suspicion, and the verdict is
  // the next, longer window's: a spinner wants it all again, a settled team none of it.
  const double first = 0.05, confirm = 0.25, share = 0.3;
  auto measure = [&](double window, bool& wanted) {
    const double demand = w.idle_demand_seconds(window);
    wanted = demand >= 0;
    return wanted ? demand : w.idle_cpu_seconds(window);
  };
  bool wanted = false;
  const double suspicion = measure(first, wanted);
  if (suspicion <= first * share) return std::nullopt;
  const double held = measure(confirm, wanted);
  if (held <= confirm * share) return std::nullopt;
  auto percent = [](double s, double window) { return std::to_string(static_cast<int>(s / window * 100)) + "%"; };
  return stop{outcome::resource_limit,
              "left threads running after a call (" + when + "): " + percent(held, confirm) +
                  " of a core " + (wanted ? "wanted (running or waiting to run)" : "used") +
                  " over 250 ms while idle, after " + percent(suspicion, first) + " over the first 50 ms",
              {}};
}

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
  for (size_t i = 0; i < t_.outputs.size(); ++i) {
    // topk: the indices (output 1) are checked against the trial's input, not the reference
    // (ties make the reference's indices one right answer of several).
    output_check oc =
        t_.compare.kind == comparison_kind::topk && i == 1
            ? check_topk_indices(t_.outputs[1].type, l.outputs[1].shape, slot + l.output_offset[1],
                                 t_.outputs[0].type, slot + l.output_offset[0], t_.inputs[0].type,
                                 l.inputs[0].shape, d.inputs.data() + l.input_offset[0])
            : check_output(t_.compare, t_.outputs[i].type, l.outputs[i].shape,
                           slot + l.output_offset[i], d.ref[i].data());
    oc.rec.shape_set = l.shapes->name;
    oc.rec.seed = d.spec.seed;
    oc.rec.output = t_.outputs[i].name;
    e_.checks.push_back(oc.rec);
    if (auto s = verdict_stop(oc, output_where(t_, i, l, d.spec.seed, where))) return s;
  }
  return std::nullopt;
}

std::optional<stop> evaluator::oracle_failed(const worker_result& r, const std::string& when) {
  return stop{outcome::crash, "the task's GPU reference failed (" + when + "; a task problem)",
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
  e_.problem_path = "cuda_ipc";
  return std::nullopt;
}

void evaluator::drop_link(const std::string& why) {
  link_.reset();
  e_.problem_path = "host";
  e_.diagnostics += "CUDA IPC with the problem's worker unavailable (" + why +
                    "): the checks from here on staged through host memory\n";
}

std::optional<stop> evaluator::check_trial_ipc(const slot_layout& l, const trial_spec& spec,
                                               bool mirror,
                                               std::vector<std::vector<uint8_t>>& previous,
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
    previous.clear();
    for (size_t i = 0; i < t_.outputs.size(); ++i) {
      const uint8_t* p = region_.data() + l.output_offset[i];
      previous.emplace_back(p, p + l.outputs[i].bytes);
    }
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

std::optional<stop> evaluator::check_trial(const slot_layout& l, const trial_data& d, uint8_t* slot,
                                           std::vector<std::vector<uint8_t>>& previous,
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
                                               std::vector<std::vector<uint8_t>>& previous,
                                               const std::string& where) {
  if (!inputs_intact(l, d, slot))
    return stop{outcome::input_mutated,
                "the kernel wrote into its inputs (shape set '" + l.shapes->name + "')", {}};
  // Cached results: different inputs, byte-identical outputs to the previous trial.
  std::vector<std::vector<uint8_t>> now;
  for (size_t i = 0; i < t_.outputs.size(); ++i) {
    const uint8_t* p = slot + l.output_offset[i];
    now.emplace_back(p, p + l.outputs[i].bytes);
  }
  if (!previous.empty() && previous == now) {
    return stop{outcome::cached_output,
                "the same output for different inputs (shape set '" + l.shapes->name +
                    "'): results cached across calls",
                {}};
  }
  previous = std::move(now);
  return check_slot_outputs(l, d, slot, where);
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
    timing_slots_ = l->slot_bytes >= llc ? 1
                                         : static_cast<uint32_t>(std::min<uint64_t>(
                                               cap, (2 * llc + l->slot_bytes - 1) / l->slot_bytes));
    timing_processes_ = std::max<uint32_t>(cfg_.policy.processes, 1);
    if (cuda_) {
      // Three processes per pair (and, with device trials, the oracle's copy) each hold the
      // slots on the device: stay within half of its memory (141 GB when the target does not
      // say, as on an H200).
      const double memory = cfg_.tgt.plat == platform::cuda && cfg_.tgt.memory_bytes
                                ? static_cast<double>(cfg_.tgt.memory_bytes)
                                : 141e9;
      const double slot = static_cast<double>(make_windows(*l, timing_slots_).slot_bytes);
      const double per_pair = (dev_trials_ ? 5.0 : 3.0) * slot * timing_slots_;
      timing_processes_ = std::clamp<uint32_t>(static_cast<uint32_t>(0.5 * memory / per_pair), 1,
                                               timing_processes_);
    }
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
  for (const auto& l : layouts) {
    worker_result r = cand_worker_.setup(setup_command(t_, l, 1), cfg_.call_timeout_s);
    if (!r.ok()) return from_worker(r, "setup of shape set '" + l.shapes->name + "'");
    std::vector<std::vector<uint8_t>> previous;
    uint64_t checksum = 0;
    for (uint32_t i = 0; i < trials_on_set(t_, cfg_.seeds, set_index); ++i) {
      trial_spec spec = trial_for(t_, seed_base_ + 1000ull * set_index, i);
      last_spec_ = spec;
      bool checked = false;
      if (link_)
        if (auto s = check_trial_ipc(l, spec, first, previous, checksum, checked)) return s;
      if (!checked) {
        auto d = make_trial(t_, l, ref_, spec);
        if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
        if (auto s = check_trial(l, *d, region_.data(), previous, "")) return s;
        if (comparability_) last_host_trial_ = std::move(*d);
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
  if (!o) return stop{outcome::crash, "the task's GPU reference could not start (a task problem)", o.error().message};
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
      return stop{outcome::crash,
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

std::optional<stop> evaluator::time_all() { return cuda_ ? time_all_cuda() : time_all_cpu(); }

static wire::bench_stats bench_stats_of(std::vector<double> t) {
  wire::bench_stats b;
  if (t.empty()) return b;
  b.trials = static_cast<uint32_t>(t.size());
  double sum = 0;
  for (double x : t) sum += x;
  b.mean_s = sum / static_cast<double>(t.size());
  double var = 0;
  for (double x : t) var += (x - b.mean_s) * (x - b.mean_s);
  b.std_s = std::sqrt(var / static_cast<double>(t.size()));
  std::sort(t.begin(), t.end());
  b.min_s = t.front();
  b.max_s = t.back();
  auto at = [&](double q) { return t[std::min(t.size() - 1, static_cast<size_t>(q * static_cast<double>(t.size())))]; };
  b.median_s = at(0.5);
  b.p20_s = at(0.2);
  b.p80_s = at(0.8);
  return b;
}

// CPU comparability: the CPU worker keeps no clock, so lathe's clock times each request. A
// trial is one request of k calls (k sized so that a request lasts about a millisecond, at least
// 1) and its time per call is the request's over k: the pipe round trip (tens of microseconds
// here) is spread over the block instead of added to each call. Comparable in method to the
// harness's per-call events, not to the microsecond (docs/problems.md).
std::optional<stop> evaluator::bench_host(const wire::command& c, worker_result& out) {
  const auto t0 = clock_type::now();
  worker_result est = cand_worker_.run(0, 1, 1, cfg_.call_timeout_s);
  if (!est.ok()) return from_worker(est, "comparability timing");
  const double one = std::max(est.seconds, 1e-7);
  const uint64_t k = std::clamp<uint64_t>(static_cast<uint64_t>(1e-3 / one), 1, 1000);
  uint32_t warm = c.warmup, trials = c.trials;
  if (c.protocol == wire::bench_protocol::do_bench) {
    warm = static_cast<uint32_t>(std::max(1.0, c.warmup_ms * 1e-3 / one));
    trials = static_cast<uint32_t>(std::min(100000.0, std::max(1.0, c.rep_ms * 1e-3 / (one * k))));
  }
  if (warm > 0) {
    worker_result w = cand_worker_.run(0, 1, warm, cfg_.call_timeout_s * warm);
    if (!w.ok()) return from_worker(w, "comparability warm-up");
  }
  std::vector<double> times;
  for (uint32_t i = 0; i < trials; ++i) {
    worker_result w = cand_worker_.run(0, 1, k, cfg_.call_timeout_s * static_cast<double>(k));
    if (!w.ok()) return from_worker(w, "comparability timing");
    times.push_back(w.seconds / static_cast<double>(k));
  }
  out.reply.bench = bench_stats_of(std::move(times));
  out.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  return std::nullopt;
}

// Comparability mode: the other harness's timing on the worker that ran the checks (as they
// time in the process that checked), then the outputs checked once more.
std::optional<stop> evaluator::bench() {
  auto t0 = clock_type::now();
  progress(cfg_.mode == timing_mode::kernelbench ? "time (KernelBench cuda_event protocol)"
                                                 : "time (do_bench protocol)");
  const shape_set& ts = timing_shape(t_);
  e_.timing_shape = ts.name;
  auto l = make_layout(t_, ts);
  if (!l) return stop{outcome::resource_limit, l.error().message, {}};
  wire::command c;
  c.kind = wire::op::bench;
  c.protocol = cfg_.mode == timing_mode::kernelbench ? wire::bench_protocol::kernelbench
                                                      : wire::bench_protocol::do_bench;
  c.warmup = cfg_.bench_warmup;
  c.trials = cfg_.bench_trials;
  worker_result r;
  if (cuda_) {
    r = cand_worker_.request(c, cfg_.call_timeout_s * 10);
    if (!r.ok()) return from_worker(r, "comparability timing");
  } else if (auto s = bench_host(c, r)) {
    return s;
  }
  const wire::bench_stats& b = r.reply.bench;
  comparability_result cr;
  cr.protocol = cfg_.mode == timing_mode::kernelbench ? "kernelbench" : "do_bench";
  cr.warmup = c.warmup;
  cr.trials = b.trials;
  cr.mean_seconds = b.mean_s;
  cr.std_seconds = b.std_s;
  cr.min_seconds = b.min_s;
  cr.max_seconds = b.max_s;
  cr.median_seconds = b.median_s;
  cr.p20_seconds = b.p20_s;
  cr.p80_seconds = b.p80_s;
  cr.host_seconds = r.seconds;
  if (problem_oracle* o = ref_.problem()) {
    // The eager problem, timed live on the same device by the same protocol in its own process
    // (KernelBench's reference timing); a failure there is the problem's, not the candidate's.
    progress("time the eager PyTorch problem");
    std::lock_guard<std::mutex> g(o->lock());
    auto er = o->request({{"op", "time"}, {"seed", last_seed_}, {"protocol", cr.protocol},
                          {"warmup", c.warmup}, {"trials", c.trials},
                          {"warmup_ms", c.warmup_ms}, {"rep_ms", c.rep_ms}});
    if (!er) {
      e_.diagnostics += "eager PyTorch timing failed: " + er.error().message + "\n";
    } else {
      std::vector<double> s;
      for (const auto& x : er->value("seconds", nlohmann::json::array())) s.push_back(x.get<double>());
      if (!s.empty()) {
        double sum = 0;
        for (double x : s) sum += x;
        cr.eager_mean_seconds = sum / static_cast<double>(s.size());
        std::sort(s.begin(), s.end());
        cr.eager_median_seconds = s[s.size() / 2];
        if (cr.mean_seconds > 0) cr.speedup_vs_eager = *cr.eager_mean_seconds / cr.mean_seconds;
      }
    }
  }
  e_.comparability = cr;
  e_.median_seconds = b.median_s;
  stage_done("time", t0);
  // The worker's events cannot claim more time than passed on lathe's clock.
  if (b.mean_s * b.trials > r.seconds * 1.01 + 1e-4)
    return stop{outcome::suspicious_speed, "the worker's event times exceed lathe's clock", {}};
  // The outputs of the last timed call, against the last check's reference.
  auto t1 = clock_type::now();
  if (dev_trials_) {
    if (auto s = device_verify(cand_worker_, region_, 1, *l, 0, 0, last_seed_, ", after the timing loop",
                               nullptr))
      return s;
  } else if (link_) {
    auto c = link_.compare(t_, *l, 0);
    if (c) {
      if (auto s = apply_verdict(*l, judge(t_, *l, *c, last_spec_.seed), last_spec_.seed,
                                 ", after the timing loop", nullptr))
        return s;
    } else {
      drop_link("comparing after the timing loop: " + c.error().message);
      auto d = make_trial(t_, *l, ref_, last_spec_);
      if (!d) return stop{outcome::crash, "lathe: " + d.error().message, {}};
      if (auto s = download(cand_worker_, 0, 1)) return s;
      if (auto s = check_slot_outputs(*l, *d, region_.data(), ", after the timing loop")) return s;
    }
  } else if (last_host_trial_) {
    if (auto s = download(cand_worker_, 0, 1)) return s;
    if (auto s = check_slot_outputs(*l, *last_host_trial_, region_.data(), ", after the timing loop"))
      return s;
  }
  stage_done("verify", t1);
  const double floor = roofline_floor(*l, l->slot_bytes);
  if (floor > 0 && b.median_s > 0) e_.roofline_fraction = floor / b.median_s;
  return std::nullopt;
}

double evaluator::roofline_floor(const slot_layout& l, uint64_t working_set, const target* ceilings) const {
  const target& tgt = ceilings ? *ceilings : cfg_.tgt;
  // Ceilings of the machine the kernel runs on: a CUDA task needs a measured GPU target.
  if (cuda_ != (tgt.plat == platform::cuda)) return 0;
  const shape_set& ts = *l.shapes;
  auto flops = eval_cost(t_.cost.flops, ts);
  auto bytes = eval_cost(t_.cost.bytes, ts);
  if (!flops || !bytes) return 0;
  // Working set of a block: every slot or pool and output area it touches. Within the LLC the
  // data comes from cache, which is never slower than DRAM: an in-cache reading below the DRAM
  // one measured something else (a VM whose sysfs names the host's 300 MiB L3 reads its
  // "in-LLC" sweep from DRAM), and taking it would put the floor above honest kernels.
  // A machine that names no LLC (a VM whose sysfs has no cache information) gets the in-cache
  // rate, the higher one: a floor must never be above what the data's level could deliver (a
  // kernel read 124% of a DRAM floor there).
  const bool in_cache = tgt.llc_bytes == 0 || working_set <= tgt.llc_bytes;
  double bw = in_cache ? std::max(tgt.cache_bytes_per_s, tgt.copy_bytes_per_s)
                       : tgt.copy_bytes_per_s;
  // On the CPU a working set that fits one core's L2 is floored by the L2 ceiling (PROTOCOL.md:
  // the floor "for the level of memory the data lives in"), every core's summed, so a
  // single-threaded kernel is floored low, never high; where that ceiling is not measured, by
  // none (only the compute floor), as the LLC and DRAM ones would flag honest kernels.
  if (!cuda_ && working_set <= cpu_l2_bytes())
    bw = tgt.l2_bytes_per_s > 0 ? std::max(bw, tgt.l2_bytes_per_s) : 0;
  // Tensor-core rate for 16-bit floating inputs (bf16/fp16 matrix products), else the FMA rate.
  bool half = false;
  for (const auto& in : t_.inputs) half = half || in.type == dtype::bf16 || in.type == dtype::f16;
  const double rate = cuda_ && half && tgt.tensor_flops_per_s > 0 ? tgt.tensor_flops_per_s
                                                                       : tgt.flops_per_s;
  double floor = 0;
  if (rate > 0) floor = std::max(floor, *flops / rate);
  if (bw > 0) floor = std::max(floor, *bytes / bw);
  return floor;
}

std::optional<stop> evaluator::run() {
  auto t0 = clock_type::now();
  progress("screen");
  auto findings = screen_sources(req_.candidate, t_, req_.role);
  stage_done("screen", t0);
  if (!cfg_.refuse_torch_fallback) {  // reported, not refused (gate.h)
    std::vector<finding> fallback;
    std::erase_if(findings, [&](const finding& f) {
      if (f.what != "torch fallback") return false;
      fallback.push_back(f);
      return true;
    });
    if (!fallback.empty())
      e_.diagnostics += "torch fallback (reported, not refused; --refuse-torch-fallback refuses it):\n" +
                        describe(fallback);
  }
  if (!findings.empty())
    return stop{outcome::forbidden, findings.front().what + ": " + findings.front().where + ": " +
                                        findings.front().detail,
                describe(findings)};
  const std::string isa = resolved_isa(req_.candidate, cfg_.tgt);
  const bool cuda_kernel = req_.candidate.manifest.lang == language::cuda;
  if (cuda_kernel != (t_.plat == platform::cuda))
    return stop{outcome::unsupported_target,
                std::string("a ") + to_string(req_.candidate.manifest.lang) + " kernel for a " +
                    to_string(t_.plat) + " task",
                {}};
  if (!cuda_kernel) {
    const int need = x86_level(isa), have = x86_level(cfg_.tgt.arch);
    if (need < 0) return stop{outcome::unsupported_target, "unknown ISA '" + isa + "'", {}};
    if (need > have)
      return stop{outcome::unsupported_target,
                  "the kernel needs " + isa + "; this host is " + cfg_.tgt.arch, {}};
  } else if (cfg_.tools.nvcc.empty()) {
    return stop{outcome::unsupported_target, "no nvcc: CUDA kernels cannot be built here", {}};
  }
  if (auto s = build_all()) return s;
  if (cuda_kernel && !has_cuda_device()) {
    // Compile-stage outcomes of CUDA kernels are decided on any machine with nvcc; running them
    // needs a device.
    return stop{outcome::unsupported_target,
                "the kernel builds for " + isa + "; no CUDA device on this machine to run it", {}};
  }
  if (auto s = check_all()) return s;
  if (!cfg_.time) return std::nullopt;
  // The device's state around the timing: a throttled or hot GPU times slow, and a ratio taken
  // across a change of clocks says so here.
  std::unique_ptr<nvml_session> nvml = cuda_ ? nvml_session::open() : nullptr;
  auto snapshot = [&]() -> std::optional<gpu_snapshot> {
    if (!nvml) return std::nullopt;
    return cfg_.tgt.uuid.empty() ? nvml->read(0u) : nvml->read(cfg_.tgt.uuid);
  };
  e_.gpu_before = snapshot();
  std::optional<stop> s = comparability_ ? bench() : time_all();
  e_.gpu_after = snapshot();
  return s;
}

}  // namespace detail

using detail::clock_type;

evaluation evaluate(const gate_config& cfg, const gate_request& req) {
  const auto t0 = clock_type::now();
  evaluation e;
  e.task = req.t->name;
  e.kernel_hash = req.candidate.hash;
  e.kernel_name = req.candidate.name;
  e.baseline_hash = req.baseline.hash;
  e.baseline_name = req.baseline.name;
  e.tgt = cfg.tgt;
  e.toolchain = cfg.tools.cxx_version;
  e.policy = cfg.policy;
  e.prov = req.prov;
  detail::evaluator ev(cfg, req, e);
  std::optional<detail::stop> s = ev.run();
  if (s && (s->o == outcome::infra_error || s->retry)) {
    // Likely not the kernel's doing (a worker that could not start: the machine's process or
    // memory limits, for a moment; the baseline-slowed check under a load that came and went, 853%
    // once on the 2-core VM with a build beside it): once more from the start, and the first
    // failure kept in the record.
    const std::string first = std::string(to_string(s->o)) + ", retried: " + s->message + "\n";
    const evaluation fresh = e;
    e = evaluation{};
    e.task = fresh.task;
    e.kernel_hash = fresh.kernel_hash;
    e.kernel_name = fresh.kernel_name;
    e.baseline_hash = fresh.baseline_hash;
    e.baseline_name = fresh.baseline_name;
    e.tgt = cfg.tgt;
    e.toolchain = cfg.tools.cxx_version;
    e.policy = cfg.policy;
    e.prov = req.prov;
    e.diagnostics = first;
    detail::evaluator again(cfg, req, e);
    s = again.run();
  }
  if (s) {
    e.result = s->o;
    e.message = s->message;
    if (!s->diagnostics.empty()) e.diagnostics += (e.diagnostics.empty() ? "" : "\n") + s->diagnostics;
  } else {
    e.result = outcome::ok;
    e.message = cfg.time ? "correct on every shape set and seed; timed" : "correct on every shape set and seed";
  }
  // Messages and diagnostics carry a candidate's own words (its error string, its compiler's
  // log): escaped once here, before they are printed or stored (core/text.h).
  e.message = escape_untrusted(e.message);
  e.diagnostics = escape_untrusted(e.diagnostics);
  e.wall_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  return e;
}

}  // namespace lathe::gate
