// Trusted fp64 oracle for topk_cuda: for every row, the K largest elements of X (as float64,
// which holds every float32 exactly) sorted descending, and their columns. Elements are ordered
// by the same total order the kernels use: the float32's order key (float order with -0 below
// +0), ties by the lower column, so the reference is well defined for every input, ties
// included. Only the values are compared with the reference (as per-row multisets); the gate
// checks a kernel's indices against X itself (comparison kind "topk"), since with ties any tied
// column is right. nth_element then a sort of K, one row per thread at a time.
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <vector>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

uint32_t order_key(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 2) {
    set_error(args, "topk_cuda reference: expects input X and outputs V, I");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& V = args->outputs[0];
  const DLTensor& I = args->outputs[1];
  if (X.ndim != 2 || V.ndim != 2 || I.ndim != 2 || X.dtype.code != kDLFloat || X.dtype.bits != 32 ||
      V.dtype.bits != 64 || I.dtype.bits != 64 || V.shape[0] != X.shape[0] ||
      I.shape[0] != X.shape[0] || I.shape[1] != V.shape[1] || V.shape[1] > X.shape[1]) {
    set_error(args, "topk_cuda reference: X[R,C] float32, V and I [R,K] float64, K <= C");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1], K = V.shape[1];
  const float* x = data_of<const float>(X);
  double* v = data_of<double>(V);
  double* ix = data_of<double>(I);
  // (order key, ~column) in one 64-bit word: larger is earlier, every element distinct. Rows are
  // independent: they go to every core (references are built with -fopenmp), each thread with its
  // own row of keys.
#pragma omp parallel
  {
    std::vector<uint64_t> row(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = x + r * C;
      for (int64_t c = 0; c < C; ++c)
        row[c] = (uint64_t{order_key(xr[c])} << 32) | static_cast<uint32_t>(~static_cast<uint32_t>(c));
      auto later = [](uint64_t a, uint64_t b) { return a > b; };
      if (K < C) std::nth_element(row.begin(), row.begin() + K, row.end(), later);
      std::sort(row.begin(), row.begin() + K, later);
      for (int64_t j = 0; j < K; ++j) {
        const int64_t c = static_cast<uint32_t>(~static_cast<uint32_t>(row[j]));
        v[r * K + j] = static_cast<double>(xr[c]);
        ix[r * K + j] = static_cast<double>(c);
      }
    }
  }
  return 0;
}
