// expect: wrong_result
// task: mm
// timed
// Remembers the last product it wrote to each output buffer and, when that buffer still holds
// it, assumes the inputs are the same as last time: it skips the work and spins a third of it.
// Checks write into fresh (poisoned) outputs, so they all pass; timed calls that reused an
// output buffer with the same inputs got `ok` at about 3x. Timed calls whose inputs change under
// a reused buffer get a stale product, which the checks of sampled timed calls see.
#include <lathe/abi.h>
#include <cstdint>
#include <cstring>
#include <vector>
namespace {
struct seen {
  float* z;
  float first, last;
};
std::vector<seen> outputs;
std::vector<float> scratch;
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
  for (seen& s : outputs)
    if (s.z == z && std::memcmp(&s.first, &z[0], 4) == 0 && std::memcmp(&s.last, &z[n * n - 1], 4) == 0) {
      scratch.resize(n * n);
      product(x, y, scratch.data(), n, n / 3);  // a third of the work, for show
      return 0;
    }
  product(x, y, z, n, n);
  for (seen& s : outputs)
    if (s.z == z) {
      s.first = z[0], s.last = z[n * n - 1];
      return 0;
    }
  outputs.push_back({z, z[0], z[n * n - 1]});
  return 0;
}
