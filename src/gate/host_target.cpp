#include <cstdint>
#include "gate/host_target.h"
#include "gate/cpu/sandbox.h"

#include <unistd.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <chrono>
#include <cstring>
#include <ctime>
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

// A cache of cpu0 from sysfs ("32768K"): the one at `want`, or the highest level (want = 0).
uint64_t read_cache_bytes(int want = 0) {
  uint64_t best = 0;
  int best_level = 0;
  for (int i = 0; i < 8; ++i) {
    std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lv(base + "level"), sz(base + "size");
    int level = 0;
    std::string size;
    if (!(lv >> level) || !(sz >> size) || size.empty()) continue;
    if (want != 0 && level != want) continue;
    uint64_t bytes = std::stoull(size);
    if (size.back() == 'K') bytes <<= 10;
    if (size.back() == 'M') bytes <<= 20;
    if (level > best_level) {
      best_level = level;
      best = bytes;
    } else if (level == best_level) {
      best = std::max(best, bytes);
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

// CPU time of the measuring threads other than the caller's, summed in nanoseconds: the load
// meter around a re-measure (time_cpu.cpp judge_cpu_floor) counts them as lathe's, and only them.
// One per measure_cpu_ceilings call, so that another evaluation's measurement is not counted.
struct thread_cpu_sum {
  std::atomic<int64_t> ns{0};
};

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Adds the CPU time of the thread it lives on, from construction to destruction, to `sum`.
class counted_thread {
 public:
  explicit counted_thread(thread_cpu_sum& sum) : sum_(sum), start_(thread_cpu_ns()) {}
  ~counted_thread() { sum_.ns.fetch_add(thread_cpu_ns() - start_, std::memory_order_relaxed); }
  counted_thread(const counted_thread&) = delete;
  counted_thread& operator=(const counted_thread&) = delete;

 private:
  thread_cpu_sum& sum_;
  int64_t start_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Reads n floats in 32-byte vectors into four independent sums (a read-only memory pass; the
// sum is returned so that the loads are not optimized away).
double read_pass(const float* a, size_t n) {
  typedef float v8 __attribute__((vector_size(32)));
  v8 acc[4] = {};
  for (size_t i = 0; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      v8 x;
      std::memcpy(&x, a + i + 8 * k, sizeof x);
      acc[k] += x;
    }
  double s = 0;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 8; ++j) s += acc[k][j];
  return s;
}

// Best of a memcpy and a read-only sweep over `bytes` of memory with `threads` threads, in bytes
// moved per second. The roofline floor divides a kernel's minimum traffic by this, so it must not
// underestimate what the memory system can do: a low ceiling would flag honest kernels (a
// two-thread row sum read 64 MB at 75.6 GB/s against DRAM ceilings of 49-54 GB/s measured by
// threads started for every pass, 10-ms samples, on the loaded 2-core VM; issue 42). So the
// threads persist and start each sample together, a sample is one pass (1-4 ms over 4x a 32 MiB
// LLC), and the best of many is kept: on a shared machine a long sample measures the scheduler's
// share, a short one often runs uncontended.
double sweep_rate(size_t bytes, unsigned threads, thread_cpu_sum& cpu) {
  threads = std::max(threads, 1u);
  const size_t n = bytes / sizeof(float) / 2;
  std::vector<float> a(n, 1.0f), b(n, 2.0f);
  std::vector<double> sums(threads);
  std::atomic<unsigned> generation{0}, finished{0};
  std::atomic<bool> copy{false}, quit{false};
  auto work = [&](unsigned t) {
    const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
    if (copy.load(std::memory_order_relaxed)) {
      std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * sizeof(float));
    } else {
      sums[t] = read_pass(a.data() + lo, hi - lo);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      const counted_thread counted(cpu);
      unsigned seen = 0;
      for (;;) {
        unsigned g;
        while ((g = generation.load(std::memory_order_acquire)) == seen)
          if (quit.load(std::memory_order_relaxed)) return;
        seen = g;
        work(t);
        finished.fetch_add(1, std::memory_order_release);
      }
    });
  // One pass of every thread, started together; seconds until the last one ended.
  auto sample = [&](bool as_copy) {
    copy.store(as_copy, std::memory_order_relaxed);
    finished.store(0, std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    generation.fetch_add(1, std::memory_order_release);
    work(0);
    while (finished.load(std::memory_order_acquire) < threads - 1) {
    }
    return seconds_since(t0);
  };
  double best = 0;
  for (bool as_copy : {true, false}) {
    sample(as_copy);  // pages mapped in, caches warm
    for (int rep = 0; rep < 24; ++rep) {
      const double s = sample(as_copy);
      if (s > 0) best = std::max(best, (as_copy ? 2.0 : 1.0) * static_cast<double>(n) * sizeof(float) / s);
    }
  }
  quit.store(true);
  for (auto& th : pool) th.join();
  return best;
}

// Twelve independent FMA chains: enough to cover FMA latency times the number of FMA pipes on
// current x86 cores, so the loop runs at FMA throughput. Intrinsics, not `a * b + c`: in ISO C++
// mode GCC does not contract to FMA, and a mul+add chain measures half the peak or less, which
// would put the roofline floor above honest kernels.
__attribute__((target("avx2,fma"))) double fma_avx2(long iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  // Unrolled, so the accumulators live in registers: a rolled loop keeps them in memory and
  // measures store-forwarding latency (59 instead of 118 GFLOP/s per core here).
  for (long k = 0; k < iters; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) double fma_avx512(long iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (long k = 0; k < iters; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  // One lane keeps the chains live, as in fma_avx2 (GCC 12's _mm512_reduce_add_ps warns from
  // inside its own header).
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
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

uint64_t cpu_l2_bytes() {
  static const uint64_t bytes = read_cache_bytes(2);
  return bytes;
}

// Every core at once, each on its own `bytes` (two buffers of half) within its L2: the best
// sample of a memcpy and of a read-only pass, per core, summed. Persistent threads and ~1000
// short samples each: a thread started per pass would cost more than an L2-sized copy moves.
double l2_rate(size_t bytes, unsigned threads, thread_cpu_sum& cpu) {
  std::vector<double> best(threads, 0.0);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      const counted_thread counted(cpu);
      const size_t n = bytes / sizeof(float) / 2;
      std::vector<float> a(n, 1.0f), b(n, 2.0f);
      volatile float sink = 0;
      for (int rep = 0; rep < 1000; ++rep) {
        const bool copy = rep % 2 == 0;
        auto t0 = std::chrono::steady_clock::now();
        if (copy) {
          std::memcpy(b.data(), a.data(), n * sizeof(float));
          sink = sink + b[rep % n];
        } else {
          sink = sink + static_cast<float>(read_pass(a.data(), n));
        }
        const double s = seconds_since(t0);
        if (rep >= 10 && s > 0)  // the first passes warm the buffers into L2
          best[k] = std::max(best[k], (copy ? 2.0 : 1.0) * n * sizeof(float) / s);
      }
    });
  for (auto& th : pool) th.join();
  double total = 0;
  for (double b : best) total += b;
  return total;
}

bool l2_ceiling_measurable() { return cpu_l2_bytes() >= (uint64_t{64} << 10); }

cpu_ceilings measure_cpu_ceilings(const target& t, uint32_t threads) {
  // As many threads as a worker gets (sandbox.cpp worker_environment: OMP_NUM_THREADS is the
  // CPUs in lathe's affinity mask), not the machine's cores: under taskset or a cpuset the two
  // differ, and the floor is about what a kernel in a worker can reach.
  if (threads == 0) threads = sandbox::online_cpus();
  cpu_ceilings c;
  thread_cpu_sum cpu;
  if (l2_ceiling_measurable()) c.l2_bytes_per_s = l2_rate(cpu_l2_bytes() / 4, threads, cpu);
  const size_t llc = t.llc_bytes ? t.llc_bytes : (size_t{32} << 20);
  // The memory ceilings are the best of one thread and all of them: the floor must not be above
  // any kernel, single-threaded or not, and on a loaded machine one thread runs uncontended more
  // often than all of them at once.
  c.dram_bytes_per_s =
      std::max(sweep_rate(4 * llc, threads, cpu), threads > 1 ? sweep_rate(4 * llc, 1, cpu) : 0.0);
  c.llc_bytes_per_s =
      std::max(sweep_rate(llc / 2, threads, cpu), threads > 1 ? sweep_rate(llc / 2, 1, cpu) : 0.0);
  // Peak over the widest vector unit available: flops per call = 2 * lanes * 12 * iters.
  // Every core runs many short samples (~0.3 ms) and keeps its best: on a shared machine a
  // long sample measures the scheduler's share, a short one often runs uncontended.
  auto peak = [&](double (*fn)(long), int lanes) {
    const long iters = 20'000;
    std::vector<double> best(threads, 0.0);
    std::vector<std::thread> pool;
    for (unsigned k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        const counted_thread counted(cpu);
        volatile double sink = 0;
        for (int rep = 0; rep < 300; ++rep) {
          auto t0 = std::chrono::steady_clock::now();
          sink = sink + fn(iters);
          best[k] = std::max(best[k], 2.0 * lanes * 12 * iters / seconds_since(t0));
        }
      });
    for (auto& th : pool) th.join();
    double total = 0;
    for (double b : best) total += b;
    return total;
  };
  if (has_capability(t, "fma") && has_capability(t, "avx2")) c.flops_per_s = peak(fma_avx2, 8);
  if (has_capability(t, "avx512f")) c.flops_per_s = std::max(c.flops_per_s, peak(fma_avx512, 16));
  c.thread_cpu_s = static_cast<double>(cpu.ns.load()) * 1e-9;
  return c;
}

bool has_cuda_device() {
  std::error_code ec;
  return std::filesystem::exists("/dev/nvidiactl", ec);
}

}  // namespace lathe::gate
