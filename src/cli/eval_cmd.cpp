// lathe eval TASK KERNEL [--baseline KERNEL]: gate one kernel, with a paired ratio.
#include <cstdint>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/enum_option.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "gate/gate.h"
#include "gate/paired.h"
#include "spec/bundle.h"
#include "spec/problem.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

struct eval_options {
  std::string task, kernel, baseline;
  std::string platform_word;  // --platform: where a bare problem file runs ("": what the kernel implies)
  bool json = false, no_time = false, no_aa = false;
  // --seeds, --max-time, --quick, --target-rse, --seed, --mode, --warmup, --trials,
  // --host-trials and --refuse-torch-fallback, bound into the gate's settings (their defaults
  // are eval's).
  gate_settings gate;
};

// How a side was timed; "" for a record from before lathe kept it.
std::string method_text(const std::optional<timing_method>& m) { return m ? to_string(*m) : ""; }

std::string fmt_time(double s) {
  char b[32];
  if (s >= 1) std::snprintf(b, sizeof b, "%.3f s", s);
  else if (s >= 1e-3) std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.2f us", s * 1e6);
  return b;
}

void print_human(const evaluation& e, const task& t, int64_t id, const fs::path& db) {
  std::printf("task      %s (%s, %s)\n", t.name.c_str(), to_string(t.plat), to_string(t.role));
  std::printf("kernel    %s  [%.12s]\n", e.kernel_name.c_str(), e.kernel_hash.c_str());
  if (!e.reference_runtime.empty())
    std::printf("reference %s problem on %s%s\n", t.problem_format ? to_string(*t.problem_format) : "?", e.reference_runtime.c_str(),
                e.problem_path == tensor_path::cuda_ipc ? "; checks through CUDA IPC (inputs written and outputs "
                                               "compared in the kernel's device memory)"
                                             : "");
  std::printf("outcome   %s: %s\n", std::string(to_string(e.result)).c_str(), e.message.c_str());
  if (!e.checks.empty()) {
    double rel = 0, nerr = 0;
    size_t passed = 0;
    for (const auto& c : e.checks) {
      rel = std::max(rel, c.max_rel_err);
      nerr = std::max(nerr, c.norm_err);
      passed += c.passed;
    }
    std::printf("checks    %zu/%zu output checks passed; max rel err %.2g, max normalized err %.2g\n",
                passed, e.checks.size(), rel, nerr);
    for (const auto& c : e.checks)
      if (!c.passed)
        for (const auto& m : c.first_mismatches) std::printf("          %s %s\n", c.output.c_str(), m.c_str());
  }
  if (e.comparability) {
    const auto& c = *e.comparability;
    std::printf("time      %s protocol, %u trials on shape set '%s': mean %s, std %s, min %s, max %s, "
                "median %s (comparability mode: not paired, no decision)\n",
                c.protocol.c_str(), c.trials, e.timing_shape.c_str(), fmt_time(c.mean_seconds).c_str(),
                fmt_time(c.std_seconds).c_str(), fmt_time(c.min_seconds).c_str(),
                fmt_time(c.max_seconds).c_str(), fmt_time(c.median_seconds).c_str());
    if (c.eager_mean_seconds)
      std::printf("eager     PyTorch, same protocol: mean %s, median %s; speedup %.3fx (mean / mean)\n",
                  fmt_time(*c.eager_mean_seconds).c_str(), fmt_time(c.eager_median_seconds.value_or(0)).c_str(),
                  c.speedup_vs_eager.value_or(0));
  } else if (e.median_seconds) {
    std::printf("time      %s median, dispersion %.1f%% (MAD) on shape set '%s'\n",
                fmt_time(*e.median_seconds).c_str(), 100 * e.dispersion.value_or(0),
                e.timing_shape.c_str());
    std::printf("baseline  %s: %s median\n", e.baseline_name.c_str(),
                fmt_time(e.baseline_median_seconds.value_or(0)).c_str());
  }
  if (e.paired) {
    std::printf("speedup   %.3fx vs %s, 95%% CI [%.3f, %.3f], %zu paired rounds (stopped: %s)%s\n",
                e.paired->ratio, e.baseline_name.c_str(), e.paired->ci_low, e.paired->ci_high,
                e.paired->a_seconds.size(), e.paired->stop_reason.c_str(),
                e.paired->a_method == timing_method::wall
                    ? ""
                    : cat(", timed by ", method_text(e.paired->a_method), " / ", method_text(e.paired->b_method)).c_str());
  }
  if (e.aa)
    std::printf("A/A       %.3f, 95%% CI [%.3f, %.3f]\n", e.aa->ratio, e.aa->ci_low, e.aa->ci_high);
  // The gate's decision (gate/paired.h decide), the rule every verb uses.
  if (e.decision && e.epsilon) {
    const double eps = *e.epsilon;
    const std::string verdict = e.decision == decision::faster   ? "this kernel is faster"
                                : e.decision == decision::slower ? "this kernel is slower"
                                : e.decision == decision::same   ? "neither is faster"
                                                          : "undecided: the noise is too close to the effect";
    std::printf("decision  %s: faster means the interval's low end > %.3f (epsilon %.1f%%)\n",
                verdict.c_str(), 1 + eps, eps * 100);
  }
  if (e.roofline_fraction)
    std::printf("roofline  %.1f%% of the roofline floor\n", 100 * *e.roofline_fraction);
  if (e.trials_on == trial_site::device)
    std::printf("trials    inputs generated on the GPU, fp64 GPU reference (checked against the CPU "
                "reference on the smallest set), compared on the GPU\n");
  if (!e.stage_seconds.empty()) {
    std::string stages;
    for (const auto& [stage, sec] : e.stage_seconds) stages += " " + stage + " " + fmt_time(sec) + ",";
    stages.pop_back();
    std::printf("stages   %s; total %s\n", stages.c_str(), fmt_time(e.wall_seconds).c_str());
  }
  for (const auto& r : e.resources)
    std::printf("ptxas     %s: %d registers, %lld B shared, %lld B stack, %lld/%lld B spilled (st/ld)\n",
                r.function.c_str(), r.registers, static_cast<long long>(r.shared_bytes),
                static_cast<long long>(r.stack_bytes), static_cast<long long>(r.spill_stores),
                static_cast<long long>(r.spill_loads));
  if (e.result == outcome::compile_error || e.result == outcome::forbidden) {
    std::printf("\n%s\n", e.diagnostics.c_str());
  }
  if (id > 0) std::printf("stored    evaluation #%lld in %s\n", static_cast<long long>(id), db.c_str());
}

int run_eval(const common_options& common, const eval_options& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  // Ceilings are measured once per workspace for decision mode (roofline floors); the
  // comparability modes use them when cached and never wait for a measurement.
  auto ctx = open_context(ws, !o.no_time && o.gate.mode == gate::timing_mode::decision);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto t = find_task(o.task, ctx->where, problem_platform_for(o.platform_word, o.kernel));
  if (!t) return fail_with(t.error(), 2);
  auto cand = find_task_kernel(*t, o.kernel);
  if (!cand) return fail_with(cand.error(), 2);
  if (const std::string w = openmp_warning(*cand); !w.empty())
    std::fprintf(stderr, "lathe: warning: %s\n", w.c_str());
  // A PyTorch problem without kernels has no ABI baseline: eager PyTorch is timed live in the
  // comparability modes; decision mode checks only.
  const std::string base_name = o.baseline.empty() ? t->baseline : o.baseline;
  result<kernel_bundle> base = kernel_bundle{};
  if (!base_name.empty()) base = find_task_kernel(*t, base_name);
  if (!base) {
    std::fprintf(stderr, "lathe: baseline: %s\n", base.error().message.c_str());
    return 2;
  }
  gate_settings gs = o.gate;
  gs.time = !o.no_time;
  // A KernelBench problem without kernels: its own Model, eager PyTorch in a Python worker, is
  // the baseline of a paired decision.
  const std::optional<kernel_bundle> eager = base_name.empty() ? gate::eager_baseline(*t) : std::nullopt;
  if (eager && gs.mode == gate::timing_mode::decision && gs.time) {
    base = *eager;
    if (!o.json)
      std::fprintf(stderr, "lathe: %s has no baseline kernel: paired against eager PyTorch (the "
                           "problem's Model in a Python worker)\n", t->name.c_str());
  } else if (base_name.empty() && gs.mode == gate::timing_mode::decision && gs.time) {
    std::fprintf(stderr, "lathe: %s has no baseline kernel: checked, not timed (--baseline KERNEL for "
                         "a paired ratio; --mode kernelbench or do_bench times it against eager "
                         "PyTorch)\n", t->name.c_str());
    gs.time = false;
  }
  gs.aa_control = !o.no_aa;
  gs.progress = !o.json;
  const gate::gate_config cfg = make_gate_config(*ctx, *t, gs);
  gate::gate_request req;
  req.t = &*t;
  req.candidate = *cand;
  req.baseline = *base;
  req.prov = {"human", "", false};
  if (!base_name.empty() && cand->hash == base->hash) req.role = gate::screen_role::baseline;
  evaluation e = gate::evaluate(cfg, req);

  int64_t id = 0;
  if (auto stored = store_evaluation(*ctx, *cand, e)) id = *stored;
  else std::fprintf(stderr, "lathe: the evaluation was not stored: %s\n", stored.error().message.c_str());
  if (o.json) {
    json j = e;
    j["schema"] = "lathe.eval/1";
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_human(e, *t, id, ctx->ws.db());
  }
  // unstable: the kernel passed its checks and the machine could not decide; not a failing kernel.
  return e.result == outcome::ok ? 0 : e.result == outcome::unstable ? 3 : 1;
}

}  // namespace

void add_eval(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<eval_options>();
  CLI::App* sub = app.add_subcommand("eval", "gate one kernel: screen, compile, check, time against the baseline");
  sub->add_option("task", o->task,
                  "task directory, task.toml, the name of a shipped task, or a PyTorch problem file "
                  "(KernelBench or KLineage .py, KLineage definition .json; docs/problems.md)")
      ->required();
  sub->add_option("kernel", o->kernel, "kernel bundle (directory or .cpp/.cu file) or a kernel name of the task")->required();
  sub->add_option("--baseline", o->baseline, "kernel to compare with (default: the task's baseline)");
  add_platform_option(sub, o->platform_word, "cpu, or cuda when the kernel asks for the GPU");
  sub->add_flag("--json", o->json, "print the evaluation as JSON (schema lathe.eval/1)");
  sub->add_flag("--no-time", o->no_time, "stop after the correctness checks");
  sub->add_flag("--no-aa", o->no_aa, "skip the A/A control (no noise figure, no `unstable` verdict)");
  sub->add_option("--seeds", o->gate.seeds, "correctness trials per shape set (at least 3)")->capture_default_str();
  sub->add_option("--max-time", o->gate.max_time, "longest paired timing series, seconds")->capture_default_str();
  sub->add_flag("--quick", o->gate.quick, "half the timing effort: 2 process pairs, 4 rounds per paired series (wider intervals, larger margins)");
  sub->add_option_function<std::string>(
         "--start-workers",
         [o](const std::string& v) { o->gate.workers_one_by_one = v == "one-by-one"; },
         "at-once (default) or one-by-one: how the timing workers start (a ModelNew's import torch for "
         "seconds each); one-by-one measures the serial start against the default on one build")
      ->check(CLI::IsMember({"at-once", "one-by-one"}));
  sub->add_option("--target-rse", o->gate.target_rse,
                  "stop a timing series once the relative standard error of its log ratio is below "
                  "this (default 0.005 on CPU tasks, 0.0015 on CUDA tasks)");
  sub->add_option("--seed", o->gate.seed, "base seed of the inputs (default: random per evaluation)");
  add_enum_option(sub, "--mode", o->gate.mode, gate::timing_mode::do_bench,
                  "decision: lathe's paired protocol; kernelbench: KernelBench's cuda_event protocol "
                  "on the timed shape (--seeds trials, --warmup, --trials); do_bench: Triton's "
                  "do_bench (L2 flushed, 25 ms warm-up, 100 ms of repetitions). The last two are for "
                  "numbers next to those harnesses: no baseline, no decision");
  sub->add_option("--warmup", o->gate.warmup, "kernelbench mode: warm-up calls")->capture_default_str();
  sub->add_option("--trials", o->gate.trials, "kernelbench mode: timed calls")->capture_default_str();
  sub->add_flag("--refuse-torch-fallback", o->gate.refuse_torch_fallback,
                "a ModelNew that calls the reference's own torch ops in forward (KernelBench's torch "
                "fallback) is forbidden; without it, such calls are reported in the diagnostics");
  sub->add_flag("--host-trials", o->gate.host_trials,
                "CUDA tasks: generate inputs and references on the host even when the task has a "
                "GPU reference; PyTorch problems: move tensors through host memory, not CUDA IPC");
  sub->footer("A PyTorch problem file runs on CPU PyTorch for a .cpp kernel and on CUDA PyTorch for a .cu "
              "one (LATHE_PYTHON picks the interpreter); without a baseline kernel, a CPU KernelBench "
              "problem is paired against its own Model (eager PyTorch) in decision mode, other problems "
              "are checked only; the kernelbench and do_bench modes time against eager PyTorch.\n"
              "A KernelBench candidate may be a Python file defining class ModelNew (inline C++ through "
              "load_inline built before it runs; docs/python-kernels.md).\n"
              "Exit code 0 only when the outcome is ok; 3 when unstable (correct, the machine too noisy to "
              "decide: run again on a quieter machine); 1 for any other outcome; 2 for bad usage.");
  sub->callback([o, &common, &exit_code] { exit_code = run_eval(common, *o); });
}

}  // namespace lathe::cli
