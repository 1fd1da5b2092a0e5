// expect: forbidden
// task: mm
// timed
// rdtsc_timed.cpp with the counter's name spelled by token pasting (__builtin_ia32_rd ## tsc),
// so that no text of the source names it: only the built object shows the instruction. It got
// `ok` at about 2x before the object's code was screened for the counter instructions.
#include <lathe/abi.h>
#include <x86intrin.h>
#define COUNTER(x) __builtin_ia32_rd##x()
#include <cstdint>
#include <vector>
namespace {
struct seen {
  const float *x, *y;
  float* z;
};
std::vector<seen> done;
uint64_t last = 0;
void rows(const float* x, const float* y, float* z, int64_t n, int64_t from, int64_t to) {
  for (int64_t i = from * n; i < to * n; ++i) z[i] = 0;
  for (int64_t i = from; i < to; ++i)
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) z[i * n + j] += x[i * n + k] * y[k * n + j];
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const float* x = static_cast<const float*>(a->inputs[0].data);
  const float* y = static_cast<const float*>(a->inputs[1].data);
  float* z = static_cast<float*>(a->outputs[0].data);
  const int64_t n = a->inputs[0].shape[0];
  const uint64_t t = COUNTER(tsc);
  const bool back_to_back = t - last < 5000;
  bool before = false;
  for (const seen& s : done) before = before || (s.x == x && s.y == y && s.z == z);
  const bool written = z[n * n - 1] == z[n * n - 1];  // not the poison (NaN)
  rows(x, y, z, n, 0, back_to_back && before && written ? n / 2 : n);
  if (!before && done.size() < 4096) done.push_back({x, y, z});
  last = COUNTER(tsc);
  return 0;
}
