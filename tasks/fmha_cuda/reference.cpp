// Trusted fp64 oracle for fmha_cuda: O = softmax(Q Kᵀ · scale [+ causal mask]) V per (b, h) of
// [B, H, S, 128] bf16 tensors, computed in double (bf16 -> double is exact) the direct way: for
// each query row i, every score s_j = scale · q_i·k_j (j <= i when causal), m = max_j s_j,
// p_j = exp(s_j - m), O_i = Σ p_j v_j / Σ p_j. No tiling and no online rescaling: the oracle is the
// textbook formula. Inputs are host pointers here; O is a host float64 buffer.
//
// Cost: 4·S²·128 flops per head (half when causal). Rows are independent and spread over the
// cores with OpenMP (references are built with -fopenmp). The small and ragged sets take
// milliseconds to a second; the timed set (4 x 16 heads of 4096) needs minutes on a few cores,
// which is what the GPU reference (reference.cu) is for.
#include <lathe/abi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vector>

namespace {

constexpr int64_t D = 128;

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

double bf16_to_double(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return static_cast<double>(f);
}

bool is_bhsd(const DLTensor& t, uint8_t code, uint8_t bits) {
  return t.ndim == 4 && t.dtype.code == code && t.dtype.bits == bits && t.dtype.lanes == 1 &&
         t.shape[3] == D;
}

}  // namespace

extern "C" int lathe_reference(const lathe_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 2) {
    set_error(args, "fmha_cuda reference: expects inputs Q, K, V, output O, scalars causal, scale");
    return 1;
  }
  const DLTensor& Qt = args->inputs[0];
  const DLTensor& Kt = args->inputs[1];
  const DLTensor& Vt = args->inputs[2];
  const DLTensor& Ot = args->outputs[0];
  if (!is_bhsd(Qt, kDLBfloat, 16) || !is_bhsd(Kt, kDLBfloat, 16) || !is_bhsd(Vt, kDLBfloat, 16) ||
      !is_bhsd(Ot, kDLFloat, 64)) {
    set_error(args, "fmha_cuda reference: Q, K, V must be bfloat16 [B, H, S, 128], O float64");
    return 1;
  }
  for (int i = 0; i < 3; ++i)
    if (Kt.shape[i] != Qt.shape[i] || Vt.shape[i] != Qt.shape[i] || Ot.shape[i] != Qt.shape[i]) {
      set_error(args, "fmha_cuda reference: Q, K, V and O must have one shape");
      return 1;
    }
  const bool causal = args->scalars[0] != 0.0;
  const double scale = args->scalars[1];
  const int64_t BH = Qt.shape[0] * Qt.shape[1], S = Qt.shape[2];
  const uint16_t* Q = data_of<const uint16_t>(Qt);
  const uint16_t* K = data_of<const uint16_t>(Kt);
  const uint16_t* V = data_of<const uint16_t>(Vt);
  double* O = data_of<double>(Ot);

#pragma omp parallel
  {
    std::vector<double> p(static_cast<size_t>(S));
    double q[D], o[D];
#pragma omp for schedule(dynamic, 16)
    for (int64_t row = 0; row < BH * S; ++row) {
      const int64_t head = row / S * S * D, i = row % S;
      for (int64_t d = 0; d < D; ++d) q[d] = bf16_to_double(Q[head + i * D + d]);
      const int64_t n = causal ? i + 1 : S;
      double m = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t* k = K + head + j * D;
        double s = 0.0;
        for (int64_t d = 0; d < D; ++d) s += q[d] * bf16_to_double(k[d]);
        p[j] = s * scale;
        if (p[j] > m) m = p[j];
      }
      double l = 0.0;
      for (int64_t d = 0; d < D; ++d) o[d] = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        const double e = exp(p[j] - m);
        l += e;
        const uint16_t* v = V + head + j * D;
        for (int64_t d = 0; d < D; ++d) o[d] += e * bf16_to_double(v[d]);
      }
      for (int64_t d = 0; d < D; ++d) O[head + i * D + d] = o[d] / l;
    }
  }
  return 0;
}
