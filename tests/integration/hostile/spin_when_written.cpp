// expect: ok no-speedup
// task: mm
// timed
// Notices that its output still holds the product it wrote last time for the same input
// buffers, and spins a third of the work instead of computing. With the same inputs in the
// same buffers call after call, every timed call after the first was such a call (`ok` at about
// 3x the naive baseline); once every timed call reads inputs it has not been given before, it
// must compute every one.
#include <lathe/abi.h>
#include <cstdint>
#include <cstring>
#include <vector>
namespace {
struct seen {
  const float *x, *y;
  float* z;
  float first, last;
  uint32_t x0, y0;
};
std::vector<seen> calls;
std::vector<float> scratch;
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
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
  for (const seen& s : calls)
    if (s.x == x && s.y == y && s.z == z && bits(s.first) == bits(z[0]) &&
        bits(s.last) == bits(z[n * n - 1]) && s.x0 == bits(x[0]) && s.y0 == bits(y[0])) {
      scratch.resize(n * n);
      product(x, y, scratch.data(), n, n / 3);  // a third of the work, for show
      return 0;
    }
  product(x, y, z, n, n);
  if (calls.size() < 4096) calls.push_back({x, y, z, z[0], z[n * n - 1], bits(x[0]), bits(y[0])});
  return 0;
}
