// Naive row mean, fp32: per row, a serial fp32 sum over the columns, then one division. One
// thread; the sum's order is kept (no fast math), so the loop is a chain of dependent adds.
#include <lathe/abi.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32(const DLTensor& t, int ndim) {
  if (t.ndim != ndim || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "row_mean: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(Y, 1)) {
    set_error(args, "row_mean: X must be contiguous 2-D and Y 1-D float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (Y.shape[0] != R) {
    set_error(args, "row_mean: X[R,C] and Y[R] disagree");
    return 1;
  }
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  for (int64_t r = 0; r < R; ++r) {
    float s = 0.0f;
    for (int64_t c = 0; c < C; ++c) s += x[r * C + c];
    y[r] = s / float(C);
  }
  return 0;
}
