// expect: ok
// kb_topk, sorted ascending (torch returns another order) with ties taken by the highest column
// (torch's choice differs): right under the "topk" comparison.
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
      ix[r * K + K - 1 - j] = row[j].second;
    }
  }
  return 0;
}
