// lathe doctor: what this machine offers lathe, and what is missing, in words.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/context.h"
#include "cli/fail.h"
#include "cli/proposer_choice.h"
#include "cli/verbs.h"
#include "core/json.h"
#include "core/text.h"
#include "gate/cpu/landlock.h"
#include "gate/cuda_tools.h"
#include "gate/host_target.h"
#include "gate/nvml.h"
#include "gate/process.h"
#include "gate/profile.h"
#include "llm/config.h"
#include "llm/factory.h"

namespace fs = std::filesystem;

namespace lathe::cli {
namespace {

// Whether the compiler can build and link a one-line program with `flags` (OpenMP, OpenBLAS).
bool can_link(const std::vector<std::string>& flags, const std::string& code) {
  char dir[] = "/tmp/lathe-doctor-XXXXXX";
  if (!mkdtemp(dir)) return false;
  const std::string src = std::string(dir) + "/t.cpp";
  if (FILE* f = std::fopen(src.c_str(), "w")) {
    std::fputs(code.c_str(), f);
    std::fclose(f);
  }
  std::vector<std::string> cmd{"g++", src, "-o", std::string(dir) + "/t"};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  bool ok = gate::run_tool(cmd, 60).exit_code == 0;
  std::error_code ec;
  fs::remove_all(dir, ec);
  return ok;
}

// The CUDA tools a user profiles and debugs kernels with; nvcc is reported by the toolchain.
constexpr const char* cuda_tool_names[] = {"ncu", "compute-sanitizer", "cuobjdump", "nsys"};

// ncu is looked for where the profile stage looks (it also knows Nsight Compute's own install
// directories), so that the doctor names the ncu `lathe profile` runs.
gate::cuda_tool find_tool(const std::string& name) {
  if (name != "ncu") return gate::find_cuda_tool(name);
  gate::cuda_tool t{name, {}, {}};
  const char* path = std::getenv("PATH");
  if (auto p = gate::find_ncu(path ? path : "")) {
    t.path = *p;
    t.version = gate::ncu_version(*p);
  }
  return t;
}

std::string where_searched(const std::string& name) {
  return name == "ncu" ? gate::ncu_search_description() : "PATH, /usr/local/cuda/bin";
}

std::string bytes_text(uint64_t b) {
  char buf[32];
  if (b >= (uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1u << 30));
  else if (b >= (uint64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1u << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(b >> 10));
  return buf;
}

std::string cuda_version_text(int32_t v) {  // 12080 -> "12.8"
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

void print_gpu(const target& g, const std::optional<gpu_snapshot>& now) {
  std::printf("gpu        %s: %s (compute capability %d.%d), %u SMs, %s\n", g.device.c_str(),
              g.arch.c_str(), g.cc_major, g.cc_minor, g.cores, g.uuid.c_str());
  std::printf("           L2 %s, memory %s (%u-bit bus), shared memory %s per block (opt-in), %s per SM, "
              "%u registers per SM\n",
              bytes_text(g.llc_bytes).c_str(), bytes_text(g.memory_bytes).c_str(), g.memory_bus_bits,
              bytes_text(g.smem_optin_bytes).c_str(), bytes_text(g.smem_per_sm_bytes).c_str(),
              g.registers_per_sm);
  std::printf("           peak clocks SM %u MHz, memory %u MHz; CUDA driver %s, runtime %s\n",
              g.sm_clock_mhz, g.mem_clock_mhz, cuda_version_text(g.driver_version).c_str(),
              cuda_version_text(g.runtime_version).c_str());
  std::printf("gpu caps   %s (kernels build for %s)\n", join(g.capabilities, " ").c_str(), g.arch.c_str());
  if (g.copy_bytes_per_s > 0)
    std::printf("gpu ceil   copy %.0f GB/s (device memory), %.0f GB/s (in L2); GEMM bf16 %.1f TFLOP/s, "
                "fp32 %.1f TFLOP/s (measured, cuBLAS)\n",
                g.copy_bytes_per_s / 1e9, g.cache_bytes_per_s / 1e9, g.tensor_flops_per_s / 1e12,
                g.flops_per_s / 1e12);
  else
    std::printf("gpu ceil   not measured yet (run `lathe doctor` without --no-measure)\n");
  if (now) {
    const auto reasons = gate::throttle_reason_names(now->throttle_reasons);
    std::printf("gpu now    SM %u MHz, memory %u MHz, %d C, %.0f W; %s%s%s%s\n", now->sm_clock_mhz,
                now->mem_clock_mhz, now->temperature_c, now->power_w,
                gate::is_throttled(now->throttle_reasons) ? "THROTTLED" : "not throttled",
                reasons.empty() ? "" : " (", join(reasons, ", ").c_str(), reasons.empty() ? "" : ")");
  } else {
    std::printf("gpu now    no NVML reading (libnvidia-ml.so.1 missing or not initialized)\n");
  }
}

// --- model: lathe.toml (llm/config.h) -------------------------------------------------------

// What the doctor says about the model: the file found (or none), its settings, and whether the
// key variable is set. The key's value is never read into the report.
struct model_report {
  std::vector<fs::path> searched;
  std::optional<llm::config> cfg;
  std::string error;  // the file's error, as load_config words it
  bool key_set = false;
};

model_report read_model(const workspace& ws) {
  model_report m;
  const auto env = llm::process_env();
  m.searched = llm::config_candidates(ws.root, env);
  auto found = find_model_config(ws, env);
  if (!found) {
    m.error = found.error().message;
    return m;
  }
  m.cfg = found->cfg;
  if (m.cfg && !m.cfg->key_env.empty()) {
    auto v = env(m.cfg->key_env);
    m.key_set = v && !v->empty();
  }
  return m;
}

// Something to fix: a broken file, or a key variable that is named but unset.
bool model_needs_fixing(const model_report& m) {
  return !m.error.empty() || (m.cfg && !m.cfg->key_env.empty() && !m.key_set);
}

json limits_json(const llm::limits& l) {
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  return json{{"steps", opt(l.run.steps)},   {"evals", opt(l.run.evals)},
              {"calls", opt(l.calls)},       {"tokens", opt(l.run.tokens)},
              {"usd", opt(l.run.usd)},       {"seconds", opt(l.run.seconds)}};
}

json model_json(const model_report& m) {
  json searched = json::array();
  for (const auto& p : m.searched) searched.push_back(p.string());
  json j{{"config", m.cfg ? json(m.cfg->file.string()) : json(nullptr)},
         {"searched", searched},
         {"error", m.error.empty() ? json(nullptr) : json(m.error)},
         {"offline", !m.cfg}};
  if (!m.cfg) return j;
  const llm::config& c = *m.cfg;
  j["provider"] = llm::to_string(c.provider);
  j["model"] = c.model;
  j["base_url"] = c.base_url;
  j["key_env"] = c.key_env;
  j["key_set"] = m.key_set;
  auto p = c.model_price();
  j["price"] = p ? json{{"input_per_million", p->input_per_million},
                        {"output_per_million", p->output_per_million}}
                 : json(nullptr);
  j["limits"] = limits_json(c.caps);
  j["concurrency"] = c.concurrency;
  j["timeouts"] = {{"connect_seconds", c.timeout.connect_seconds},
                   {"total_seconds", c.timeout.total_seconds}};
  j["retries"] = {{"max_attempts", c.retry.max_attempts},
                  {"initial_backoff_seconds", c.retry.initial_backoff_seconds},
                  {"max_backoff_seconds", c.retry.max_backoff_seconds}};
  j["command"] = c.provider == llm::provider_kind::command
                     ? json{{"argv", c.command.argv},
                            {"env", c.command.env},
                            {"timeout_seconds", c.command.timeout_seconds}}
                     : json(nullptr);
  j["cassettes"] = c.cassettes == llm::cassette_mode::off
                       ? json(nullptr)
                       : json{{"mode", llm::to_string(c.cassettes)},
                              {"dir", c.cassette_dir.string()}};
  return j;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void print_model(const model_report& m) {
  if (!m.error.empty()) {
    std::printf("model      lathe.toml has an error, so no model is used: %s\n", m.error.c_str());
    return;
  }
  if (!m.cfg) {
    std::vector<std::string> where;
    for (const auto& p : m.searched) where.push_back(p.string());
    std::printf("model      none: rules engine only (offline); lathe.toml looked for in %s\n",
                join(where, ", ").c_str());
    return;
  }
  const llm::config& c = *m.cfg;
  std::printf("model      %s from %s\n", c.provenance_detail().c_str(), c.file.c_str());
  const char* pad = "           ";
  if (c.provider == llm::provider_kind::command) {
    std::printf("%sruns %s (timeout %s s); it sees only %s\n", pad, join(c.command.argv, " ").c_str(),
                number_text(c.command.timeout_seconds).c_str(),
                c.command.env.empty() ? "an empty environment" : join(c.command.env, " ").c_str());
  } else if (c.provider != llm::provider_kind::replay) {
    std::string key;
    if (c.key_env.empty())
      key = "no key (key_env = \"\")";
    else if (m.key_set)
      key = "key $" + c.key_env + " is set (not shown)";
    else
      key = "key $" + c.key_env + " is NOT SET: export it before a run";
    std::printf("%sbase URL %s; %s\n", pad, c.base_url.c_str(), key.c_str());
  }
  if (auto p = c.model_price())
    std::printf("%sprice $%s in, $%s out per million tokens\n", pad,
                number_text(p->input_per_million).c_str(), number_text(p->output_per_million).c_str());
  else if (c.provider == llm::provider_kind::openai || c.provider == llm::provider_kind::anthropic)
    std::printf("%sprice none for %s in [prices]: costs are stored as unknown\n", pad, c.model.c_str());
  std::vector<std::string> lim;
  const auto& l = c.caps;
  if (l.run.steps) lim.push_back("steps " + std::to_string(*l.run.steps));
  if (l.run.evals) lim.push_back("evals " + std::to_string(*l.run.evals));
  if (l.calls) lim.push_back("calls " + std::to_string(*l.calls));
  if (l.run.tokens) lim.push_back("tokens " + std::to_string(*l.run.tokens));
  if (l.run.usd) lim.push_back("usd $" + number_text(*l.run.usd));
  if (l.run.seconds) lim.push_back("seconds " + number_text(*l.run.seconds));
  std::printf("%slimits %s\n", pad, lim.empty() ? "none (a run's --budget may set them)" : join(lim, ", ").c_str());
  if (c.provider == llm::provider_kind::openai || c.provider == llm::provider_kind::anthropic)
    std::printf("%s%d call%s at once; up to %d attempts of %s s (connect %s s), backoff %s-%s s\n", pad,
                c.concurrency, c.concurrency == 1 ? "" : "s", c.retry.max_attempts,
                number_text(c.timeout.total_seconds).c_str(), number_text(c.timeout.connect_seconds).c_str(),
                number_text(c.retry.initial_backoff_seconds).c_str(),
                number_text(c.retry.max_backoff_seconds).c_str());
  if (c.cassettes != llm::cassette_mode::off)
    std::printf("%scassettes %s %s\n", pad,
                c.cassettes == llm::cassette_mode::record ? "recorded into" : "replayed from",
                c.cassette_dir.c_str());
}

// One tiny call to the configured model (`--llm-ping`): 8 tokens at most, so that a user sees
// that the key, the URL and the model name work before a run spends a budget on them.
struct ping_report {
  bool tried = false, ok = false;
  std::string text;  // the reply (trimmed) or why it failed
  double seconds = 0;
  int64_t tokens_in = 0, tokens_out = 0;
};

ping_report ping_model(const model_report& m) {
  ping_report p;
  if (!m.cfg) return p;
  p.tried = true;
  auto prov = llm::make_provider(*m.cfg);
  if (!prov) {
    p.text = prov.error().message;
    return p;
  }
  llm::request r;
  r.messages = {{"user", "Reply with the single word: pong"}};
  r.max_tokens = 8;
  r.template_id = "doctor_ping";
  r.template_version = 1;
  auto c = (*prov)->call(r);
  if (!c) {
    p.text = std::string(llm::to_string(c.error().kind)) + ": " + c.error().message;
    return p;
  }
  p.ok = true;
  p.text = c->text.substr(0, 60);
  while (!p.text.empty() && (p.text.back() == '\n' || p.text.back() == ' ')) p.text.pop_back();
  p.seconds = c->latency_seconds;
  p.tokens_in = c->tokens_in;
  p.tokens_out = c->tokens_out;
  return p;
}

// What doctor found on this machine beyond the context: libraries, isolation, tools, the model.
struct machine_survey {
  bool openmp = false, openblas = false, gpu_node = false;
  std::string isolation;
  std::optional<gpu_snapshot> now;
  std::vector<gate::cuda_tool> tools;
  model_report model;
  ping_report pinged;
};

machine_survey survey(const context& ctx, bool ping) {
  machine_survey m;
  m.openmp = can_link({"-fopenmp"}, "#include <omp.h>\nint main(){return omp_get_max_threads()<1;}\n");
  m.openblas = can_link({"-lopenblas"}, "#include <cblas.h>\nint main(){float a=1,b=1,c=0;cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1);return c!=1;}\n");
  m.gpu_node = gate::has_cuda_device();
  const bool root = geteuid() == 0;
  const int landlock = sandbox::landlock_abi();
  const std::string files = landlock > 0 ? "files confined by Landlock ABI " + std::to_string(landlock) +
                                               " (CPU workers and the compiler)"
                                         : "NO Landlock on this kernel: workers' and the compiler's "
                                           "files are not confined";
  m.isolation =
      (root ? std::string("each worker runs as a user of its own with its own /proc (lathe runs as root); ")
            : std::string("workers run as this user (run lathe as root for a user of their own); ")) +
      files;
  if (ctx.gpu) m.now = gate::read_gpu_snapshot(ctx.gpu->uuid);
  for (const char* name : cuda_tool_names) m.tools.push_back(find_tool(name));
  m.model = read_model(ctx.ws);
  m.pinged = ping ? ping_model(m.model) : ping_report{};
  return m;
}

void print_doctor_json(const context& ctx, const machine_survey& m, bool ping) {
  json cuda_tools = json::object();
  cuda_tools["nvcc"] = ctx.tools.nvcc.empty() ? json(nullptr)
                                              : json{{"path", ctx.tools.nvcc}, {"version", ctx.tools.nvcc_version}};
  for (const auto& tool : m.tools)
    cuda_tools[tool.name] = tool.path.empty() ? json(nullptr)
                                              : json{{"path", tool.path.string()}, {"version", tool.version}};
  json j{{"schema", "lathe.doctor/1"},
         {"compiler", ctx.tools.cxx_version},
         {"nvcc", ctx.tools.nvcc_version},
         {"target", ctx.tgt},
         {"openmp", m.openmp},
         {"openblas", m.openblas},
         {"gpu", m.gpu_node},
         {"gpu_target", ctx.gpu ? json(*ctx.gpu) : json(nullptr)},
         {"gpu_error", ctx.gpu_error},
         {"gpu_snapshot", m.now ? json(*m.now) : json(nullptr)},
         {"cuda_tools", cuda_tools},
         {"isolation", m.isolation},
         {"workspace", ctx.ws.root.string()},
         {"include_dir", ctx.where.include_dir.string()},
         {"tasks_dir", ctx.where.tasks_dir.string()},
         {"model", model_json(m.model)}};
  const ping_report& pinged = m.pinged;
  if (ping)
    j["ping"] = !pinged.tried ? json(nullptr)
                              : json{{"ok", pinged.ok}, {"reply", pinged.ok ? json(pinged.text) : json(nullptr)},
                                     {"error", pinged.ok ? json(nullptr) : json(pinged.text)},
                                     {"seconds", pinged.seconds}, {"tokens_in", pinged.tokens_in},
                                     {"tokens_out", pinged.tokens_out}};
  std::printf("%s\n", j.dump(2).c_str());
}

void print_cpu(const target& t) {
  std::printf("cpu        %s\n", t.device.c_str());
  std::printf("isa        %s (resolved level; kernels are built for it unless their manifest names one)\n", t.arch.c_str());
  std::string caps;
  for (const auto& c : t.capabilities) caps += c + " ";
  std::printf("caps       %s\n", caps.c_str());
  if (t.llc_bytes > 0)
    std::printf("cores      %u, last-level cache %llu MiB\n", t.cores,
                static_cast<unsigned long long>(t.llc_bytes >> 20));
  else
    std::printf("cores      %u, last-level cache unknown (sysfs names none): the roofline floor "
                "takes the in-cache rate for every working set, and timing slots are sized for "
                "32 MiB\n",
                t.cores);
  if (t.copy_bytes_per_s > 0)
    std::printf("ceilings   copy %.1f GB/s (DRAM), %.1f GB/s (in LLC), %.1f GB/s (in L2, every core), "
                "fp32 FMA %.1f GFLOP/s (measured)\n",
                t.copy_bytes_per_s / 1e9, t.cache_bytes_per_s / 1e9, t.l2_bytes_per_s / 1e9, t.flops_per_s / 1e9);
}

void print_doctor(const context& ctx, const machine_survey& m, bool ping) {
  std::printf("compiler   %s\n", ctx.tools.cxx_version.c_str());
  print_cpu(ctx.tgt);
  std::printf("openmp     %s\n", m.openmp ? "yes (-fopenmp links)" : "NO: install libgomp (g++)");
  std::printf("openblas   %s\n", m.openblas ? "yes (the gemm and conv2d baselines)" : "NO: install libopenblas-dev");
  std::printf("nvcc       %s\n", ctx.tools.nvcc.empty() ? "not found (CUDA tasks cannot build)" : ctx.tools.nvcc_version.c_str());
  if (ctx.gpu)
    print_gpu(*ctx.gpu, m.now);
  else if (m.gpu_node)
    std::printf("gpu        an NVIDIA device node is present, but lathe cannot read the device: %s\n",
                ctx.gpu_error.c_str());
  else
    std::printf("gpu        no GPU on this machine: CUDA kernels compile but cannot run\n");
  const char* label = "tools     ";
  for (const auto& tool : m.tools) {
    const std::string where = tool.path.empty() ? "not found (" + where_searched(tool.name) + ")" : tool.path.string();
    std::printf("%s %-18s %s%s%s%s\n", label, tool.name.c_str(), where.c_str(),
                tool.version.empty() ? "" : " (", tool.version.c_str(), tool.version.empty() ? "" : ")");
    label = "          ";
  }
  std::printf("isolation  %s\n", m.isolation.c_str());
  std::printf("workspace  %s\n", ctx.ws.root.c_str());
  std::printf("tasks      %s\n", ctx.where.tasks_dir.c_str());
  print_model(m.model);
  const ping_report& pinged = m.pinged;
  if (ping) {
    if (!pinged.tried)
      std::printf("ping       nothing to ping: no model is configured\n");
    else if (pinged.ok)
      std::printf("ping       ok in %.2f s (%lld tokens in, %lld out): \"%s\"\n", pinged.seconds,
                  static_cast<long long>(pinged.tokens_in), static_cast<long long>(pinged.tokens_out),
                  pinged.text.c_str());
    else
      std::printf("ping       FAILED: %s\n", pinged.text.c_str());
  }
}

int run_doctor(const common_options& common, bool as_json, bool measure, bool refresh, bool ping) {
  std::optional<fs::path> ws;
  if (common.workspace) ws = *common.workspace;
  auto ctx = open_context(ws, measure || refresh, refresh);
  if (!ctx) return fail_with(ctx.error(), 2);
  const machine_survey m = survey(*ctx, ping);
  // A device lathe cannot read is something to fix (no ceilings, no roofline floor); so is a
  // lathe.toml that does not load, or one whose key variable is unset.
  const int code =
      m.openmp && (!m.gpu_node || ctx->gpu) && !model_needs_fixing(m.model) && (!m.pinged.tried || m.pinged.ok) ? 0 : 1;
  if (as_json) print_doctor_json(*ctx, m, ping);
  else print_doctor(*ctx, m, ping);
  return code;
}

}  // namespace

void add_doctor(CLI::App& app, const common_options& common, int& exit_code) {
  auto as_json = std::make_shared<bool>(false);
  auto measure = std::make_shared<bool>(true);
  auto refresh = std::make_shared<bool>(false);
  auto ping = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("doctor", "toolchain, ISA, cores, OpenMP, GPU, model: what lathe can use here");
  sub->add_flag("--json", *as_json, "print as JSON (schema lathe.doctor/1)");
  sub->add_flag("!--no-measure", *measure, "do not measure bandwidth, FMA and GEMM peaks (when not cached)");
  sub->add_flag("--remeasure", *refresh, "measure the ceilings again (kept: the higher of old and new)");
  sub->add_flag("--llm-ping", *ping,
                "make one tiny call (at most 8 tokens) to the model lathe.toml configures");
  sub->callback([as_json, measure, refresh, ping, &common, &exit_code] {
    exit_code = run_doctor(common, *as_json, *measure, *refresh, *ping);
  });
}

}  // namespace lathe::cli
