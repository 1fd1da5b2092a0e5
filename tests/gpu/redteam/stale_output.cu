// expect: wrong_result
// task: mm_cuda
// The CUDA analogue of stale_by_output.cpp: remembers two elements of the product it last wrote
// to each output buffer and, when the buffer still holds them, takes the inputs to be the same as
// last time and skips the product. Checks write into poisoned outputs, so they all pass; while
// the timed calls replayed slots whose contents never changed, every replay after the first was a
// correct no-op. Now a slot's next call reads another window of it, and the slots are drawn again
// between blocks without their outputs being touched: the skipped calls leave a product of other
// inputs, which the check of the last block's outputs against their own references finds.
#include <lathe/abi.h>
#include <cstdint>
#include <map>
namespace {
struct seen {
  float first, middle;
  int valid, skip;
};
constexpr int entries = 256;  // output buffers remembered (slots of the checks and the timing)
std::map<void*, int> buffers;
__global__ void look(const float* c, int n, seen* s) {
  const int mid = n * n / 2;
  s->skip = s->valid && c[0] == s->first && c[mid] == s->middle;  // NaN poison never equals
}
__global__ void mm(const float* a, const float* b, float* c, int n, const seen* s) {
  if (s->skip) return;
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  float acc = 0;
  for (int k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
  c[i * n + j] = acc;
}
__global__ void keep(const float* c, int n, seen* s) {
  if (s->skip) return;
  s->first = c[0];
  s->middle = c[n * n / 2];
  s->valid = 1;
}
}  // namespace
extern "C" size_t lathe_workspace_bytes(const lathe_args*) { return entries * sizeof(seen); }
extern "C" int lathe_launch(const lathe_args* args) {
  const int n = static_cast<int>(args->inputs[0].shape[0]);
  auto st = static_cast<cudaStream_t>(args->stream);
  void* out = args->outputs[0].data;
  auto at = buffers.find(out);
  if (at == buffers.end()) {
    if (static_cast<int>(buffers.size()) >= entries) buffers.clear();
    at = buffers.emplace(out, static_cast<int>(buffers.size())).first;
  }
  seen* s = static_cast<seen*>(args->workspace) + at->second;
  auto* c = static_cast<float*>(out);
  look<<<1, 1, 0, st>>>(c, n, s);
  const dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
  mm<<<grid, block, 0, st>>>(static_cast<const float*>(args->inputs[0].data),
                             static_cast<const float*>(args->inputs[1].data), c, n, s);
  keep<<<1, 1, 0, st>>>(c, n, s);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}
