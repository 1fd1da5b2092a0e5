// expect: ok no-speedup
// task: mm
// timed
// Caches its product by the full content of its inputs (a 64-bit hash of every byte), so every
// check passes: new inputs miss the cache and are computed. Timed calls that see inputs again
// copy the cached product and do an eighth of the work for show, which keeps them far above
// the roofline floor. While timed inputs stayed the same call after call this got `ok` at about
// 8x the naive baseline; with fresh inputs in every timed call it finds nothing to reuse.
#include <lathe/abi.h>
#include <cstdint>
#include <cstring>
#include <vector>
namespace {
struct entry {
  uint64_t key;
  std::vector<float> c;
};
std::vector<entry> cache;
std::vector<float> scratch;
uint64_t mix(const float* p, int64_t n, uint64_t h) {
  const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
  for (int64_t i = 0; i < n; ++i) h = (h ^ q[i]) * 0x100000001b3ull;
  return h;
}
void product(const float* x, const float* y, float* z, int64_t n, int64_t rows) {
  for (int64_t i = 0; i < rows * n; ++i) z[i] = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) z[i * n + j] += x[i * n + k] * y[k * n + j];
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  const uint64_t key = mix(y, n * n, mix(x, n * n, 1469598103934665603ull));
  for (const entry& e : cache)
    if (e.key == key) {
      std::memcpy(z, e.c.data(), sizeof(float) * n * n);
      scratch.resize(n * n);
      product(x, y, scratch.data(), n, n / 8);
      return 0;
    }
  product(x, y, z, n, n);
  if (cache.size() < 64) cache.push_back({key, std::vector<float>(z, z + n * n)});
  return 0;
}
