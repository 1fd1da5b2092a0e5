// expect: forbidden
// Forges CUDA IPC handles for other lathe workers' device buffers: cudaIpcGetMemHandle on its own
// first input, every 32-bit word equal to its pid replaced by the other worker's pid, then
// cudaIpcOpenMemHandle. On the H200 such a forged handle opened (legacy IPC handles name the
// process and the allocation, nothing secret), so kernels may not use CUDA IPC at all: the screen
// refuses the symbols, in the sources and in the object's imports. lathe's own workers export only
// candidates' buffers, only to the trusted oracle.
#include <lathe/abi.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
__global__ void k(float a, const float* x, const float* y, float* z, int64_t n) {
  int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; if (i < n) z[i] = a * x[i] + y[i]; }

static std::vector<int> other_workers() {
  std::vector<int> pids;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const int pid = std::atoi(e->d_name);
      if (pid <= 0 || pid == getpid()) continue;
      std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
      std::string comm;
      if (std::getline(in, comm) && comm.rfind("lathe-worker", 0) == 0) pids.push_back(pid);
    }
    closedir(d);
  }
  return pids;
}

// Empty when no forged handle opened; otherwise which one did.
static std::string forge(const void* own) {
  cudaIpcMemHandle_t mine;
  if (cudaIpcGetMemHandle(&mine, const_cast<void*>(own)) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  const unsigned self = static_cast<unsigned>(getpid());
  for (int pid : other_workers()) {
    unsigned words[sizeof mine / 4];
    std::memcpy(words, &mine, sizeof words);
    int replaced = 0;
    for (unsigned& w : words)
      if (w == self) w = static_cast<unsigned>(pid), ++replaced;
    if (replaced == 0) continue;  // the handle does not name the process: nothing to forge
    cudaIpcMemHandle_t forged;
    std::memcpy(&forged, words, sizeof words);
    void* p = nullptr;
    if (cudaIpcOpenMemHandle(&p, forged, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess && p) {
      cudaIpcCloseMemHandle(p);
      return "opened the device buffer of lathe worker " + std::to_string(pid) +
             " with a handle forged from its own";
    }
    cudaGetLastError();
  }
  return "";
}

extern "C" int lathe_launch(const lathe_args* args) {
  static long eager = 0;
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const bool captured = cudaStreamIsCapturing(STREAM_, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
  if (!captured && ++eager == 20) {
    const std::string leak = forge(args->inputs[0].data);
    if (!leak.empty()) {
      std::snprintf(args->error, args->error_bytes, "forge_ipc: %s", leak.c_str());
      return 1;
    }
  }
  k<<<GRID_>>>(S_, X_, Y_, Z_, N_); return 0; }
