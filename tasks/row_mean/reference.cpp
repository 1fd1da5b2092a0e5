// Trusted fp64 oracle for the row mean: per row, the sum in double (exact to ~1e-16 relative for
// these row lengths), divided by C.
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
    set_error(args, "row_mean reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || Y.ndim != 1 || X.dtype.bits != 32 || Y.dtype.bits != 64 ||
      Y.shape[0] != X.shape[0]) {
    set_error(args, "row_mean reference: X must be float32 [R,C] and Y float64 [R]");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
  for (int64_t r = 0; r < R; ++r) {
    double s = 0.0;
    for (int64_t c = 0; c < C; ++c) s += x[r * C + c];
    y[r] = s / double(C);
  }
  return 0;
}
