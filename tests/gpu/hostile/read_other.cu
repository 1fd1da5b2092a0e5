// expect: forbidden
// Tries to read another process's memory two ways on its first call, and reports any success
// as a launch error naming what leaked (so a hole fails cuda_gate_test with that message):
//  1. scans /proc for other lathe-worker processes (the oracle, the baseline) and takes lathe
//     itself (its parent), then reads /proc/<pid>/maps and /proc/<pid>/mem. Read-only opens pass
//     the seccomp filter, but lathe and its workers are not dumpable (PR_SET_DUMPABLE 0), so
//     their /proc/<pid> files belong to root and the opens fail with EACCES;
//  2. process_vm_readv on lathe: the seccomp filter kills the worker with SIGSYS whatever the
//     arguments. This decides the outcome: forbidden, and lathe alive.
// It names nothing the text screen refuses (opendir, std::ifstream, process_vm_readv are not on
// its list), so the verdict comes from the sandbox at run time; cuda_gate_test checks that the
// message names SIGSYS. (Forged CUDA IPC handles are tests/integration/hostile_cuda/forge_ipc.cu:
// the screen refuses CUDA IPC outright.)
#include <lathe/abi.h>
#include <dirent.h>
#include <sys/uio.h>
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

static std::string slurp(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string s(limit, '\0');
  in.read(&s[0], static_cast<std::streamsize>(limit));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// Other lathe workers by their comm ("lathe-worker", "lathe-worker-cu"), then lathe.
static std::vector<int> targets() {
  std::vector<int> pids;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const int pid = std::atoi(e->d_name);
      if (pid <= 0 || pid == getpid()) continue;
      if (slurp("/proc/" + std::to_string(pid) + "/comm", 64).rfind("lathe-worker", 0) == 0)
        pids.push_back(pid);
    }
    closedir(d);
  }
  pids.push_back(getppid());
  return pids;
}

// Empty when nothing leaked; otherwise what did.
static std::string try_proc(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const std::string maps = slurp(dir + "/maps", 4096);
  unsigned long long addr = 0;
  if (!maps.empty()) addr = std::strtoull(maps.c_str(), nullptr, 16);
  std::ifstream mem(dir + "/mem", std::ios::binary);
  if (!mem) return maps.empty() ? "" : "read " + dir + "/maps";
  char buf[16];
  mem.seekg(static_cast<std::streamoff>(addr));
  mem.read(buf, sizeof buf);
  return "opened " + dir + "/mem" + (mem.gcount() > 0 ? " and read from it" : "");
}

extern "C" int lathe_launch(const lathe_args* args) {
  static bool tried = false;
  if (!tried) {
    tried = true;
    const std::vector<int> pids = targets();
    std::string leak;
    for (int pid : pids)
      if (leak.empty()) leak = try_proc(pid);
    if (!leak.empty()) {
      std::snprintf(args->error, args->error_bytes, "read_other: %s", leak.c_str());
      return 1;
    }
    char buf[64];
    iovec local{buf, sizeof buf};
    iovec remote{reinterpret_cast<void*>(0x400000), sizeof buf};
    process_vm_readv(getppid(), &local, 1, &remote, 1, 0);  // SIGSYS: the worker ends here
    std::snprintf(args->error, args->error_bytes, "read_other: process_vm_readv returned");
    return 1;
  }
  k<<<GRID_>>>(S_, X_, Y_, Z_, N_); return 0; }
