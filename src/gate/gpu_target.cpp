#include "gate/gpu_target.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gate/device_lock.h"
#include "gate/process.h"

namespace lathe::gate {
namespace {

constexpr const char* probe_schema = "lathe.probe-cuda/1";

// Creating a context on a large machine takes seconds; measuring adds copies of 1 GiB and four
// dozen 8192^3 GEMMs (the SGEMMs at ~50 TFLOP/s take 22 ms each). Minutes mean a hung device.
constexpr double probe_timeout_s = 180;

template <class T>
void read(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) it->get_to(out);
}

std::string tail(const std::string& s, size_t n = 2000) {
  return s.size() <= n ? s : "…" + s.substr(s.size() - n);
}

}  // namespace

result<gpu_info> parse_probe_json(const std::string& text) {
  // The probe prints one object on stdout; run_tool interleaves stderr, where a driver or
  // cuBLAS may have said something first, so the object is found by its braces.
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    const auto open = text.find('{');
    const auto close = text.rfind('}');
    if (open != std::string::npos && close != std::string::npos && close > open)
      j = nlohmann::json::parse(text.substr(open, close - open + 1), nullptr, false);
  }
  if (j.is_discarded() || !j.is_object())
    return fail(errc::parse_error, "lathe-probe-cuda printed no JSON object: " + tail(text));
  if (auto e = j.find("error"); e != j.end() && e->is_string())
    return fail(errc::unsupported, "lathe-probe-cuda: " + e->get<std::string>());
  if (j.value("schema", std::string()) != probe_schema)
    return fail(errc::parse_error, std::string("lathe-probe-cuda: expected schema ") + probe_schema +
                                       ", got " + j.value("schema", std::string("none")) +
                                       " (a probe from another lathe build?)");
  for (const char* key : {"name", "cc_major", "cc_minor", "sm_count"})
    if (!j.contains(key))
      return fail(errc::parse_error, std::string("lathe-probe-cuda: no '") + key + "' in " + tail(text));
  gpu_info g;
  try {
    read(j, "name", g.name);
    read(j, "uuid", g.uuid);
    read(j, "cc_major", g.cc_major);
    read(j, "cc_minor", g.cc_minor);
    read(j, "sm_count", g.sm_count);
    read(j, "l2_bytes", g.l2_bytes);
    read(j, "memory_bytes", g.memory_bytes);
    read(j, "smem_optin_bytes", g.smem_optin_bytes);
    read(j, "smem_per_sm_bytes", g.smem_per_sm_bytes);
    read(j, "registers_per_sm", g.registers_per_sm);
    read(j, "sm_clock_mhz", g.sm_clock_mhz);
    read(j, "mem_clock_mhz", g.mem_clock_mhz);
    read(j, "memory_bus_bits", g.memory_bus_bits);
    read(j, "driver_version", g.driver_version);
    read(j, "runtime_version", g.runtime_version);
    read(j, "copy_bytes_per_s", g.copy_bytes_per_s);
    read(j, "cache_bytes_per_s", g.cache_bytes_per_s);
    read(j, "tensor_flops_per_s", g.tensor_flops_per_s);
    read(j, "flops_per_s", g.flops_per_s);
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::parse_error, std::string("lathe-probe-cuda: ") + e.what());
  }
  if (g.cc_major <= 0 || g.sm_count == 0)
    return fail(errc::parse_error, "lathe-probe-cuda: implausible device (compute capability " +
                                       std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) +
                                       ", " + std::to_string(g.sm_count) + " SMs)");
  return g;
}

std::string cuda_arch(int32_t cc_major, int32_t cc_minor) {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  // Arch-specific ("a") targets exist from Hopper on (sm_90a, sm_100a, sm_120a…). Their code
  // runs on exactly one compute capability, which is what a build for this device needs.
  if (cc_major >= 9) arch += "a";
  return arch;
}

std::vector<std::string> cuda_capabilities(int32_t cc_major, int32_t cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  std::vector<std::string> caps;
  if (cc >= 70) caps.push_back("mma.sync");
  if (cc >= 75) caps.push_back("ldmatrix");
  if (cc >= 80) {
    caps.push_back("cp.async");
    caps.push_back("bf16");
  }
  if (cc >= 89) caps.push_back("fp8");
  if (cc >= 90) {
    caps.push_back("cluster");
    caps.push_back("tma");
  }
  // wgmma.mma_async and setmaxnreg are sm_90a instructions: PTX built for sm_90 (without "a")
  // rejects them, and Blackwell replaced wgmma with tcgen05.
  if (cc == 90) {
    caps.push_back("wgmma");
    caps.push_back("setmaxnreg");
  }
  std::sort(caps.begin(), caps.end());
  return caps;
}

target to_target(const gpu_info& g) {
  target t;
  t.plat = platform::cuda;
  t.arch = cuda_arch(g.cc_major, g.cc_minor);
  t.device = g.name;
  t.capabilities = cuda_capabilities(g.cc_major, g.cc_minor);
  t.cores = g.sm_count;
  t.llc_bytes = g.l2_bytes;
  t.copy_bytes_per_s = g.copy_bytes_per_s;
  t.cache_bytes_per_s = g.cache_bytes_per_s;
  t.flops_per_s = g.flops_per_s;
  t.tensor_flops_per_s = g.tensor_flops_per_s;
  t.uuid = g.uuid;
  t.cc_major = g.cc_major;
  t.cc_minor = g.cc_minor;
  t.memory_bytes = g.memory_bytes;
  t.smem_optin_bytes = g.smem_optin_bytes;
  t.smem_per_sm_bytes = g.smem_per_sm_bytes;
  t.registers_per_sm = g.registers_per_sm;
  t.sm_clock_mhz = g.sm_clock_mhz;
  t.mem_clock_mhz = g.mem_clock_mhz;
  t.memory_bus_bits = g.memory_bus_bits;
  t.driver_version = g.driver_version;
  t.runtime_version = g.runtime_version;
  return t;
}

result<target> detect_gpu_target(const std::filesystem::path& probe_exe, bool measure,
                                 unsigned device) {
  std::vector<std::string> argv{probe_exe.string(), "--device", std::to_string(device)};
  if (!measure) argv.push_back("--no-measure");
  device_lock lock;
  if (measure) {
    auto l = device_lock::acquire("cuda" + std::to_string(device), device_lock::mode::exclusive);
    if (!l) return tl::unexpected(l.error());
    lock = std::move(*l);
  }
  const tool_result r = run_tool(argv, probe_timeout_s);
  if (r.timed_out)
    return fail(errc::internal, probe_exe.string() + " did not finish in " +
                                    std::to_string(static_cast<int>(probe_timeout_s)) + " s");
  auto g = parse_probe_json(r.output);
  if (!g) return tl::unexpected(g.error());
  if (r.exit_code != 0)
    return fail(errc::internal, probe_exe.string() + " exited with " + std::to_string(r.exit_code) +
                                    ": " + tail(r.output));
  return to_target(*g);
}

}  // namespace lathe::gate
