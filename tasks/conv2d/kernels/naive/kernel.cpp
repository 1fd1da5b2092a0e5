// Naive 3x3 convolution, stride 1, padding 1, NCHW fp32: the direct seven-deep loop nest
// (n, k, h, w, c, r, s) with a bounds test on every tap and a scalar fp32 accumulator.
// No blocking, no vectorization along W, no threads: what a lineage starts from.
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

bool is_f32_4d(const DLTensor& t) {
  if (t.ndim != 4 || t.dtype.code != kDLFloat || t.dtype.bits != 32 || t.dtype.lanes != 1)
    return false;
  if (t.strides == nullptr) return true;
  int64_t expect = 1;
  for (int d = 3; d >= 0; --d) {
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
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32_4d(X) || !is_f32_4d(Wt) || !is_f32_4d(Y)) {
    set_error(args, "conv2d: X, Wt, Y must be contiguous 4-D float32");
    return 1;
  }
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t K = Wt.shape[0];
  if (Wt.shape[1] != C || Wt.shape[2] != 3 || Wt.shape[3] != 3 || Y.shape[0] != N ||
      Y.shape[1] != K || Y.shape[2] != H || Y.shape[3] != W) {
    set_error(args, "conv2d: shapes disagree (X[N,C,H,W], Wt[K,C,3,3], Y[N,K,H,W])");
    return 1;
  }
  const float* x = data_of<const float>(X);
  const float* wt = data_of<const float>(Wt);
  float* y = data_of<float>(Y);

  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          float sum = 0.0f;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t s = 0; s < 3; ++s) {
                const int64_t hi = h + r - 1, wi = w + s - 1;
                if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
                sum += x[((n * C + c) * H + hi) * W + wi] * wt[((k * C + c) * 3 + r) * 3 + s];
              }
          y[((n * K + k) * H + h) * W + w] = sum;
        }
  return 0;
}
