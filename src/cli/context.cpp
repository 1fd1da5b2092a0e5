#include "cli/context.h"

#include "core/enum_parse.h"
#include "core/build_paths.h"
#include "cli/did_you_mean.h"

#include <unistd.h>

#include <cctype>
#include <optional>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/json.h"
#include "spec/bundle.h"
#include "gate/device_lock.h"
#include "gate/gpu_target.h"
#include "gate/host_target.h"
#include "gate/python_build.h"
#include "spec/safe_file.h"
#include "spec/task_file.h"

namespace fs = std::filesystem;

namespace lathe::cli {

namespace {

// The CPU ceilings are the machine's, so every workspace of this user on it shares them: they are
// kept beside the device locks (gate/device_lock.h: a folder of this user's alone, mode 0700, for
// as long as the machine is up) as well as in the workspace. Each fresh workspace used to measure
// them again, ~1.3 s of its first command on the 2-core VM, and a test suite makes hundreds.
std::string machine_ceilings_name(const std::string& key) {
  std::string name = "ceilings";
  for (char ch : key.substr(key.find('/')))
    name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ? ch : '_';
  return name + ".json";
}

std::optional<std::string> machine_ceilings(const std::string& key) {
  auto dir = gate::device_lock::own_directory();
  if (!dir) return std::nullopt;
  auto text = gate::read_beneath(*dir, machine_ceilings_name(key), 4096);
  if (!text) return std::nullopt;
  return *text;
}

void keep_machine_ceilings(const std::string& key, const std::string& json_text) {
  auto dir = gate::device_lock::own_directory();
  if (!dir) return;
  (void)gate::write_beneath(*dir, machine_ceilings_name(key), json_text, gate::write_mode::replace, 0600);
}

}  // namespace

paths locate() {
  paths p;
  std::error_code ec;
  p.exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  // Installed layout first (bin/../share/lathe), then the source tree this binary was built from.
  for (const fs::path& inc : {p.exe_dir / "../share/lathe/include", fs::path(build_paths::source_dir()) / "include"})
    if (fs::exists(inc / "lathe/abi.h", ec)) {
      p.include_dir = fs::weakly_canonical(inc, ec);
      break;
    }
  for (const fs::path& t : {p.exe_dir / "../share/lathe/tasks", fs::path(build_paths::source_dir()) / "tasks"})
    if (fs::is_directory(t, ec)) {
      p.tasks_dir = fs::weakly_canonical(t, ec);
      break;
    }
  for (const fs::path& d : {p.exe_dir / "../share/lathe/prompts", fs::path(build_paths::source_dir()) / "prompts"})
    if (fs::is_directory(d, ec)) {
      p.prompts_dir = fs::weakly_canonical(d, ec);
      break;
    }
  return p;
}

gate::gate_config make_gate_config(const context& ctx, const task& t, const gate_settings& s) {
  gate::gate_config cfg = gate::gate_config_for(s, t.plat);
  cfg.cache_dir = ctx.ws.cache();
  cfg.tools = ctx.tools;
  cfg.tgt = ctx.tgt;
  // A CUDA task runs on the GPU: its ceilings, cache and memory are the device's.
  if (t.plat == platform::cuda && ctx.gpu) cfg.tgt = *ctx.gpu;
  cfg.sandbox.worker_exe = ctx.where.exe_dir / "lathe-worker";
  // Each stage line with the seconds since the evaluation began.
  if (s.progress)
    cfg.progress = [begun = std::chrono::steady_clock::now()](const std::string& m) {
      const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
      std::fprintf(stderr, "… [%5.1f s] %s\n", at, m.c_str());
    };
  return cfg;
}

result<int64_t> store_evaluation(context& ctx, const kernel_bundle& k, evaluation& e) {
  if (!ctx.db) return fail(errc::store_error, "no store is open");
  (void)ctx.db->put_kernel(k);
  if (!e.ptx.empty())
    if (auto h = ctx.db->put_blob(e.ptx)) e.ptx_blob = *h;
  auto stored = ctx.db->add_evaluation(e);
  if (!stored) return tl::unexpected(stored.error());
  e.id = *stored;
  return *stored;
}

result<kernel_bundle> find_task_kernel(const task& t, const std::string& arg) {
  std::error_code ec;
  if (fs::exists(arg, ec)) return load_bundle(arg);
  if (auto p = find_kernel(t, arg)) return load_bundle(*p);
  return fail(errc::not_found, "no kernel '" + arg + "': not a path, and task '" + t.name +
                                   "' has no kernels/" + arg);
}

result<fs::path> find_task_path(const std::string& arg, const paths& where) {
  std::error_code ec;
  fs::path p(arg);
  if (fs::exists(p, ec)) return p;
  if (p.is_relative() && !arg.empty() && arg.find('/') == std::string::npos &&
      !where.tasks_dir.empty() && fs::exists(where.tasks_dir / arg / "task.toml", ec))
    return where.tasks_dir / arg;
  std::vector<std::string> shipped;
  if (!where.tasks_dir.empty())
    for (const auto& e : fs::directory_iterator(where.tasks_dir, ec))
      if (fs::exists(e.path() / "task.toml", ec)) shipped.push_back(e.path().filename().string());
  const std::string near = arg.find('/') == std::string::npos ? closest_name(arg, shipped) : "";
  return fail(errc::not_found, "no task '" + arg + "': not a path, and not a shipped task under " +
                                   (where.tasks_dir.empty() ? std::string("(none found)") : where.tasks_dir.string()) +
                                   (near.empty() ? "" : "; did you mean '" + near + "'?"));
}

result<task> find_task(const std::string& arg, const paths& where,
                       std::optional<platform> problem_platform) {
  auto p = find_task_path(arg, where);
  if (!p) return tl::unexpected(p.error());
  return load_task(*p, problem_platform);
}

platform problem_platform_of(const std::string& kernel_arg) {
  std::error_code ec;
  const fs::path k(kernel_arg);
  if (k.extension() == ".cu") return platform::cuda;
  if (k.extension() == ".py" && fs::is_regular_file(k, ec)) {
    // A Python kernel that asks for the GPU (inline CUDA, Triton, .cuda()): gate/python_build.h.
    std::ifstream in(k, std::ios::binary);
    std::string text(uint64_t{1} << 20, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (gate::names_cuda(text)) return platform::cuda;
  }
  if (fs::is_directory(k, ec))
    for (const auto& f : fs::directory_iterator(k, ec))
      if (f.path().extension() == ".cu") return platform::cuda;
  return platform::cpu;
}

std::optional<platform> problem_platform_word(const std::string& word) {
  if (word.empty()) return std::nullopt;
  return parse_enum(word, platform::cuda);
}

std::optional<platform> problem_platform_for(const std::string& word, const std::string& kernel_arg) {
  if (!word.empty()) return problem_platform_word(word);
  if (!kernel_arg.empty()) return problem_platform_of(kernel_arg);
  return std::nullopt;
}

// The one NVIDIA GPU of this machine, named without creating a CUDA context (which costs a
// few hundred milliseconds): its UUID from /proc/driver/nvidia/gpus/*/information, with the
// driver's version line. Empty with several GPUs (CUDA's device 0 is then not obviously
// which) or without the driver's /proc files.
std::string single_gpu_identity() {
  std::error_code ec;
  const fs::path gpus = "/proc/driver/nvidia/gpus";
  std::string uuid;
  int count = 0;
  for (const auto& d : fs::directory_iterator(gpus, ec)) {
    ++count;
    std::ifstream in(d.path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("GPU UUID:", 0) == 0) uuid = line.substr(line.find_first_not_of(" \t", 9));
  }
  if (count != 1 || uuid.empty()) return {};
  std::ifstream v("/proc/driver/nvidia/version");
  std::string version;
  std::getline(v, version);
  return uuid + "|" + version;
}

result<target> cached_gpu_target(store& db, const fs::path& probe, bool measure, bool refresh,
                                 const std::string& identity) {
  // The whole target, cached per GPU and driver: the probe needs a CUDA context, and every
  // `lathe eval` opens a context.
  const std::string whole_key = "gpu-target/" + identity;
  if (!identity.empty() && !refresh) {
    auto cached = db.get_measurement(whole_key);
    if (cached && *cached) {
      auto j = nlohmann::json::parse(**cached, nullptr, false);
      if (!j.is_discarded()) {
        target t;
        from_json(j, t);
        if (t.plat == platform::cuda && (!measure || t.copy_bytes_per_s > 0)) return t;
      }
    }
  }
  auto whole = cached_gpu_target_probed(db, probe, measure, refresh);
  if (whole && !identity.empty()) (void)db.put_measurement(whole_key, nlohmann::json(*whole).dump());
  return whole;
}

result<target> cached_gpu_target_probed(store& db, const fs::path& probe, bool measure, bool refresh) {
  auto t = gate::detect_gpu_target(probe, false);
  if (!t) return t;
  const std::string key = "ceilings/cuda/" + t->device + "/" + t->uuid;
  auto cached = db.get_measurement(key);
  if (cached && *cached) {
    auto j = nlohmann::json::parse(**cached, nullptr, false);
    if (!j.is_discarded()) {
      t->copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
      t->cache_bytes_per_s = j.value("cache_bytes_per_s", 0.0);
      t->flops_per_s = j.value("flops_per_s", 0.0);
      t->tensor_flops_per_s = j.value("tensor_flops_per_s", 0.0);
    }
  }
  if ((measure && t->copy_bytes_per_s <= 0) || refresh) {
    auto m = gate::detect_gpu_target(probe, true);
    if (!m) return tl::unexpected(m.error());
    // Ratchet up, as on the CPU: another process on the device makes a reading low, and a low
    // ceiling puts the roofline floor above honest kernels.
    t->copy_bytes_per_s = std::max(t->copy_bytes_per_s, m->copy_bytes_per_s);
    t->cache_bytes_per_s = std::max(t->cache_bytes_per_s, m->cache_bytes_per_s);
    t->flops_per_s = std::max(t->flops_per_s, m->flops_per_s);
    t->tensor_flops_per_s = std::max(t->tensor_flops_per_s, m->tensor_flops_per_s);
    nlohmann::json j{{"copy_bytes_per_s", t->copy_bytes_per_s},
                     {"cache_bytes_per_s", t->cache_bytes_per_s},
                     {"flops_per_s", t->flops_per_s},
                     {"tensor_flops_per_s", t->tensor_flops_per_s}};
    (void)db.put_measurement(key, j.dump());
  }
  return t;
}

result<context> open_context(const std::optional<fs::path>& workspace_dir, bool measure_ceilings,
                             bool refresh) {
  context c;
  c.where = locate();
  if (c.where.include_dir.empty())
    return fail(errc::not_found, "cannot find lathe/abi.h next to the lathe binary or in its source tree");
  std::error_code ec;
  auto ws = open_workspace(workspace_dir, fs::current_path(ec));
  if (!ws) return tl::unexpected(ws.error());
  c.ws = *ws;
  auto db = store::open(c.ws.db());
  if (!db) return tl::unexpected(db.error());
  c.db.emplace(std::move(*db));
  auto tc = gate::detect_toolchain(c.where.include_dir);
  if (!tc) return tl::unexpected(tc.error());
  c.tools = *tc;
  c.tgt = gate::detect_cpu_target();
  if (measure_ceilings) {
    const std::string key = "ceilings/cpu/" + c.tgt.device + "/" + c.tgt.arch + "/" +
                            std::to_string(c.tgt.cores);
    auto take = [&c](const std::string& text) {
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return;
      // Ceilings only ratchet up: a measurement taken while other work shares the cores reads
      // low (seen here: 37 GFLOP/s under load against ~54 per core alone), and a low ceiling
      // would put the roofline floor above honest kernels.
      c.tgt.copy_bytes_per_s = std::max(c.tgt.copy_bytes_per_s, j.value("dram_bytes_per_s", 0.0));
      c.tgt.cache_bytes_per_s = std::max(c.tgt.cache_bytes_per_s, j.value("llc_bytes_per_s", 0.0));
      c.tgt.l2_bytes_per_s = std::max(c.tgt.l2_bytes_per_s, j.value("l2_bytes_per_s", 0.0));
      c.tgt.flops_per_s = std::max(c.tgt.flops_per_s, j.value("flops_per_s", 0.0));
    };
    auto cached = c.db->get_measurement(key);
    if (cached && *cached) take(**cached);
    const std::optional<std::string> machine = machine_ceilings(key);
    if (machine) take(*machine);
    // Ceilings cached before the L2 one existed are measured again once (the others ratchet).
    const bool no_l2 = c.tgt.l2_bytes_per_s <= 0 && gate::l2_ceiling_measurable();
    const bool measure = c.tgt.copy_bytes_per_s <= 0 || no_l2 || refresh;
    if (measure) {
      // Exclusive, as timing is: ceilings measured beside another lathe's build or series would
      // be low, and a low ceiling puts the roofline floor above honest kernels. A lock that
      // cannot be taken leaves the measurement unguarded; the evaluation says why it fails.
      auto lock = gate::device_lock::acquire("cpu", gate::device_lock::mode::exclusive);
      gate::cpu_ceilings m = gate::measure_cpu_ceilings(c.tgt);
      c.tgt.copy_bytes_per_s = std::max(c.tgt.copy_bytes_per_s, m.dram_bytes_per_s);
      c.tgt.cache_bytes_per_s = std::max(c.tgt.cache_bytes_per_s, m.llc_bytes_per_s);
      c.tgt.l2_bytes_per_s = std::max(c.tgt.l2_bytes_per_s, m.l2_bytes_per_s);
      c.tgt.flops_per_s = std::max(c.tgt.flops_per_s, m.flops_per_s);
    }
    const std::string now = nlohmann::json{{"dram_bytes_per_s", c.tgt.copy_bytes_per_s},
                                           {"llc_bytes_per_s", c.tgt.cache_bytes_per_s},
                                           {"l2_bytes_per_s", c.tgt.l2_bytes_per_s},
                                           {"flops_per_s", c.tgt.flops_per_s}}.dump();
    if (measure || !cached || !*cached || **cached != now) (void)c.db->put_measurement(key, now);
    if (measure || machine != now) keep_machine_ceilings(key, now);
  }
  if (gate::has_cuda_device()) {
    const fs::path probe = c.where.exe_dir / "lathe-probe-cuda";
    if (!fs::exists(probe, ec)) {
      c.gpu_error = "no " + probe.string() + " (lathe was built without the CUDA toolkit)";
    } else if (auto g = cached_gpu_target(*c.db, probe, measure_ceilings, refresh, single_gpu_identity())) {
      c.gpu = std::move(*g);
    } else {
      c.gpu_error = g.error().message;
    }
  }
  return c;
}

}  // namespace lathe::cli
