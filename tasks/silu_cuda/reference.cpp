// Trusted fp64 oracle for silu_cuda: y = x / (1 + exp(-x)) in double, each input widened exactly.
// Inputs are host pointers here and Y is a host float64 buffer. One unit-stride pass, spread over
// the cores (lathe builds references with -fopenmp): the timed set has 134 M elements.
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
    set_error(args, "silu_cuda reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || Y.ndim != 2 || X.dtype.code != kDLFloat || X.dtype.bits != 32 ||
      Y.dtype.code != kDLFloat || Y.dtype.bits != 64 || Y.shape[0] != X.shape[0] ||
      Y.shape[1] != X.shape[1]) {
    set_error(args, "silu_cuda reference: X must be float32 [R,C] and Y float64 [R,C]");
    return 1;
  }
  const int64_t n = X.shape[0] * X.shape[1];
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = v / (1.0 + exp(-v));
  }
  return 0;
}
