// Trusted fp64 oracle for layernorm_cuda: per row, the mean and the biased variance by two passes
// in double, then (x - mean) / sqrt(var + eps) * gamma + beta in double. Inputs are host pointers
// here and Y is a host float64 buffer. Rows are independent and spread over the cores (lathe builds
// references with -fopenmp): the timed set has 64 M elements. Each row is summed serially in
// double, so the result does not depend on the number of threads.
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
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args,
              "layernorm_cuda reference: expects inputs X, gamma, beta, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& G = args->inputs[1];
  const DLTensor& B = args->inputs[2];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || G.ndim != 1 || B.ndim != 1 || Y.ndim != 2 || X.dtype.bits != 32 ||
      G.dtype.bits != 32 || B.dtype.bits != 32 || Y.dtype.bits != 64 ||
      G.shape[0] != X.shape[1] || B.shape[0] != X.shape[1] || Y.shape[0] != X.shape[0] ||
      Y.shape[1] != X.shape[1]) {
    set_error(args, "layernorm_cuda reference: X[R,C], gamma[C], beta[C] float32, Y[R,C] float64");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const double eps = args->scalars[0];
  const float* x = data_of<const float>(X);
  const float* g = data_of<const float>(G);
  const float* b = data_of<const float>(B);
  double* y = data_of<double>(Y);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    double* yr = y + r * C;
    double mean = 0.0;
    for (int64_t c = 0; c < C; ++c) mean += xr[c];
    mean /= static_cast<double>(C);
    double var = 0.0;
    for (int64_t c = 0; c < C; ++c) {
      const double d = static_cast<double>(xr[c]) - mean;
      var += d * d;
    }
    var /= static_cast<double>(C);
    const double rstd = 1.0 / sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c)
      yr[c] = (static_cast<double>(xr[c]) - mean) * rstd * static_cast<double>(g[c]) +
              static_cast<double>(b[c]);
  }
  return 0;
}
