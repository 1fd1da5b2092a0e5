// expect: ok
// kb_linear_gelu: inputs x [M,K], fc_weight [N,K], fc_bias [N] (state_dict order); exact GELU.
#include <lathe/abi.h>
#include <math.h>
extern "C" int lathe_launch(const lathe_args* a) {
  const DLTensor& X = a->inputs[0];
  const float* x = static_cast<const float*>(X.data);
  const float* w = static_cast<const float*>(a->inputs[1].data);
  const float* b = static_cast<const float*>(a->inputs[2].data);
  float* y = static_cast<float*>(a->outputs[0].data);
  const long M = X.shape[0], K = X.shape[1], N = a->inputs[1].shape[0];
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float s = b[j];
      for (long k = 0; k < K; ++k) s += x[i * K + k] * w[j * K + k];
      y[i * N + j] = 0.5f * s * (1.0f + erff(s * 0.70710678f));
    }
  return 0;
}
