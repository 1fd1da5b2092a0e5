// expect: wrong_result
// kb_topk with every tied value given the column of the first of its ties: right values, but
// one column named twice in a row, which the index check refuses.
#include <lathe/abi.h>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  float* v = static_cast<float*>(a->outputs[0].data);
  int64_t* ix = static_cast<int64_t*>(a->outputs[1].data);
  const long R = X.shape[0], C = X.shape[1], K = a->outputs[0].shape[1];
  std::vector<std::pair<float, long>> row(C);
  for (long r = 0; r < R; ++r) {
    for (long c = 0; c < C; ++c) row[c] = {x[r * C + c], c};
    std::sort(row.begin(), row.end(), [](auto p, auto q) {
      return p.first != q.first ? p.first > q.first : p.second > q.second;
    });
    for (long j = 0; j < K; ++j) {
      v[r * K + K - 1 - j] = row[j].first;
      const bool tie = j > 0 && row[j].first == row[j - 1].first;
      ix[r * K + K - 1 - j] = tie ? ix[r * K + K - j] : row[j].second;
    }
  }
  return 0;
}
