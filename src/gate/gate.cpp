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
      // The worker's reason when it gave one (the Python worker's "sandbox not installed: …").
      return {outcome::load_error,
              "lathe_init returned " + std::to_string(r.reply.code) + (msg.empty() ? "" : ": " + msg), {}};
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
  // Timing workers may start at once (start_timing_sides): what follows reads and writes the
  // evaluation's state under start_mu_, and lets go of it while the worker starts and loads.
  std::unique_lock<std::mutex> held(start_mu_);
  sandbox_options opt = cfg_.sandbox;
  const bool python = obj.object.extension() == ".py";
  if (cuda_) {
    // CUDA reserves a huge virtual address space: RLIMIT_AS breaks its initialization
    // (PROTOCOL.md); the resident-memory watchdog stays.
    opt.worker_exe = opt.worker_exe.parent_path() / "lathe-worker-cuda";
    opt.address_space_bytes = 0;
    opt.open_files = cuda_open_files;
    opt.own_namespaces = false;  // CUDA IPC with the oracle's worker (worker.h)
  }
  if (python) {
    auto staged = stage_python_build(obj.object);
    if (!staged) return tl::unexpected(staged.error());
    python_stages_.push_back(*staged);
    auto p = python_worker_options(std::move(opt), **staged, t_.plat);
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
      const torch_compute policy =
          !torch_allowed ? torch_compute::forbid
          : model_new && t_.problem_format == problem_format::kernelbench && cfg_.refuse_torch_fallback
              ? torch_compute::fallback
              : torch_compute::allowed;
      auto judged = with_torch_policy(std::move(opt), policy, **staged);
      if (!judged) return tl::unexpected(judged.error());
      opt = std::move(*judged);
      // Compute the record cannot see: torch's kernels or BLAS called by name from an extension.
      // Read once per evaluation: every worker's stage copies the same extensions.
      if (model_new && !ext_bypass_) ext_bypass_ = staged_dispatcher_bypass(**staged);
      if (ext_bypass_ && !ext_bypass_->empty()) {
        const std::vector<std::string>& around = *ext_bypass_;
        const std::string what = "torch fallback: an extension calls torch's own kernels or BLAS around "
                                 "the dispatcher, where lathe's record of torch ops cannot see them (" +
                                 around.front() +
                                 (around.size() > 1 ? ", and " + std::to_string(around.size() - 1) + " more" : "") + ")";
        if (policy == torch_compute::fallback) failed = stop{outcome::forbidden, what, {}};
        else if (e_.diagnostics.find(what) == std::string::npos)
          e_.diagnostics += "torch fallback (reported, not refused; --refuse-torch-fallback refuses it): " + what + "\n";
      }
    }
    opt.open_files = std::max<uint64_t>(opt.open_files, 256);  // the interpreter's imports
  }
  held.unlock();
  auto w = worker::spawn(opt, region, so.fd);
  if (!w || failed) return w;  // refused before its load
  wire::command load;
  load.kind = wire::op::load;
  load.share = share ? 1 : 0;
  // A Python worker imports torch before the kernel's code: seconds, not the call's watchdog.
  worker_result r = w->request(load, python ? std::max(cfg_.call_timeout_s, 120.0) : cfg_.call_timeout_s);
  held.lock();
  if (!r.ok()) failed = from_worker(r, "loading the " + who);
  const std::string said = r.reply.message;
  if (r.ok() && who == "kernel" && said.find("not confined") != std::string::npos &&
      e_.diagnostics.find("not confined") == std::string::npos)
    e_.diagnostics += "isolation: the worker's " + said.substr(said.find("files:")) +
                      "; libraries it opens at run time are still looked for in its mappings\n";
  // A part of the Python worker's load reply ("key ...", up to the next "; "), said once in the
  // diagnostics: under a torch policy, what recorded the candidate's torch ops; always, the
  // vector instructions torch's CPU kernels use, chosen before the confinement or torch falls
  // back to scalar kernels (python/lathe_kernel.py cpu_capability).
  auto repeat_part = [&](const std::string& key, const std::string& lead) {
    const size_t at = said.find(key);
    if (r.ok() && who == "kernel" && at != std::string::npos && e_.diagnostics.find(key) == std::string::npos)
      e_.diagnostics += lead + "the Python worker's " + said.substr(at, said.find("; ", at) - at) + "\n";
  };
  repeat_part("torch ops: ", "isolation: ");
  repeat_part("torch CPU kernels: ", "");
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
      return stop{outcome::infra_error,
                  "the baseline '" + req_.baseline.name + "' does not compile (a task problem)",
                  b ? b->log : b.error().message};
    base_ = *b;
  }
  if (!problem && (!r || !r->ok))
    return stop{outcome::infra_error, "the task's reference does not compile (a task problem)",
                r ? r->log : r.error().message};
  if (!problem) ref_obj_ = *r;
  if (with_gpu_ref) {
    if (!g || !g->ok)
      return stop{outcome::infra_error,
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
      return stop{outcome::infra_error, "the problem's Python worker: " + oracle.error().message + " (a task problem)", {}};
    ref_ = reference::of_problem(*oracle);
    // Where the problem's own code ran, with what ran it (spec/problem_launch.h).
    e_.reference_runtime = (*oracle)->runtime() + "; " + (*oracle)->sandbox();
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

std::optional<stop> evaluator::time_all() {
  std::optional<stop> s = cuda_ ? time_all_cuda() : time_all_cpu();
  const uint32_t more = std::min(2 * timing_processes_, timing_processes_cap_);
  if (!s || !s->more_pairs || more <= timing_processes_) return s;
  // Once, from fresh processes: a series whose pairs differ is no evidence for or against the
  // candidate until enough pairs carry its interval. The first attempt was undecided, never
  // faster, so timing again cannot turn a decided loss into a win.
  e_.diagnostics += "time: " + std::to_string(timing_processes_) + " process pairs that differed left it undecided (" +
                    s->message + "): timed again with " + std::to_string(more) + "\n";
  progress("time again with " + std::to_string(more) + " process pairs (the " +
           std::to_string(timing_processes_) + " pairs differed: undecided)");
  cands_.clear();
  bases_.clear();
  copies_.clear();
  e_.aa.reset();
  timing_processes_ = more;
  return cuda_ ? time_all_cuda() : time_all_cpu();
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
  if (std::string why = language_misfit(req_.candidate.manifest.lang, t_.plat); !why.empty())
    return stop{outcome::unsupported_target, why, {}};
  if (python_device_ && !has_cuda_device()) {
    // A Python kernel's build on a CUDA task is its ModelNew's record step and its inline CUDA,
    // compiled against the device's torch (a CPU build of torch links no CUDA): what can be
    // decided without a device is its screen, passed above.
    return stop{outcome::unsupported_target,
                "the python kernel for a cuda task passed the screen; no CUDA device on this machine "
                "to build and run it (its extensions build against CUDA torch)",
                {}};
  }
  if (!cuda_) {
    const int need = x86_level(isa), have = x86_level(cfg_.tgt.arch);
    if (need < 0) return stop{outcome::unsupported_target, "unknown ISA '" + isa + "'", {}};
    if (need > have)
      return stop{outcome::unsupported_target,
                  "the kernel needs " + isa + "; this host is " + cfg_.tgt.arch, {}};
  } else if (cuda_kernel && cfg_.tools.nvcc.empty()) {
    return stop{outcome::unsupported_target, "no nvcc: CUDA kernels cannot be built here", {}};
  }
  if (auto s = build_all()) return s;
  if (cuda_kernel && !has_cuda_device()) {
    // Compile-stage outcomes of CUDA kernels are decided on any machine with nvcc; running them
    // needs a device.
    return stop{outcome::unsupported_target,
                "the kernel builds for " + isa + "; no CUDA device on this machine to run it", {}};
  }
  {
    // The checks draw inputs, compute the fp64 reference and compare on the host: CPU work that
    // must not run while another evaluation times on the CPU (its baseline would be slowed by
    // lathe's own load), so it takes the CPU's lock shared, as a build does. A CUDA task's checks
    // run on the device too: they take its lock shared, so that no other evaluation's series
    // (which holds it exclusive) is timed beside them (bench --in-flight, evolve's batches).
    using mode = device_lock::mode;
    auto held = cuda_ ? device_lock::acquire_all({{"cpu", mode::shared}, {"cuda0", mode::shared}})
                      : device_lock::acquire_all({{"cpu", mode::shared}});
    if (!held) return stop{outcome::infra_error, held.error().message, {}};
    if (auto s = check_all()) return s;
  }
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

const char* to_string(timing_mode m) {
  switch (m) {
    case timing_mode::decision: return "decision";
    case timing_mode::kernelbench: return "kernelbench";
    case timing_mode::do_bench: return "do_bench";
  }
  return "?";
}

using detail::clock_type;

namespace {

// The slot's cores and thread count in the sandbox every worker of the evaluation starts from.
gate_config on_slot(gate_config cfg) {
  if (cfg.slot) {
    cfg.sandbox.cores = cfg.slot->cores;
    cfg.sandbox.threads = static_cast<uint32_t>(cfg.slot->cores.size());
  }
  return cfg;
}

std::optional<slot_record> record_of(const std::optional<cpu_slot>& s) {
  if (!s) return std::nullopt;
  return slot_record{s->index, s->count, s->cores};
}

}  // namespace

evaluation evaluate(const gate_config& given, const gate_request& req) {
  const gate_config cfg = on_slot(given);
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
  e.slot = record_of(cfg.slot);
  detail::evaluator ev(cfg, req, e);
  std::optional<detail::stop> s = ev.run();
  if (s && (s->o == outcome::infra_error || s->retry)) {
    // Likely not the kernel's doing (a worker that could not start: the machine's process or
    // memory limits, for a moment; the baseline-slowed check under a load that came and went, 853%
    // once on the 2-core VM with a build beside it; the task's own baseline or reference failing,
    // which a cached failed build answers again at once): once more from the start, and the first
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
    e.slot = record_of(cfg.slot);
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
