// Trusted fp64 oracle for reduction_cuda: Y[r] = sum of X[r,:] in double. Inputs are host pointers
// here and Y is a host float64 buffer. One unit-stride pass over X.
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

template <class T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) {
    set_error(args, "reduction_cuda reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || Y.ndim != 1 || X.dtype.bits != 32 || Y.dtype.bits != 64 ||
      Y.shape[0] != X.shape[0]) {
    set_error(args, "reduction_cuda reference: X[R,C] float32, Y[R] float64");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    // Four partial sums let the compiler overlap the additions; all in double, so the order does
    // not matter at fp32 tolerances.
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t c = 0;
    for (; c + 4 <= C; c += 4) {
      s0 += xr[c];
      s1 += xr[c + 1];
      s2 += xr[c + 2];
      s3 += xr[c + 3];
    }
    for (; c < C; ++c) s0 += xr[c];
    y[r] = (s0 + s1) + (s2 + s3);
  }
  return 0;
}
