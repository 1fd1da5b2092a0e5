// The v2 prompt fields: contract, progress, card evidence (agent/situation_text.h).
#include "agent/situation_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/dtype.h"
#include "core/text.h"
#include "spec/task_file.h"

namespace lathe::agent {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string ratio_text(double r) { return fmt("%.3fx", r); }

std::string rate_text(double per_s, const char* unit) {
  return per_s > 0 ? fmt("%.1f ", per_s / 1e9) + unit : std::string("not measured");
}

std::string tolerance_line(const task& t, const tensor_spec& out) {
  const effective_tolerance e = tolerance_for(t.compare, out.type);
  const bool exact = e.rtol == 0 && e.atol == 0 && e.nerr == 0;
  std::string s = "- " + out.name + " (" + std::string(to_string(out.type)) + "): ";
  if (exact) return s + "exact (every element equal to the reference)";
  return s + fmt("rtol %g", e.rtol) + fmt(", atol %g", e.atol) + fmt(", nerr %g", e.nerr);
}

std::string comparison_rule(comparison_kind k) {
  switch (k) {
    case comparison_kind::elementwise:
      return "element-wise against an fp64 reference: every element must satisfy |out - ref| <= atol + "
             "rtol * |ref|, and the whole output ||out - ref||_2 / ||ref||_2 <= nerr (so that zeros "
             "cannot pass for small outputs); NaN or Inf where the reference is finite fails";
    case comparison_kind::sorted_set:
      return "each row (the last axis) compared as a sorted multiset: the row's values sorted, then "
             "element-wise as below (the order within a row is free)";
    case comparison_kind::topk:
      return "top-k: output 0's rows compared as sorted multisets of values (tolerances below); "
             "output 1 holds their positions along the last axis of input 0 and is checked against "
             "the input itself (any of several tied positions is right)";
  }
  return "?";
}

}  // namespace

std::string seconds_text(double s) {
  if (!(s > 0) || !std::isfinite(s)) return "not measured";
  // Three significant digits, no exponent: 1.00 ms, 24.1 ms, 815 us.
  auto sig3 = [](double v, const char* unit) {
    const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(v))));
    char b[64];
    std::snprintf(b, sizeof b, "%.*f %s", decimals, v, unit);
    return std::string(b);
  };
  if (s < 1e-6) return sig3(s * 1e9, "ns");
  if (s < 1e-3) return sig3(s * 1e6, "us");
  if (s < 1.0) return sig3(s * 1e3, "ms");
  return sig3(s, "s");
}

namespace {

// The correctness part of a contract: the comparison and every output's tolerance, on fresh inputs.
// `drawn_by_problem`: a ModelNew's, whose inputs the problem file's own code draws (kernel_text.cpp
// problem_values); the C ABI's text stays as recorded runs saw it.
std::string correctness_text(const task& t, bool drawn_by_problem = false) {
  std::string s = drawn_by_problem
                      ? "Correctness (checked on fresh inputs drawn by the problem file's own code, a KernelBench "
                        "problem's get_inputs() and Model constructor, under a new seed each time, on every shape "
                        "set"
                      : "Correctness (checked on fresh random inputs drawn from the task's distributions, on every "
                        "shape set";
  if (!t.perturb.scale.empty() || !t.perturb.shift.empty()) {
    std::vector<std::string> ps;
    for (double v : t.perturb.scale) ps.push_back(fmt("scaled by %g", v));
    for (double v : t.perturb.shift) ps.push_back(fmt("shifted by %g", v));
    s += ", also with the inputs " + join(ps, ", ");
  }
  s += "; timed calls see fresh inputs too, and a sample of them is checked):\n- " + comparison_rule(t.compare.kind) +
       "\n";
  for (const auto& out : t.outputs) s += tolerance_line(t, out) + "\n";
  return s;
}

// A ModelNew's contract (docs/python-kernels.md): how lathe constructs and calls it, what it is
// compared with, how its extensions are built and what the screen reports or refuses. Each fact is
// the worker's (python/lathe_kernel.py, lathe_modelnew.py) or the gate's; issue 44 item 2 lists
// what a real model could not tell from an earlier text (threads, output memory, parameter values,
// FLAGS/ISA, the fast-math boundary).
std::string modelnew_contract_text(const task& t, const target& host) {
  const std::string n = std::to_string(host.cores);
  std::string s = "ModelNew (one Python file, run by lathe's Python worker in its own confined process):\n";
  s += "- constructed once, before any call: torch.manual_seed(0), then ModelNew(*get_init_inputs()), "
       "then eval(); no file, network, process or environment access, at import or later\n";
  // lathe_modelnew.py bind: `held.data = t`, the region's own tensor; timing_arena.h: pools drawn
  // again before every block (a problem's by its worker under a new seed, the Model constructed
  // again), each call a random 256-byte rotation of them.
  s += "- parameters by name: before every call each state_dict tensor of the task (its inputs after "
       "forward's tensors, named in the task's table) is bound to the ModelNew's parameter or buffer of "
       "the same name, without a copy; a name it lacks is a load_error, a parameter of another shape or "
       "dtype a wrong_result\n";
  s += "- parameter values change between calls, as the inputs' do: each check and each block of timed "
       "calls draws the problem again under a seed of its own (the Model constructed anew: its parameters "
       "are a fresh draw of its constructor's initialization; the seed the task section names is one "
       "draw's), and within a block each timed call may read them rotated (shifted along their memory). So whatever is derived from a "
       "parameter's values (a repacked or transposed weight, a folded scale) must be computed in forward, "
       "on every call: made once at construction, or cached by tensor identity or address, it is stale "
       "and the checks fail\n";
  s += "- forward takes the Model's forward arguments and returns what Model.forward returns (a tensor, "
       "a tuple or list, a dict in order): the same count, shapes and dtypes\n";
  // lathe_modelnew.py own(): plain tensors only, nothing inside the shared region; the copy is
  // torch.Tensor.copy_ right after forward, and no reference is kept.
  s += "- outputs: lathe copies each returned tensor into its own output buffer (torch.Tensor.copy_) as "
       "soon as forward returns, and keeps no reference to it. Reusing an output's memory across calls is "
       "allowed (a buffer allocated once, overwritten on every call), as long as its values are computed "
       "from this call's inputs and parameters: a result kept from an earlier call is checked against this "
       "call's reference and fails. Forbidden: a tensor subclass (return plain tensors), and anything in "
       "lathe's shared buffers, that is an input, a bound parameter or buffer, or a view of one (return "
       "x.clone() where a result is an input's values)\n";
  s += "- inputs must not be written\n";
  // lathe_problem.py model_spec: init and forward's non-tensor values as the problem gives them.
  s += "- scalars: the task's scalars are the problem's own numbers, the Model's constructor arguments "
       "(get_init_inputs()) and forward's non-tensor arguments (from get_inputs()): lathe passes exactly "
       "those, the constructor's once and forward's on every call, never other values\n";
  // lathe_kernel.py run_table; the pools are drawn again outside lathe's clock (time_cpu.cpp).
  s += "- timed: blocks of calls in one Python loop, each call lathe's binding of the parameters, forward, "
       "and the check and copy of its outputs; the eager baseline is timed the same way, and drawing the "
       "inputs is outside the clock\n";
  if (t.plat == platform::cpu)
    // sandbox.cpp worker_environment; lathe_kernel.py calls no torch.set_num_threads. The cost of
    // a region: bench/results/python-timing-2026-12-06.md.
    s += "- threads: the worker runs with OMP_NUM_THREADS=" + n +
         " (the CPUs lathe may run on) and lathe calls no torch.set_num_threads, so torch runs " + n +
         " intra-op threads (torch.get_num_threads() outside lathe's worker may read otherwise), and an "
         "OpenMP region of a load_inline extension built with -fopenmp gets the same " + n +
         " unless it asks for fewer (num_threads); the eager baseline runs with the same. Pool threads "
         "sleep as soon as a region ends (OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0), so every parallel "
         "region, torch's or yours, pays a wake-up and a join: tens of microseconds on a small shared VM "
         "(on a 2-core one a Linear + GELU of 16-19 us at one thread took 55-72 us at two), which a short "
         "call does not win back. No processes, no I/O, no timers\n";
  else
    s += "- threads: torch's intra-op threads and OpenMP, up to " + n + "; no processes, no I/O, no timers\n";
  s += "\n" + correctness_text(t, !t.problem.empty());
  s += "\nBuild: C++ through torch.utils.cpp_extension.load_inline at import (cpp_sources, functions, "
       "extra_cflags such as -O3 or -fopenmp, extra_ldflags) is compiled by lathe before the candidate "
       "runs, in a sandbox, against this interpreter's torch";
  if (!t.problem_runtime.empty()) s += " (" + t.problem_runtime + ")";
  s += "; a load_inline call at run time with arguments the build did not record fails (each candidate "
       "is built anew: module names and flags may differ from the parent's). ";
  // Triton compiles at its first call (a cache folder, ptxas), which the confined worker may not
  // do: docs/python-kernels.md "On CUDA". The prompt said it ran until 2026-12-07.
  s += t.plat == platform::cuda ? "CUDA sources (cuda_sources) run on CUDA problems; Triton kernels do not yet (a Triton "
                                  "kernel compiles at its first call, inside the confined worker, which may not write "
                                  "files or start ptxas: it fails there). "
                                : "A CPU problem: C++ only (no cuda_sources). ";
  // build.cpp: a Python bundle's build compiles nothing from its manifest (flags, isa); its
  // extensions are built with the arguments load_inline was called with (lathe_ext.py).
  s += "An extension's compiler flags are load_inline's extra_cflags alone, the instruction set "
       "included (-mavx2, -mfma, -mavx512f…, within the target's capabilities): the kernel's manifest "
       "flags and isa are not used for a ModelNew, so the edit format's @@@ FLAGS and @@@ ISA lines change "
       "nothing in how it is built; leave them out. ";
  s += "Calls in forward of an op the Model's forward calls (torch.relu, F.gelu, a layer of the same "
       "kind) are reported as torch fallback, and refused when the run asks it. ";
  // What lathe counts as fast math: gate/screen.cpp flag_ok (the flags refused where the task
  // does not allow it) and the fast_math feature's detectors (features/detect_source.cpp).
  s += std::string("Fast math, as lathe counts it: the compiler flags -ffast-math, -Ofast, "
                   "-funsafe-math-optimizations, -ffinite-math-only") +
       (t.plat == platform::cuda ? ", --use_fast_math" : "") +
       " and the fast intrinsics (__expf, __logf, __powf, __fdividef, rsqrtf and the like). " +
       (t.allow_fast_math ? std::string("Allowed by this task.")
                          : std::string("Not allowed by this task: none of them in extra_cflags or in the sources.")) +
       " Code of your own that approximates a function (a polynomial exp, a reciprocal refined by Newton "
       "steps) is not fast math by this count: it is held to the tolerances above, like any code.";
  return s;
}

}  // namespace

std::string contract_text(const task& t, const target& host) {
  const bool cuda = t.plat == platform::cuda;
  std::string s = "ABI (include/lathe/abi.h, version 1):\n";
  s += "- tensors are DLTensors: contiguous, row-major (no strides), 256-byte aligned, never aliasing "
       "one another; shapes are in inputs[i].shape / outputs[i].shape\n";
  s += "- inputs are read-only; outputs are preallocated and filled with poison before every call: "
       "write every element, on every call (an element left unwritten fails as unwritten_output)\n";
  s += "- scalars are doubles in args->scalars, in the task's declared order\n";
  s += "- a scratch buffer: export size_t lathe_workspace_bytes(const lathe_args*) and use "
       "args->workspace (256-byte aligned; not zeroed; its contents are not kept between calls)\n";
  s += "- int lathe_init(void) may be exported: run once per load, not timed\n";
  if (cuda)
    s += "- lathe_launch only enqueues work on args->stream (a cudaStream_t): no allocation, no "
         "synchronization, no host-device copies, no other stream; lathe may capture it in a CUDA graph\n";
  else
    s += std::string("- threads: std::thread or OpenMP, up to ") + std::to_string(host.cores) +
         " (OMP_NUM_THREADS=" + std::to_string(host.cores) +
         ", passive waiting); no processes, no I/O, no timers, no environment\n";
  s += "\n" + correctness_text(t);
  s += "\nBuild: ";
  if (cuda)
    s += "nvcc with the manifest's flags; the architecture is the manifest's `isa` (none: sm_90a); "
         "change it only with one `@@@ ISA sm_XX` line.";
  else
    s += "g++ -shared -fPIC -std=c++20 -march=<isa> plus the manifest's flags, nothing else (no "
         "-O level, no OpenMP unless the flags say so): OpenMP needs `@@@ FLAGS` with `+ -fopenmp` "
         "(and `+ -O3` when the manifest has none). The isa is the manifest's `isa` (none: this host's, " +
         host.arch + "); change it only with one `@@@ ISA <level>` line; a level above " + host.arch +
         " is unsupported_target here.";
  s += " Allowed flags: -O*, -f*, -m* (not -march: the ISA line), -std=, -W*, -D, -U";
  s += cuda ? ", --use_fast_math (if fast math is allowed), -lineinfo, --extended-lambda, "
              "--expt-relaxed-constexpr."
            : ".";
  s += std::string(" Fast math (-ffast-math, -Ofast, --use_fast_math, fast intrinsics): ") +
       (t.allow_fast_math ? "allowed by this task." : "not allowed by this task.");
  s += " Libraries: " +
       (t.allow_libraries.empty() ? std::string("none may be linked or loaded.")
                                  : join(t.allow_libraries, ", ") + " only.");
  return s;
}

std::string contract_text(const task& t, const target& host, candidate_language l) {
  return l == candidate_language::modelnew ? modelnew_contract_text(t, host) : contract_text(t, host);
}

std::string language_text(candidate_language l) {
  std::string s(to_string(l));
  switch (l) {
    case candidate_language::c_abi:
      return s + "\nA C++ (CPU) or CUDA C++ bundle exporting `extern \"C\" int lathe_launch(const lathe_args*)` "
                 "with the task's inputs, outputs and scalars, writing every output element; on CUDA it only "
                 "enqueues work on the given stream (no allocation, no synchronization, no host-device "
                 "copies). Keep that ABI.";
    case candidate_language::python:
      return s + "\nOne Python file defining `launch(inputs, outputs, scalars)` on torch tensors, writing "
                 "into the outputs. Keep that signature.";
    case candidate_language::modelnew:
      return s + "\nOne Python file, the bundle's entry: KernelBench's `ModelNew`. Keep the problem's code "
                 "(Model, get_inputs, get_init_inputs) and define `class ModelNew(nn.Module)` with the "
                 "Model's constructor arguments, its parameters and buffers named as the Model's state_dict "
                 "(the task's table names them), and a `forward` that takes the Model's forward arguments and "
                 "returns what Model.forward returns. Make it faster with PyTorch ops, C++ through "
                 "`torch.utils.cpp_extension.load_inline`, or both; the start is the Model itself "
                 "(`class ModelNew(Model)`). Edit the file (SEARCH/REPLACE or WHOLE), never the manifest.";
  }
  return s;
}

std::string roofline_text(const task& t, const target& host, std::optional<double> floor_seconds) {
  if (t.cost.flops.empty() && t.cost.bytes.empty()) return "";
  if (t.shapes.empty()) return "";
  const shape_set& ts = timing_shape(t);
  auto flops = eval_cost(t.cost.flops, ts);
  auto bytes = eval_cost(t.cost.bytes, ts);
  if (!flops || !bytes) return "";
  // An empty flop expression is no count (spec/problem.cpp gives a PyTorch problem its bytes only),
  // not zero work: "0 flops" beside a GEMM's problem misled a real model (issue 44, item 2).
  const bool counted = !t.cost.flops.empty();
  std::string s = "timed shape set " + ts.name + ": ";
  if (counted)
    s += fmt("%.4g", *flops) + " flops, " + fmt("%.4g", *bytes) +
         " bytes moved at least. floor = max(flops / compute ceiling, bytes / the bandwidth of the "
         "memory level the data lives in). Ceilings measured on this machine: ";
  else
    s += std::string("flops not counted (") +
         (t.problem.empty() ? "the task declares none" : "lathe does not count a PyTorch problem's") + "), " +
         fmt("%.4g", *bytes) +
         " bytes moved at least. floor = bytes / the bandwidth of the memory level the data lives in: a "
         "memory-only bound that leaves the arithmetic out, so a kernel with real compute (a GEMM, a "
         "convolution) may sit far above it; its compute term would be its flops (count them from the code) / "
         "the compute ceiling. Ceilings measured on this machine: ";
  const bool cuda = t.plat == platform::cuda;
  std::vector<std::string> cs{"compute " + rate_text(host.flops_per_s, "GFLOP/s") + (cuda ? " (fp32 SGEMM)" : " (fp32 FMA, all cores)")};
  if (cuda && host.tensor_flops_per_s > 0) cs.push_back("tensor cores " + rate_text(host.tensor_flops_per_s, "GFLOP/s"));
  cs.push_back(std::string(cuda ? "device memory " : "DRAM ") + rate_text(host.copy_bytes_per_s, "GB/s"));
  cs.push_back((cuda ? "L2 " : "last-level cache ") + rate_text(host.cache_bytes_per_s, "GB/s"));
  if (!cuda && host.l2_bytes_per_s > 0) cs.push_back("L2 (all cores) " + rate_text(host.l2_bytes_per_s, "GB/s"));
  s += join(cs, ", ");
  if (floor_seconds && *floor_seconds > 0) {
    const double compute = host.flops_per_s > 0 ? *flops / host.flops_per_s : 0;
    s += ". The floor here is " + seconds_text(*floor_seconds) +
         (!counted                           ? ", memory only, at " + rate_text(*bytes / *floor_seconds, "GB/s")
          : compute >= *floor_seconds * 0.999 ? " (compute-bound)"
                                              : ", memory-bound at " + rate_text(*bytes / *floor_seconds, "GB/s"));
  }
  return s;
}

std::string progress_text(const progress_facts& p) {
  std::string s;
  if (p.step > 0) {
    s += p.step_name + " " + std::to_string(p.step);
    if (p.steps) s += " of " + std::to_string(*p.steps);
    s += "; " + std::to_string(p.accepted) + " " + p.accepted_name + "\n";
  }
  s += "budget left: " + (p.budget_left.empty() ? std::string("no bound but the steps") : p.budget_left) + "\n";
  s += p.start_name + ": " + (p.start_seconds ? seconds_text(*p.start_seconds) : std::string("not timed yet")) + "\n";
  s += p.best_name + ": " + (p.best_seconds ? seconds_text(*p.best_seconds) : std::string("not timed yet")) + ", " +
       ratio_text(p.best_ratio) + " over the " + p.start_name +
       " (paired timing: the two kernels alternated in one run)\n";
  s += "roofline: ";
  if (p.floor_seconds && p.best_seconds && *p.best_seconds > 0)
    s += "the " + p.best_name + " runs at " + fmt("%.1f%%", 100 * *p.floor_seconds / *p.best_seconds) +
         " of the " + (p.floor_memory_only ? "memory-only floor's" : "floor's") + " speed (floor " +
         seconds_text(*p.floor_seconds) + " / its time); ";
  else
    s += "position not measured yet; ";
  s += p.roofline.empty() ? std::string("the task has no cost model") : p.roofline;
  if (!p.margin_floor && !p.margin) {
    s += "\nacceptance: a candidate is timed against the best kernel; it is kept when its paired ratio clears "
         "1 + the noise margin of that measurement and holds on a fresh re-measure";
  } else {
    // gate/paired.h decide: epsilon = max(floor, exp(3 * reach of the A/A interval) - 1).
    s += "\nacceptance: a candidate is timed against the best kernel, the two alternated in one run; it is kept "
         "when the 95% interval of its paired ratio clears 1 + the noise margin of that measurement (its low "
         "end above it) and holds on a fresh re-measure. The noise margin is three times the reach from 1 of "
         "the measurement's A/A control (the baseline timed against a copy of itself)";
    if (p.margin_floor) s += fmt(", never below %.3f", *p.margin_floor);
    if (p.aa_unstable)
      s += "; where the A/A interval reaches further than " + fmt("%g%%", 100 * *p.aa_unstable) +
           " from 1, a candidate whose interval does not clear the margin is left undecided: the machine was too "
           "noisy to tell, not a verdict on the kernel";
    if (p.margin) s += "\nlast timed decision: " + margin_text(*p.margin, p.aa_low, p.aa_high, p.aa_unstable);
  }
  if (!p.library.empty()) s += "\nlibrary: " + p.library;
  return s;
}

std::string margin_text(double margin, std::optional<double> aa_low, std::optional<double> aa_high,
                        std::optional<double> aa_unstable) {
  if (!std::isfinite(margin))
    return "no finite noise margin (the A/A control had too few rounds to give an interval): nothing could be "
           "decided in that measurement";
  std::string s = fmt("noise margin 1 + %.3f", margin);
  if (aa_low && aa_high && *aa_low > 0 && std::isfinite(*aa_high)) {
    s += fmt(", from the A/A interval [%.3f, ", *aa_low) + fmt("%.3f]", *aa_high);
    const double reach = std::max(std::fabs(*aa_high - 1), std::fabs(1 - *aa_low));
    if (aa_unstable && reach > *aa_unstable)
      s += " (past " + fmt("%g%%", 100 * *aa_unstable) + " from 1: too wide to decide anything within the margin)";
  }
  s += ": a ratio counted as faster only where its interval's low end was above " + fmt("%.3f", 1 + margin);
  return s;
}

std::string card_evidence_text(const skill_card& c) {
  std::string s = "measured on its source task(s) " +
                  (c.source_tasks.empty() ? std::string("(none named)") : join(c.source_tasks, ", ")) + ": ";
  s += c.declared_ratio ? ratio_text(*c.declared_ratio) + " (geomean of " + std::to_string(c.evidence.size()) +
                              " paired evaluation(s)" + (c.target.empty() ? "" : ", on " + c.target) + ")"
                        : std::string("no declared effect");
  s += cat("\nlanguage of its evidence: ", to_string(c.evidence_lang),
           c.evidence_lang == candidate_language::c_abi ? " (lathe_launch bundles)" : "");
  if (c.trials.empty()) {
    s += "\nheld-out tasks: not tried yet";
  } else {
    std::vector<std::string> ts;
    for (const auto& tr : c.trials) {
      std::string one = tr.task + ": " + to_string(tr.verdict);
      if (!tr.outcome.empty() && tr.outcome != "ok") one += " (" + tr.outcome + ")";
      if (tr.ratio) one += " " + ratio_text(*tr.ratio);
      if (tr.lang != candidate_language::c_abi) one += cat(" (on a ", to_string(tr.lang), " kernel)");
      ts.push_back(one);
    }
    s += "\nheld-out tasks: " + join(ts, "; ");
  }
  s += "\nstatus: " + std::string(to_string(c.status)) + (c.status_reason.empty() ? "" : " (" + c.status_reason + ")");
  return s;
}

std::string card_carry_text(const skill_card& c, candidate_language kernel, platform plat) {
  if (kernel == candidate_language::c_abi) return "";
  const bool cuda = plat == platform::cuda;
  const std::string learned =
      c.evidence_lang == candidate_language::c_abi
          ? "This card was learned on c-abi kernels: its carrier edits a lathe_launch bundle."
          : cat("This card was learned on ", to_string(c.evidence_lang), " kernels.");
  // A real model given a C-ABI carrier and a ModelNew could not tell where the code goes, nor that
  // the manifest's flags do not reach load_inline's build (issue 44, items 2 and 3).
  return cat("carried into a ", to_string(kernel), ": ", learned,
             " Apply its technique inside the C++ of the kernel's inline extension (the ",
             cuda ? "cuda_sources" : "cpp_sources",
             " that torch.utils.cpp_extension.load_inline builds; where the kernel has no extension yet, write "
             "one that computes forward's work and call it from ModelNew.forward), adapted to the extension's "
             "function on the tensors' data pointers: no lathe_launch or lathe_args there. Flags the technique "
             "needs (-fopenmp, -march=…) go in load_inline's extra_cflags and extra_ldflags: @@@ FLAGS and "
             "@@@ ISA change nothing in its build.");
}

}  // namespace lathe::agent
