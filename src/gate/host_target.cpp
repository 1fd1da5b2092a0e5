#include "gate/host_target.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace lathe::gate {
namespace {

std::string cpuinfo_field(const std::string& name) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return {};
}

uint64_t read_cache_bytes() {
  // The highest-level cache in sysfs of cpu0 ("32768K").
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lv(base + "level"), sz(base + "size");
    int level = 0;
    std::string size;
    if (!(lv >> level) || !(sz >> size)) continue;
    uint64_t bytes = std::stoull(size);
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    if (level >= best_level) {
      best_level = level;
      best = bytes;
    }
  }
  return best;
}

// x86-64 micro-architecture levels (psABI): which flags each level needs.
int resolve_level(const std::set<std::string>& f) {
  auto all = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!f.count(n)) return false;
    return true;
  };
  if (!all({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})) return 1;
  if (!all({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"})) return 2;
  if (!all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})) return 3;
  return 4;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double copy_rate(size_t bytes, unsigned threads) {
  const size_t n = bytes / sizeof(float) / 2;
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  auto pass = [&] {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * sizeof(float));
      });
    for (auto& th : pool) th.join();
  };
  pass();
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    int iters = 0;
    do {
      pass();
      ++iters;
    } while (seconds_since(t0) < 0.04);
    best = std::max(best, 2.0 * n * sizeof(float) * iters / seconds_since(t0));
  }
  return best;
}

// Eight independent FMA chains of 8 floats: enough to cover FMA latency on current cores.
__attribute__((target("avx2,fma"))) double fma_chain(long iters) {
  typedef float v8 __attribute__((vector_size(32)));
  v8 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = v8{} + 1.0f * static_cast<float>(i);
  const v8 m = v8{} + 0.999999f, c = v8{} + 1e-7f;
  for (long k = 0; k < iters; ++k)
    for (int i = 0; i < 8; ++i) acc[i] = acc[i] * m + c;
  double s = 0;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) s += acc[i][j];
  return s;
}

}  // namespace

target detect_cpu_target() {
  target t;
  t.plat = platform::cpu;
  t.device = cpuinfo_field("model name");
  std::set<std::string> flags;
  std::istringstream fs(cpuinfo_field("flags"));
  for (std::string f; fs >> f;) flags.insert(f);
  t.arch = "x86-64";
  int level = resolve_level(flags);
  if (level > 1) t.arch += "-v" + std::to_string(level);
  for (const char* cap : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                          "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile"})
    if (flags.count(cap)) t.capabilities.push_back(cap);
  std::sort(t.capabilities.begin(), t.capabilities.end());
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  t.cores = n > 0 ? static_cast<uint32_t>(n) : 1;
  t.llc_bytes = read_cache_bytes();
  return t;
}

cpu_ceilings measure_cpu_ceilings(const target& t) {
  cpu_ceilings c;
  const size_t llc = t.llc_bytes ? t.llc_bytes : (size_t{32} << 20);
  c.dram_bytes_per_s = copy_rate(4 * llc, t.cores);
  c.llc_bytes_per_s = copy_rate(llc / 2, t.cores);
  if (has_capability(t, "fma")) {
    const long iters = 2'000'000;
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<std::thread> pool;
      volatile double sink = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (unsigned k = 0; k < t.cores; ++k) pool.emplace_back([&] { sink = sink + fma_chain(iters); });
      for (auto& th : pool) th.join();
      best = std::max(best, 2.0 * 64 * iters * t.cores / seconds_since(t0));
    }
    c.flops_per_s = best;
  }
  return c;
}

}  // namespace lathe::gate
