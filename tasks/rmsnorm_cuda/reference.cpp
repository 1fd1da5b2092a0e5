// Trusted fp64 oracle for rmsnorm_cuda: for every row, the mean of squares in double, then
// y = x / sqrt(mean + eps) * w in double. Inputs are host pointers here and Y is a host float64
// buffer. Two unit-stride passes per row: the timed 16384 x 8192 set takes well under a second.
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
  if (args->num_inputs != 2 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "rmsnorm_cuda reference: expects inputs X, w, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& W = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || W.ndim != 1 || Y.ndim != 2 || X.dtype.bits != 32 || W.dtype.bits != 32 ||
      Y.dtype.bits != 64 || W.shape[0] != X.shape[1] || Y.shape[0] != X.shape[0] ||
      Y.shape[1] != X.shape[1]) {
    set_error(args, "rmsnorm_cuda reference: X[R,C], w[C] float32, Y[R,C] float64");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const double eps = args->scalars[0];
  const float* x = data_of<const float>(X);
  const float* w = data_of<const float>(W);
  double* y = data_of<double>(Y);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    double* yr = y + r * C;
    double ss = 0.0;
    for (int64_t c = 0; c < C; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    const double inv = 1.0 / sqrt(ss / static_cast<double>(C) + eps);
    for (int64_t c = 0; c < C; ++c) yr[c] = static_cast<double>(xr[c]) * inv * w[c];
  }
  return 0;
}
