// Trusted fp64 oracle for conv2d (3x3, stride 1, pad 1, NCHW): every product and sum in double.
//
// Loop order n, k, c, r, s, then the output plane: the innermost loop runs along a row of W
// (unit stride in X and Y, vectorized at -O2), and one output plane (H*W doubles, 25 KB at
// 56 x 56) stays in L1/L2 while it accumulates all C*9 taps. Edges are handled by clipping the
// w range per tap instead of testing every element.
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
  if (args->num_inputs != 2 || args->num_outputs != 1) {
    set_error(args, "conv2d reference: expects inputs X, Wt and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 4 || Wt.ndim != 4 || Y.ndim != 4 || X.dtype.bits != 32 || Wt.dtype.bits != 32 ||
      Y.dtype.bits != 64) {
    set_error(args, "conv2d reference: X, Wt must be 4-D float32 and Y 4-D float64");
    return 1;
  }
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t K = Wt.shape[0];
  if (Wt.shape[1] != C || Wt.shape[2] != 3 || Wt.shape[3] != 3 || Y.shape[0] != N ||
      Y.shape[1] != K || Y.shape[2] != H || Y.shape[3] != W) {
    set_error(args, "conv2d reference: shapes disagree (X[N,C,H,W], Wt[K,C,3,3], Y[N,K,H,W])");
    return 1;
  }
  const float* x = data_of<const float>(X);
  const float* wt = data_of<const float>(Wt);
  double* y = data_of<double>(Y);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      double* yp = y + (n * K + k) * H * W;
      for (int64_t i = 0; i < H * W; ++i) yp[i] = 0.0;
      for (int64_t c = 0; c < C; ++c) {
        const float* xp = x + (n * C + c) * H * W;
        for (int64_t r = 0; r < 3; ++r) {
          for (int64_t s = 0; s < 3; ++s) {
            const double wv = wt[((k * C + c) * 3 + r) * 3 + s];
            // Output (h, w) reads X (h + r - 1, w + s - 1): clip both ranges to the image.
            const int64_t h0 = r == 0 ? 1 : 0, h1 = r == 2 ? H - 1 : H;
            const int64_t w0 = s == 0 ? 1 : 0, w1 = s == 2 ? W - 1 : W;
            for (int64_t h = h0; h < h1; ++h) {
              double* yr = yp + h * W;
              const float* xr = xp + (h + r - 1) * W + (s - 1);
              for (int64_t w = w0; w < w1; ++w) yr[w] += wv * static_cast<double>(xr[w]);
            }
          }
        }
      }
    }
  }
  return 0;
}
