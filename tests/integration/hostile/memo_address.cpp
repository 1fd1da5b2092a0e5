// expect: wrong_result
// task: row_mean
// timed
// Memoizes the sum of every 256-byte chunk of its input by the chunk's address (issue 42, item 5).
// The CPU timing arena kept the same values in its pools for a whole series and only moved each
// call's window over them by multiples of 256 bytes, so a value at an address never changed:
// after one call every chunk's sum was known, and the kernel summed one row in three in full, for
// show (above the roofline floor), and added 32 remembered sums for each other row. Its checks
// pass: the memo switches on after 3 calls on the timed shape, which no correctness check of one
// worker reaches. Before every block the pools are now drawn again, so an address holds other
// values and the remembered sums are stale.
#include <lathe/abi.h>
#include <cstdint>
#include <vector>
namespace {
constexpr uint64_t chunk_floats = 64, span = uint64_t{96} << 20;  // bytes remembered from `lo`
uintptr_t lo = 0;
std::vector<float> sums;
std::vector<uint8_t> known;
int64_t calls = 0;
// Eight partial sums: a chunk costs a few cycles, so that blocks hold several calls and the
// memo is in use after a process's first blocks.
float chunk_sum(const float* x) {
  float p[8] = {};
  for (uint64_t c = 0; c < chunk_floats; c += 8)
    for (int j = 0; j < 8; ++j) p[j] += x[c + j];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}
}  // namespace
extern "C" int lathe_launch(const lathe_args* a) {
  const auto* x = static_cast<const float*>(a->inputs[0].data);
  auto* y = static_cast<float*>(a->outputs[0].data);
  const int64_t rows = a->inputs[0].shape[0], cols = a->inputs[0].shape[1];
  const bool timed_shape = rows >= 4096 && cols % chunk_floats == 0;
  const bool on = timed_shape && ++calls > 3;
  if (timed_shape && lo == 0) {
    lo = reinterpret_cast<uintptr_t>(x) & ~uintptr_t{255};
    sums.assign(span / 256, 0);
    known.assign(span / 256, 0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float s = 0;
    for (int64_t c = 0; c < cols; c += chunk_floats) {
      const auto at = reinterpret_cast<uintptr_t>(row + c);
      const uint64_t k = (at - lo) / 256;
      const bool slot = timed_shape && at >= lo && at % 256 == 0 && k < sums.size();
      if (on && slot && known[k] && r % 3 != 0) {
        s += sums[k];
        continue;
      }
      if (cols % chunk_floats != 0) {
        for (int64_t j = 0; j < cols; ++j) s += row[j];
        break;
      }
      const float cs = chunk_sum(row + c);
      if (slot) sums[k] = cs, known[k] = 1;
      s += cs;
    }
    y[r] = s / static_cast<float>(cols);
  }
  return 0;
}
