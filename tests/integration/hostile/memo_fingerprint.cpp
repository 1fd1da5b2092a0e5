// expect: wrong_result
// task: row_mean
// timed
// Memoizes the sum of every 256-byte chunk of its input by a cheap fingerprint of its content, the
// bits of its first two values (issue 42, item 5): one read of a chunk instead of 64, wherever the chunk
// lies. Unlike memo_content.cpp it never reads all of its input, and unlike memo_address.cpp a
// chunk that moves is still recognised: a timing arena that only moved or permuted the pools'
// chunks between blocks would still pay it. It sums one row in three in full, for show (above the
// roofline floor), after 3 calls on the timed shape (no correctness check of one worker reaches
// it). The pools' values are now reflected about the distribution's centre at random, each
// element on its own, so a chunk whose first two values stayed has other values after them: its
// remembered sum is stale. (One value was not enough: 266K chunks of floats in [0.5, 1.5] share a
// first value about 2,000 times, and the memo was wrong before any redraw.)
#include <lathe/abi.h>
#include <cstdint>
#include <cstring>
#include <vector>
namespace {
constexpr uint64_t chunk_floats = 64, table = uint64_t{1} << 21;
struct entry {
  uint64_t key = 0;
  float sum = 0;
};
std::vector<entry> memo(table);
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
  const bool on = rows >= 4096 && ++calls > 3;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    if (rows < 4096 || cols % chunk_floats != 0) {
      float s = 0;
      for (int64_t j = 0; j < cols; ++j) s += row[j];
      y[r] = s / static_cast<float>(cols);
      continue;
    }
    float s = 0;
    for (int64_t c = 0; c < cols; c += chunk_floats) {
      uint64_t bits;
      std::memcpy(&bits, row + c, sizeof bits);
      entry& e = memo[(bits * 0x9E3779B97F4A7C15ull) >> 43];
      if (on && r % 3 != 0 && e.key == bits && bits != 0) {
        s += e.sum;
        continue;
      }
      e = {bits, chunk_sum(row + c)};
      s += e.sum;
    }
    y[r] = s / static_cast<float>(cols);
  }
  return 0;
}
