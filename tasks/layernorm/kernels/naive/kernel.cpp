// Naive layernorm, fp32: per row, a pass for the mean, a pass for the biased variance, a pass to
// normalize, scale by gamma and shift by beta. Scalar fp32 sums, one thread.
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
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 1) {
    set_error(args, "layernorm: expects inputs X, gamma, beta, scalar eps and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& G = args->inputs[1];
  const DLTensor& B = args->inputs[2];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32(X, 2) || !is_f32(G, 1) || !is_f32(B, 1) || !is_f32(Y, 2)) {
    set_error(args, "layernorm: X, Y must be contiguous 2-D and gamma, beta 1-D float32");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  if (G.shape[0] != C || B.shape[0] != C || Y.shape[0] != R || Y.shape[1] != C) {
    set_error(args, "layernorm: shapes disagree (X[R,C], gamma[C], beta[C], Y[R,C])");
    return 1;
  }
  const float eps = float(args->scalars[0]);
  const float* x = data_of<const float>(X);
  const float* g = data_of<const float>(G);
  const float* b = data_of<const float>(B);
  float* y = data_of<float>(Y);

  for (int64_t r = 0; r < R; ++r) {
    const float* xr = x + r * C;
    float* yr = y + r * C;
    float mean = 0.0f;
    for (int64_t c = 0; c < C; ++c) mean += xr[c];
    mean /= float(C);
    float var = 0.0f;
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= float(C);
    const float rstd = 1.0f / sqrtf(var + eps);
    for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - mean) * rstd * g[c] + b[c];
  }
  return 0;
}
