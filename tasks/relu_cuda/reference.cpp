// Trusted fp64 oracle for relu_cuda: Y = max(X, 0), each input widened exactly to double. Inputs
// are host pointers here and Y is a host float64 buffer. No arithmetic, so nothing to round: the
// result is exact. NaN propagates as in torch.relu (the task's inputs hold none). One unit-stride
// pass, spread over the cores (lathe builds references with -fopenmp): the timed set has 1.6 G
// elements, 6 GiB read and 12 GiB written.
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
    set_error(args, "relu_cuda reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != Y.ndim || X.dtype.code != kDLFloat || X.dtype.bits != 32 ||
      Y.dtype.code != kDLFloat || Y.dtype.bits != 64) {
    set_error(args, "relu_cuda reference: X must be float32 and Y float64 of its shape");
    return 1;
  }
  int64_t n = 1;
  for (int d = 0; d < X.ndim; ++d) {
    if (X.shape[d] != Y.shape[d]) {
      set_error(args, "relu_cuda reference: X and Y shapes differ");
      return 1;
    }
    n *= X.shape[d];
  }
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = v > 0.0 ? v : (v == v ? 0.0 : v);  // v != v: NaN, kept
  }
  return 0;
}
