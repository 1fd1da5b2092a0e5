// lathe profile TASK KERNEL: Nsight Compute's counters for a CUDA kernel, stored as a profile
// bound to the kernel hash and the device (gate/profile.h). And the hidden `profile-run`, the
// child that ncu starts and follows into the kernel's worker.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "gate/device_lock.h"
#include "gate/host_target.h"
#include "gate/process.h"
#include "gate/profile.h"
#include "spec/bundle.h"
#include "spec/task_file.h"
#include "core/lines.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

// Exit codes beyond main.cpp's 0/1/2: a tool or device the verb needs is not on this machine.
constexpr int exit_missing_tool = 3;

struct profile_options {
  std::string task, kernel, shape, ncu;
  uint32_t launches = 3;
  double timeout_s = 600;
  bool json = false, trust_kernel = false, verbose = false;
  std::string lock_dir;  // profile-run: the parent's device-lock directory
};

std::string opt_pct(const std::optional<double>& v) {
  if (!v) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", *v);
  return b;
}

std::string fmt_time(double s) {
  char b[32];
  if (s >= 1e-3)
    std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  else
    std::snprintf(b, sizeof b, "%.2f us", s * 1e6);
  return b;
}

// A command as a shell would take it back, for --verbose.
std::string shell_text(const std::vector<std::string>& cmd) {
  std::string out;
  for (const auto& a : cmd) {
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                         "OPQRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos;
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (out.empty() ? "" : " ") + (plain ? a : q + "'");
  }
  return out;
}

std::string dims_text(const std::array<int64_t, 3>& d) {
  return "(" + std::to_string(d[0]) + "," + std::to_string(d[1]) + "," + std::to_string(d[2]) + ")";
}

// The CUDA version nvcc names ("Build cuda_13.0.r13.0/…" -> "13-0"), for the package name.
std::string cuda_package_version(const std::string& nvcc_version) {
  const auto at = nvcc_version.find("cuda_");
  if (at == std::string::npos) return "<major>-<minor>";
  std::string v;
  for (size_t i = at + 5; i < nvcc_version.size(); ++i) {
    const char c = nvcc_version[i];
    if (c == '.') {
      if (v.find('-') != std::string::npos) break;
      v += '-';
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      v += c;
    } else {
      break;
    }
  }
  return v.empty() ? "<major>-<minor>" : v;
}

void print_profile(const profile& p, const task& t, const fs::path& db) {
  std::string symbols;
  for (const auto& s : t.shapes)
    if (s.name == p.shape_set)
      for (const auto& [k, v] : s.symbols)
        symbols += (symbols.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  if (!symbols.empty()) symbols = " (" + symbols + ")";
  std::printf("task      %s, shape set '%s'%s\n", p.task.c_str(), p.shape_set.c_str(),
              symbols.c_str());
  std::printf("kernel    %s  [%.12s]\n", p.kernel_name.c_str(), p.kernel_hash.c_str());
  std::printf("device    %s (%s); Nsight Compute %s, clocks not locked (--clock-control none)\n",
              p.tgt.device.empty() ? "unknown device" : p.tgt.device.c_str(), p.tgt.arch.c_str(),
              p.tool_version.c_str());
  std::printf(
      "          %u calls of lathe_launch, each launch replayed by the profiler; nothing "
      "timed, nothing checked\n",
      p.launches);
  for (const auto& k : p.kernels) {
    std::printf("\n%s  grid %s block %s, %u launch%s\n", k.name.c_str(), dims_text(k.grid).c_str(),
                dims_text(k.block).c_str(), k.launches, k.launches == 1 ? "" : "es");
    std::printf("  duration     %s (under the profiler)\n",
                k.duration_seconds ? fmt_time(*k.duration_seconds).c_str() : "n/a");
    std::printf("  throughput   compute %s, memory %s, dram %s (of peak)\n",
                opt_pct(k.compute_throughput_pct).c_str(), opt_pct(k.memory_throughput_pct).c_str(),
                opt_pct(k.dram_throughput_pct).c_str());
    std::printf("  occupancy    %s achieved\n", opt_pct(k.achieved_occupancy_pct).c_str());
    std::printf("  L2 hit rate  %s\n", opt_pct(k.l2_hit_rate_pct).c_str());
    if (!k.stalls.empty() && k.cycles_per_issue && *k.cycles_per_issue > 0) {
      std::string top;
      int shown = 0;
      for (const auto& s : k.stalls) {
        if (shown == 4 || s.cycles_per_issue <= 0) break;
        if (issue_cycle(s)) continue;
        char b[96];
        std::snprintf(b, sizeof b, "%s%s %.1f (%.0f%%)", shown ? ", " : "", s.reason.c_str(),
                      s.cycles_per_issue, 100 * s.cycles_per_issue / *k.cycles_per_issue);
        top += b;
        ++shown;
      }
      std::printf("  stalls       %.1f cycles between issues: %s\n", *k.cycles_per_issue,
                  top.c_str());
    }
  }
  if (p.id > 0)
    std::printf("\nstored    profile #%lld in %s\n", static_cast<long long>(p.id), db.c_str());
}

// The profiler first: without it there is nothing to do, and nothing is made up instead.
// Prints why and returns nothing when ncu or a CUDA device is missing.
std::optional<fs::path> find_profiler(const profile_options& o, const context& ctx) {
  std::optional<fs::path> ncu;
  if (!o.ncu.empty()) {
    if (access(o.ncu.c_str(), X_OK) == 0) ncu = fs::path(o.ncu);
  } else {
    const char* path = std::getenv("PATH");
    ncu = gate::find_ncu(path ? path : "");
  }
  if (!ncu) {
    std::fprintf(stderr,
                 "lathe: Nsight Compute (ncu) not found (%s%s). Install Nsight Compute: the CUDA "
                 "repository's package cuda-nsight-compute-%s, or the standalone installer from "
                 "https://developer.nvidia.com/nsight-compute; or pass --ncu PATH. Nothing was "
                 "profiled or stored.\n",
                 o.ncu.empty() ? "looked in " : "no executable at ",
                 o.ncu.empty() ? gate::ncu_search_description().c_str() : o.ncu.c_str(),
                 cuda_package_version(ctx.tools.nvcc_version).c_str());
    return std::nullopt;
  }
  if (!gate::has_cuda_device()) {
    std::fprintf(stderr,
                 "lathe: no CUDA device on this machine (/dev/nvidiactl): nothing to profile. "
                 "Nothing was stored.\n");
    return std::nullopt;
  }
  return ncu;
}

// The shape set to profile, or nothing after saying which ones the task has.
const shape_set* profiled_shape(const task& t, const std::string& shape) {
  const shape_set* shapes = gate::profile_shape(t, shape);
  if (!shapes) {
    std::string names;
    for (const auto& s : t.shapes) names += (names.empty() ? "" : ", ") + s.name;
    std::fprintf(stderr, "lathe: task '%s' has no shape set '%s' (it has: %s)\n", t.name.c_str(),
                 shape.c_str(), names.c_str());
  }
  return shapes;
}

// ncu's command line: ncu runs this executable's hidden `profile-run` on the kernel.
std::vector<std::string> profiler_command(const profile_options& o, const context& ctx,
                                          const task& t, const kernel_bundle& k,
                                          const shape_set& shapes, const fs::path& ncu) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> app = {self.string(),
                                  "--workspace",
                                  ctx.ws.root.string(),
                                  "profile-run",
                                  fs::absolute(t.dir).string(),
                                  fs::absolute(k.origin).string(),
                                  "--shape",
                                  shapes.name,
                                  "--launches",
                                  std::to_string(o.launches),
                                  "--lock-dir",
                                  gate::device_lock::directory()};
  if (o.trust_kernel) app.push_back("--trust-kernel");
  if (o.verbose) app.push_back("--verbose");
  return gate::ncu_command(ncu, gate::resolved_isa(k, ctx.tgt), app);
}

// --verbose: everything ncu and profile-run printed, verbatim (a profile that comes back
// empty says why only there: which processes ncu connected to, what the worker had mapped).
void print_profiler_output(const gate::tool_result& r, bool table_too) {
  std::fprintf(stderr, "lathe: Nsight Compute's output (exit code %d, %.1f s, %zu bytes%s%s):\n",
               r.exit_code, r.seconds, r.output.size(),
               r.output.size() >= (1u << 20) ? ", cut at 1 MiB" : "",
               table_too ? "" : ", table rows left out");
  for (const std::string_view line : split_lines(r.output))
    if (table_too || line.empty() || line.front() != '"')
      std::fprintf(stderr, "  | %.*s\n", static_cast<int>(line.size()), line.data());
  std::fprintf(stderr, "lathe: end of Nsight Compute's output\n");
}

int report_profiler_failure(const profile_options& o, const gate::tool_result& r,
                            const result<std::vector<profiled_kernel>>& kernels) {
  // One line, verbatim from the profiler (ERR_NVGPUCTRPERM and the like); no figures. With
  // --verbose, the reading's own complaint and then everything.
  std::fprintf(stderr, "lathe: profiling failed: %s\n", gate::ncu_failure(r.output).c_str());
  if (o.verbose) {
    std::fprintf(stderr, "lathe: ncu exit code %d; reading its table: %s\n", r.exit_code,
                 kernels ? "fine" : kernels.error().message.c_str());
    print_profiler_output(r, true);
  }
  if (r.output.find("ERR_NVGPUCTRPERM") != std::string::npos && geteuid() == 0 && !o.trust_kernel)
    std::fprintf(stderr,
                 "lathe: the worker ran as 'nobody'; where only administrators may read the "
                 "counters, --trust-kernel runs it as root (for kernels you trust)\n");
  return 1;
}

// The profile as stored: the kernels ncu measured, bound to the kernel and the device.
profile profile_of(const profile_options& o, const context& ctx, const task& t,
                   const kernel_bundle& k, const shape_set& shapes, const gate::tool_result& r,
                   const std::string& version, const std::vector<std::string>& cmd) {
  profile p;
  p.task = t.name;
  p.kernel_hash = k.hash;
  p.kernel_name = k.name;
  p.shape_set = shapes.name;
  const gate::ncu_device dev = gate::parse_ncu_device(r.output);
  if (ctx.gpu) p.tgt = *ctx.gpu;  // the device as lathe reads it, where it can
  p.tgt.plat = platform::cuda;
  if (p.tgt.device.empty()) p.tgt.device = dev.name;
  if (p.tgt.arch.empty()) p.tgt.arch = dev.arch;
  p.toolchain = ctx.tools.nvcc_version;
  p.tool_version = version;
  p.command = cmd;
  p.launches = o.launches;
  p.raw_csv = r.output;
  return p;
}

int store_and_print(const profile_options& o, context& ctx, const task& t,
                    const kernel_bundle& k, profile& p) {
  (void)ctx.db->put_kernel(k);
  auto id = ctx.db->add_profile(p);
  if (!id) {
    std::fprintf(stderr, "lathe: the profile was not stored: %s\n", id.error().message.c_str());
    return 1;
  }
  p.id = *id;
  if (auto stored = ctx.db->profiles_for(p.kernel_hash); stored && !stored->empty())
    p.created_at = stored->back().created_at;
  if (o.json) {
    json j = p;
    j["schema"] = "lathe.profile/1";
    std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    print_profile(p, t, ctx.ws.db());
  }
  return 0;
}

int run_profile(const common_options& common, const profile_options& o) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, false);
  if (!ctx) return fail_with(ctx.error(), 2);
  auto t = find_task(o.task, ctx->where);
  if (!t) return fail_with(t.error(), 2);
  if (t->plat != platform::cuda) {
    std::fprintf(stderr,
                 "lathe: profiling reads a CUDA device's counters; task '%s' is a %s task\n",
                 t->name.c_str(), to_string(t->plat));
    return 2;
  }
  auto k = find_task_kernel(*t, o.kernel);
  if (!k) return fail_with(k.error(), 2);
  const shape_set* shapes = profiled_shape(*t, o.shape);
  if (!shapes) return 2;
  if (o.launches < 1) {
    std::fprintf(stderr, "lathe: --launches must be at least 1\n");
    return 2;
  }

  const std::optional<fs::path> ncu = find_profiler(o, *ctx);
  if (!ncu) return exit_missing_tool;
  const std::string version = gate::ncu_version(*ncu);

  gate::profile_run_config cfg;
  cfg.t = &*t;
  cfg.kernel = *k;
  cfg.shape_set = shapes->name;
  cfg.launches = o.launches;
  cfg.cache_dir = ctx->ws.cache();
  cfg.tools = ctx->tools;
  cfg.host = ctx->tgt;
  // Compile errors are reported here, without a profiler; the child then finds both objects
  // in the cache.
  if (!o.json) std::fprintf(stderr, "… compile\n");
  auto built = gate::build_for_profile(cfg);
  if (!built) return fail_with(built.error(), 1);

  const std::vector<std::string> cmd = profiler_command(o, *ctx, *t, *k, *shapes, *ncu);
  if (!o.json) std::fprintf(stderr, "… profile (Nsight Compute %s)\n", version.c_str());
  if (o.verbose)
    std::fprintf(stderr, "lathe: running (as uid %d): %s\n", static_cast<int>(geteuid()),
                 shell_text(cmd).c_str());
  gate::tool_result r = gate::run_tool(cmd, o.timeout_s);
  if (r.timed_out) {
    std::fprintf(
        stderr,
        "lathe: the profiler did not finish within %.0f s (--timeout). Nothing was stored.\n",
        o.timeout_s);
    if (o.verbose) print_profiler_output(r, true);
    return 1;
  }
  auto kernels = gate::parse_ncu_csv(r.output);
  if (r.exit_code != 0 || !kernels) return report_profiler_failure(o, r, kernels);

  if (o.verbose) print_profiler_output(r, false);

  profile p = profile_of(o, *ctx, *t, *k, *shapes, r, version, cmd);
  p.kernels = std::move(*kernels);
  return store_and_print(o, *ctx, *t, *k, p);
}

// The child: under ncu, with the environment ncu gives it (run_tool passes only PATH and LANG
// to ncu; ncu adds its own). Opens no store and probes no device: it only builds (cached),
// stages inputs and runs the kernel.
int run_profile_child(const common_options& common, const profile_options& o) {
  auto failed = [](const std::string& why, int code) {
    std::fprintf(stderr, "lathe profile-run: %s\n", why.c_str());
    return code;
  };
  if (!o.lock_dir.empty()) setenv("LATHE_LOCK_DIR", o.lock_dir.c_str(), 1);
  const paths where = locate();
  std::error_code ec;
  std::optional<fs::path> wsdir;
  if (common.workspace) wsdir = *common.workspace;
  auto ws = open_workspace(wsdir, fs::current_path(ec));
  if (!ws) return failed(ws.error().message, 2);
  auto tools = gate::detect_toolchain(where.include_dir);
  if (!tools) return failed(tools.error().message, 2);
  auto t = load_task(o.task);
  if (!t) return failed(t.error().message, 2);
  auto k = load_bundle(o.kernel);
  if (!k) return failed(k.error().message, 2);
  gate::profile_run_config cfg;
  cfg.t = &*t;
  cfg.kernel = *k;
  cfg.shape_set = o.shape;
  cfg.launches = std::max<uint32_t>(o.launches, 1);
  cfg.cache_dir = ws->cache();
  cfg.tools = *tools;
  cfg.host = gate::detect_cpu_target();
  cfg.sandbox.worker_exe = where.exe_dir / "lathe-worker";
  cfg.trust_kernel = o.trust_kernel;
  if (o.verbose) {
    // Not "lathe profile-run:" (ncu_failure takes that prefix for the child's failure).
    cfg.diagnostic = [](const std::string& s) {
      std::fprintf(stderr, "[lathe profile-run] %s\n", s.c_str());
      std::fflush(stderr);
    };
    cfg.progress = cfg.diagnostic;
  }
  auto r = gate::profile_run(cfg);
  if (!r) return failed(r.error().message, 1);
  return 0;
}

}  // namespace

void add_profile(CLI::App& app, const common_options& common, int& exit_code) {
  auto o = std::make_shared<profile_options>();
  CLI::App* sub = app.add_subcommand(
      "profile", "Nsight Compute counters of a CUDA kernel, stored as a profile of its hash");
  sub->add_option("task", o->task, "task directory, task.toml, or the name of a shipped task")
      ->required();
  sub->add_option("kernel", o->kernel,
                  "kernel bundle (directory or .cu file) or a kernel name of the task")
      ->required();
  sub->add_option("--shape", o->shape,
                  "shape set whose inputs the kernel runs on (default: the timed one)");
  sub->add_option("--launches", o->launches, "calls of lathe_launch under the profiler")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print the stored profile as JSON (schema lathe.profile/1)");
  sub->add_option("--ncu", o->ncu,
                  "the ncu executable to use (default: searched in PATH, "
                  "/usr/local/cuda/bin, /opt/nvidia/nsight-compute/*)");
  sub->add_flag("--trust-kernel", o->trust_kernel,
                "run the kernel's worker as lathe's own user (no drop to 'nobody'): needed where "
                "only administrators may read the GPU's counters and lathe runs as root");
  sub->add_option("--timeout", o->timeout_s, "longest profiler run, seconds")
      ->capture_default_str();
  sub->add_flag("--verbose", o->verbose,
                "print the ncu command, and everything ncu and the profiled process printed "
                "(on failure, the table too): who ran, the environment and descriptors the "
                "worker got, whether ncu's libraries reached it");
  sub->footer(
      "Runs `ncu --clock-control none --target-processes all --csv --page raw --metrics …` on a "
      "worker that calls the kernel on one trial's inputs: memory and compute throughput, "
      "achieved occupancy, L2 hit rate and warp stall reasons per CUDA function. Nothing is timed "
      "and nothing is checked (use `lathe eval` for that); durations are under the profiler. The "
      "kernel runs without the system-call filter, which would stop the profiler's library in its "
      "worker.\nExit code 0 when a profile was stored; 1 when the kernel does not build or the "
      "profiler failed (its message is printed verbatim, nothing is stored); 2 for bad usage; 3 "
      "when Nsight Compute or a CUDA device is missing.");
  sub->callback([o, &common, &exit_code] { exit_code = run_profile(common, *o); });

  // The child ncu starts (hidden: an empty group keeps it out of --help).
  auto c = std::make_shared<profile_options>();
  CLI::App* child = app.add_subcommand("profile-run", "the process `lathe profile` runs under ncu");
  child->group("");
  child->add_option("task", c->task)->required();
  child->add_option("kernel", c->kernel)->required();
  child->add_option("--shape", c->shape);
  child->add_option("--launches", c->launches);
  child->add_option("--lock-dir", c->lock_dir);
  child->add_flag("--trust-kernel", c->trust_kernel);
  child->add_flag("--verbose", c->verbose);
  child->callback([c, &common, &exit_code] { exit_code = run_profile_child(common, *c); });
}

}  // namespace lathe::cli
