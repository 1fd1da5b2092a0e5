// Baseline conv2d (3x3, stride 1, pad 1, NCHW fp32): the textbook lowering to one GEMM per image.
//   col[c*9 + r*3 + s][h*W + w] = X[n, c, h+r-1, w+s-1]   (0 outside the image)
//   Y[n] (K x HW) = Wt (K x 9C) · col (9C x HW)          cblas_sgemm, row-major
// The column buffer (9C x HW floats, 7.2 MB for the 64-channel 56 x 56 set) comes from the
// workspace (kernels do not allocate) and is reused image by image.
#include <cblas.h>
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

const char* check_shapes(const lathe_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1)
    return "conv2d: expects inputs X, Wt and output Y";
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const DLTensor& Y = args->outputs[0];
  if (!is_f32_4d(X) || !is_f32_4d(Wt) || !is_f32_4d(Y))
    return "conv2d: X, Wt, Y must be contiguous 4-D float32";
  if (Wt.shape[1] != X.shape[1] || Wt.shape[2] != 3 || Wt.shape[3] != 3 ||
      Y.shape[0] != X.shape[0] || Y.shape[1] != Wt.shape[0] || Y.shape[2] != X.shape[2] ||
      Y.shape[3] != X.shape[3])
    return "conv2d: shapes disagree (X[N,C,H,W], Wt[K,C,3,3], Y[N,K,H,W])";
  // blasint is 32-bit in Debian's OpenBLAS (no INTERFACE64).
  if (X.shape[1] * 9 > INT32_MAX || X.shape[2] * X.shape[3] > INT32_MAX || Wt.shape[0] > INT32_MAX)
    return "conv2d: a GEMM dimension exceeds OpenBLAS's 32-bit index";
  return nullptr;
}

size_t col_bytes(const DLTensor& X) {
  return size_t(X.shape[1]) * 9 * size_t(X.shape[2]) * size_t(X.shape[3]) * sizeof(float);
}

// One image's column matrix; each (c, r, s) row is H*W floats, edges zero-filled.
void im2col(const float* x, int64_t C, int64_t H, int64_t W, float* col) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t s = 0; s < 3; ++s) {
        float* dst = col + ((c * 3 + r) * 3 + s) * H * W;
        for (int64_t h = 0; h < H; ++h) {
          const int64_t hi = h + r - 1;
          float* d = dst + h * W;
          if (hi < 0 || hi >= H) {
            for (int64_t w = 0; w < W; ++w) d[w] = 0.0f;
            continue;
          }
          const float* src = x + (c * H + hi) * W + (s - 1);
          for (int64_t w = 0; w < W; ++w) {
            const int64_t wi = w + s - 1;
            d[w] = (wi >= 0 && wi < W) ? src[w] : 0.0f;
          }
        }
      }
}

}  // namespace

extern "C" size_t lathe_workspace_bytes(const lathe_args* args) {
  if (check_shapes(args) != nullptr) return 0;  // lathe_launch reports the error
  return col_bytes(args->inputs[0]);
}

extern "C" int lathe_launch(const lathe_args* args) {
  if (const char* msg = check_shapes(args)) {
    set_error(args, msg);
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Wt = args->inputs[1];
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t K = Wt.shape[0];
  const float* x = data_of<const float>(X);
  const float* wt = data_of<const float>(Wt);
  float* y = data_of<float>(args->outputs[0]);
  if (N == 0 || K == 0 || H == 0 || W == 0) return 0;
  if (C == 0) {  // no taps: Y = 0 (sgemm with an empty inner dimension would only scale by beta)
    for (int64_t i = 0; i < N * K * H * W; ++i) y[i] = 0.0f;
    return 0;
  }
  if (args->workspace == nullptr || args->workspace_bytes < col_bytes(X)) {
    set_error(args, "conv2d: workspace smaller than lathe_workspace_bytes asked for");
    return 1;
  }
  float* col = static_cast<float*>(args->workspace);
  const blasint m = blasint(K), n = blasint(H * W), k = blasint(C * 9);
  for (int64_t img = 0; img < N; ++img) {
    im2col(x + img * C * H * W, C, H, W, col);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, wt, k, col, n, 0.0f,
                y + img * K * H * W, n);
  }
  return 0;
}
