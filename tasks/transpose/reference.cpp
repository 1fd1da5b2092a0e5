// Trusted fp64 oracle for transpose: Y[c, r] = X[r, c], widened to double (exactly).
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
    set_error(args, "transpose reference: expects input X and output Y");
    return 1;
  }
  const DLTensor& X = args->inputs[0];
  const DLTensor& Y = args->outputs[0];
  if (X.ndim != 2 || Y.ndim != 2 || X.dtype.bits != 32 || Y.dtype.bits != 64 ||
      Y.shape[0] != X.shape[1] || Y.shape[1] != X.shape[0]) {
    set_error(args, "transpose reference: X must be float32 [R,C] and Y float64 [C,R]");
    return 1;
  }
  const int64_t R = X.shape[0], C = X.shape[1];
  const float* x = data_of<const float>(X);
  double* y = data_of<double>(Y);
  // 32 x 32 tiles: both the rows read and the rows written stay in L1 while a tile is copied.
  constexpr int64_t T = 32;
  for (int64_t r0 = 0; r0 < R; r0 += T)
    for (int64_t c0 = 0; c0 < C; c0 += T) {
      const int64_t r1 = r0 + T < R ? r0 + T : R, c1 = c0 + T < C ? c0 + T : C;
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) y[c * R + r] = x[r * C + c];
    }
  return 0;
}
