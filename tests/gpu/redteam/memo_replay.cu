// expect: ok no-speedup
// task: mm_cuda
// The CUDA analogue of memo_content.cpp: memoizes across graph replays. Each call hashes its
// inputs on the device (a cheap read of A and B) into its workspace; a kernel then either copies
// the product cached for that hash (a hit: the same contents as an earlier call) or computes it
// and caches it. All of it on the timed stream, so the graph captures it and the events see it.
// While the timed calls rotated over four slots whose contents never changed it got `ok` x1.035
// [1.034, 1.037] on the H200, decided faster (bench/results/redteam-2026-12-02.md). Now every
// timed call of a block reads a window of its slot no earlier call read, and the slots are drawn
// again from new seeds between blocks (src/gate/fresh_windows.h): every lookup misses, every
// product is computed, and the hash is extra work, so it is slower than the naive baseline.
#include <lathe/abi.h>
#include <cstdint>
namespace {
constexpr int entries = 16;
struct cache_head {
  unsigned long long key[entries];
  unsigned long long now;
  int hit;
};
__global__ void hash(const float* a, const float* b, int n, cache_head* h) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) h->now = 0;
  __syncthreads();
  unsigned long long v = 0;
  for (int k = i; k < n * n; k += gridDim.x * blockDim.x)
    v ^= (static_cast<unsigned long long>(__float_as_uint(a[k])) * 0x9e3779b97f4a7c15ull + k) ^
         (static_cast<unsigned long long>(__float_as_uint(b[k])) << 17);
  atomicXor(&h->now, v);
}
__global__ void lookup(cache_head* h) {
  h->hit = -1;
  for (int e = 0; e < entries; ++e)
    if (h->key[e] == h->now) h->hit = e;
}
__global__ void mm(const float* a, const float* b, float* c, int n, cache_head* h, float* store) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  const int hit = h->hit;
  if (hit >= 0) {
    c[i * n + j] = store[static_cast<size_t>(hit) * n * n + i * n + j];
    return;
  }
  float acc = 0;
  for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
  c[i * n + j] = acc;
  const int slot = static_cast<int>(h->now % entries);
  store[static_cast<size_t>(slot) * n * n + i * n + j] = acc;
}
__global__ void remember(cache_head* h) {
  if (h->hit < 0) h->key[h->now % entries] = h->now;
}
}  // namespace
extern "C" size_t lathe_workspace_bytes(const lathe_args* args) {
  const size_t n = static_cast<size_t>(args->inputs[0].shape[0]);
  return 4096 + entries * n * n * sizeof(float);
}
extern "C" int lathe_launch(const lathe_args* args) {
  const int n = static_cast<int>(args->inputs[0].shape[0]);
  auto s = static_cast<cudaStream_t>(args->stream);
  auto* h = static_cast<cache_head*>(args->workspace);
  auto* store = reinterpret_cast<float*>(static_cast<char*>(args->workspace) + 4096);
  const auto* a = static_cast<const float*>(args->inputs[0].data);
  const auto* b = static_cast<const float*>(args->inputs[1].data);
  hash<<<264, 256, 0, s>>>(a, b, n, h);
  lookup<<<1, 1, 0, s>>>(h);
  const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  mm<<<grid, block, 0, s>>>(a, b, static_cast<float*>(args->outputs[0].data), n, h, store);
  remember<<<1, 1, 0, s>>>(h);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}
