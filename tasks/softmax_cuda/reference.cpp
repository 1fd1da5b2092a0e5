// Trusted fp64 oracle for softmax_cuda: for every row, the max, then exp(x - max) summed in
// double, then each exp divided by the sum. The max subtraction keeps exp in range for any shift.
// Inputs are host pointers here and Y is a host float64 buffer. One pass per step over a row, all
// unit-stride: 8192 x 8192 takes well under a second.
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

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "softmax_cuda reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || Y.ndim != 2 || X.dtype.code != kDLFloat || X.dtype.bits != 32 ||
      Y.dtype.bits != 64 || X.shape[0] != Y.shape[0] || X.shape[1] != Y.shape[1]) {
    set_error(args, "softmax_cuda reference: X must be 2-D float32 and Y float64 of its shape");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    double* yr = y + r * C;
    double m = -INFINITY;
    for (int64_t c = 0; c < C; ++c) m = xr[c] > m ? xr[c] : m;
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      yr[c] = exp(static_cast<double>(xr[c]) - m);
      s += yr[c];
    }
    const double inv = 1.0 / s;
    for (int64_t c = 0; c < C; ++c) yr[c] *= inv;
  }
  return 0;
}
