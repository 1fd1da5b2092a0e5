// Naive SiLU, fp32: y = x / (1 + expf(-x)) with a plain double loop over rows and columns. One
// thread; expf is a libm call per element, so the loop is not vectorized.
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace {

void set_error(const lathe_args* a, const char* msg) {
  if (a->error == nullptr || a->error_bytes == 0) return;
  size_t i = 0;
  for (; msg[i] != '\0' && i + 1 < a->error_bytes; ++i) a->error[i] = msg[i];
  a->error[i] = '\0';
}

bool is_f32_matrix(const DLTensor& t) {
  if (t.ndim != 2 || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  return t.strides == nullptr || (t.strides[1] == 1 && t.strides[0] == t.shape[1]);
}

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_launch(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "silu: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32_matrix(X) || !is_f32_matrix(Y)) {
    set_error(args, "silu: X and Y must be contiguous 2-D float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (Y.shape[0] != R || Y.shape[1] != C) {
    set_error(args, "silu: X[R,C] and Y[R,C] disagree");
    return 1;
  }
  const float* x = data_of<const float>(X);
  float* y = data_of<float>(Y);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = x[r * C + c] / (1.0f + expf(-x[r * C + c]));
  return 0;
}
