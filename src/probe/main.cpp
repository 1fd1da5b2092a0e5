// lathe-probe-cuda: what one CUDA device is and what it can do, as one JSON object on stdout
// (schema lathe.probe-cuda/1, docs/schemas.md). lathe runs it as a separate process
// (src/gate/gpu_target.cpp), so that lathe itself links neither CUDA nor cuBLAS.
//
//   lathe-probe-cuda [--no-measure] [--device N]
//
// Properties come from the runtime; unless --no-measure, the ceilings the gate's roofline floor
// divides by are measured: copy bandwidth beyond and within L2, and cuBLAS GEMM throughput. A
// ceiling must not read low (a low ceiling puts the floor above honest kernels), so each figure
// is the best of several samples after the clocks have settled. On failure it prints
// {"error": "..."} and exits 1.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

// copy_kernel.cu
cudaError_t probe_copy(const void* src, void* dst, size_t bytes, int sms, cudaStream_t stream);

namespace {

using json = nlohmann::json;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
}

int attribute(cudaDeviceAttr a, int device, const char* what) {
  int v = 0;
  check(cudaDeviceGetAttribute(&v, a, device), what);
  return v;
}

struct cuda_free {
  void operator()(void* p) const { cudaFree(p); }
};
using device_buffer = std::unique_ptr<void, cuda_free>;

device_buffer allocate(size_t bytes, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), what);
  return device_buffer(p);
}

// Device time of the work `enqueue` puts on one stream, from a pair of CUDA events.
class stream_timer {
 public:
  stream_timer() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~stream_timer() {
    cudaEventDestroy(stop_);
    cudaEventDestroy(start_);
    cudaStreamDestroy(stream_);
  }
  stream_timer(const stream_timer&) = delete;
  stream_timer& operator=(const stream_timer&) = delete;
  cudaStream_t stream() const { return stream_; }

  template <class F>
  double seconds(F&& enqueue) {
    check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    enqueue();
    check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "the timed work");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

  // The shortest of `reps` samples, after running the work for `warmup_s` of wall time: boost
  // clocks take tens of milliseconds to rise from idle, and the first cuBLAS call of a shape
  // picks its kernel.
  template <class F>
  double best_seconds(F&& enqueue, double warmup_s, int reps) {
    const auto t0 = std::chrono::steady_clock::now();
    do {
      seconds(enqueue);
    } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warmup_s);
    double best = seconds(enqueue);
    for (int i = 1; i < reps; ++i) best = std::min(best, seconds(enqueue));
    return best;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Read + write bytes per second of device-to-device copies of `bytes`, `copies` of them per
// sample, by cudaMemcpyAsync or by lathe's copy kernel (copy_kernel.cu). The copies go into one CUDA graph: small copies launched one by one would time the
// gaps between launches as much as the memory.
double copy_rate(stream_timer& timer, size_t bytes, int copies, bool kernel, int sms) {
  device_buffer src = allocate(bytes, "cudaMalloc (copy source)");
  device_buffer dst = allocate(bytes, "cudaMalloc (copy destination)");
  check(cudaMemsetAsync(src.get(), 1, bytes, timer.stream()), "cudaMemset");
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(timer.stream(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < copies; ++i) {
    if (kernel)
      check(probe_copy(src.get(), dst.get(), bytes, sms, timer.stream()), "the copy kernel");
    else
      check(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, timer.stream()),
            "cudaMemcpyAsync");
  }
  check(cudaStreamEndCapture(timer.stream(), &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  cudaGraphDestroy(graph);
  check(inst, "cudaGraphInstantiate");
  double best = 0;
  try {
    best = timer.best_seconds([&] { check(cudaGraphLaunch(exec, timer.stream()), "cudaGraphLaunch"); },
                              0.2, 10);
  } catch (...) {
    cudaGraphExecDestroy(exec);
    throw;
  }
  cudaGraphExecDestroy(exec);
  return 2.0 * static_cast<double>(bytes) * copies / best;
}

// Uniform values in [-1, 1) from a fixed linear congruential sequence: real data, because a
// GEMM on zeros draws less power and can run at clocks real inputs do not get.
std::vector<float> host_values(size_t n) {
  std::vector<float> v(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& f : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    f = static_cast<float>(static_cast<int32_t>(x >> 32)) * (1.0f / 2147483648.0f);
  }
  return v;
}

// bf16 is the upper half of an fp32 (truncated: these are random test values).
std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], sizeof bits);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
  return out;
}

struct cublas_handle {
  cublasHandle_t h = nullptr;
  explicit cublas_handle(cudaStream_t s) {
    check(cublasCreate(&h), "cublasCreate");
    check(cublasSetStream(h, s), "cublasSetStream");
    // The default math mode: SGEMM stays fp32 (no TF32), so flops_per_s is the fp32 figure.
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~cublas_handle() { cublasDestroy(h); }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
};

// FLOP/s of square n^3 GEMMs: bf16 inputs and output with fp32 accumulation (tensor cores), and
// fp32 SGEMM. Column-major, no transposes; the inputs are the same values in both precisions.
void gemm_rates(stream_timer& timer, int n, double& tensor_flops, double& fp32_flops) {
  const size_t elems = static_cast<size_t>(n) * n;
  const std::vector<float> a = host_values(elems), b = host_values(elems);
  const double flops = 2.0 * n * n * static_cast<double>(n);
  cublas_handle cublas(timer.stream());
  const float alpha = 1.0f, beta = 0.0f;
  {
    device_buffer A = allocate(elems * 2, "cudaMalloc (bf16 A)"), B = allocate(elems * 2, "cudaMalloc (bf16 B)"),
                  C = allocate(elems * 2, "cudaMalloc (bf16 C)");
    check(cudaMemcpy(A.get(), to_bf16(a).data(), elems * 2, cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(B.get(), to_bf16(b).data(), elems * 2, cudaMemcpyHostToDevice), "upload");
    auto gemm = [&] {
      check(cublasGemmEx(cublas.h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A.get(), CUDA_R_16BF, n,
                         B.get(), CUDA_R_16BF, n, &beta, C.get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (bf16)");
    };
    tensor_flops = flops / timer.best_seconds(gemm, 0.3, 10);
  }
  device_buffer A = allocate(elems * 4, "cudaMalloc (fp32 A)"), B = allocate(elems * 4, "cudaMalloc (fp32 B)"),
                C = allocate(elems * 4, "cudaMalloc (fp32 C)");
  check(cudaMemcpy(A.get(), a.data(), elems * 4, cudaMemcpyHostToDevice), "upload");
  check(cudaMemcpy(B.get(), b.data(), elems * 4, cudaMemcpyHostToDevice), "upload");
  auto sgemm = [&] {
    check(cublasSgemm(cublas.h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                      static_cast<const float*>(A.get()), n, static_cast<const float*>(B.get()), n,
                      &beta, static_cast<float*>(C.get()), n),
          "cublasSgemm");
  };
  fp32_flops = flops / timer.best_seconds(sgemm, 0.3, 5);
}

std::string uuid_text(const cudaUUID_t& u) {
  // nvidia-smi's form: GPU-8-4-4-4-12 hex digits.
  std::string s = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(u.bytes[i]));
    s += hex;
  }
  return s;
}

json probe(int device, bool measure) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    throw std::runtime_error("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                             " present)");
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  auto attr = [&](cudaDeviceAttr a, const char* what) { return attribute(a, device, what); };
  const int l2 = attr(cudaDevAttrL2CacheSize, "L2 size");
  const int sms = attr(cudaDevAttrMultiProcessorCount, "SM count");
  json j{{"schema", "lathe.probe-cuda/1"},
         {"device_index", device},
         {"name", prop.name},
         {"uuid", uuid_text(prop.uuid)},
         {"cc_major", attr(cudaDevAttrComputeCapabilityMajor, "compute capability")},
         {"cc_minor", attr(cudaDevAttrComputeCapabilityMinor, "compute capability")},
         {"sm_count", attr(cudaDevAttrMultiProcessorCount, "SM count")},
         {"l2_bytes", l2},
         {"memory_bytes", static_cast<uint64_t>(prop.totalGlobalMem)},
         {"smem_optin_bytes", attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, "shared memory opt-in")},
         {"smem_per_sm_bytes", attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor, "shared memory per SM")},
         {"registers_per_sm", attr(cudaDevAttrMaxRegistersPerMultiprocessor, "registers per SM")},
         // The attributes are in kHz.
         {"sm_clock_mhz", attr(cudaDevAttrClockRate, "SM clock") / 1000},
         {"mem_clock_mhz", attr(cudaDevAttrMemoryClockRate, "memory clock") / 1000},
         {"memory_bus_bits", attr(cudaDevAttrGlobalMemoryBusWidth, "memory bus width")},
         {"driver_version", driver},
         {"runtime_version", runtime},
         {"measured", measure}};
  if (!measure) return j;

  stream_timer timer;
  // Beyond L2: 1 GiB (at least 16x L2), halved while two buffers and room for cuBLAS do not fit.
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  size_t big = std::max<size_t>(size_t{1} << 30, size_t{16} * static_cast<size_t>(l2));
  while (big > size_t{64} << 20 && 2 * big + (size_t{512} << 20) > free_bytes) big /= 2;
  j["copy_buffer_bytes"] = big;
  // The better of cudaMemcpy and a copy kernel: the ceiling is what a kernel can reach.
  j["copy_bytes_per_s"] = std::max(copy_rate(timer, big, 1, false, sms), copy_rate(timer, big, 1, true, sms));
  // Within L2: source and destination a quarter of it each, 64 copies per sample (a few µs
  // each on an H200: too short to time one by one).
  const size_t small = static_cast<size_t>(l2) / 4;
  j["cache_buffer_bytes"] = small;
  j["cache_bytes_per_s"] = small ? std::max(copy_rate(timer, small, 64, false, sms),
                                            copy_rate(timer, small, 64, true, sms))
                                 : 0.0;
  const int n = 8192;
  double tensor = 0, fp32 = 0;
  gemm_rates(timer, n, tensor, fp32);
  j["gemm_n"] = n;
  j["tensor_flops_per_s"] = tensor;
  j["flops_per_s"] = fp32;
  return j;
}

int usage_error(const std::string& message) {
  std::printf("%s\n", json{{"schema", "lathe.probe-cuda/1"}, {"error", message}}.dump().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool measure = true;
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-measure") {
      measure = false;
    } else if (a == "--device" && i + 1 < argc) {
      char* end = nullptr;
      device = static_cast<int>(std::strtol(argv[++i], &end, 10));
      if (!end || *end) return usage_error(std::string("--device needs a number, got '") + argv[i] + "'");
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: lathe-probe-cuda [--no-measure] [--device N]\n"
                  "Prints one JSON object (schema lathe.probe-cuda/1): the device's properties and,\n"
                  "unless --no-measure, its measured copy bandwidth and GEMM throughput.\n");
      return 0;
    } else {
      return usage_error("unknown argument '" + a + "' (usage: lathe-probe-cuda [--no-measure] [--device N])");
    }
  }
  try {
    std::printf("%s\n", probe(device, measure).dump(2).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s\n", json{{"schema", "lathe.probe-cuda/1"}, {"error", e.what()}}.dump().c_str());
    return 1;
  }
}
