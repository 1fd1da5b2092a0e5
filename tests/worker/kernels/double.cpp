// The good kernel: out = scalars[0] * in over float32, with a workspace it checks for alignment.
#include <lathe/abi.h>

#include <cstdint>
#include <cstdio>

extern "C" size_t lathe_workspace_bytes(const lathe_args*) {
  return 1000;
}

extern "C" int lathe_launch(const lathe_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1 || a->num_scalars != 1) {
    std::snprintf(a->error, a->error_bytes, "bad arity");
    return 1;
  }
  if (!a->workspace || a->workspace_bytes != 1000 ||
      reinterpret_cast<uintptr_t>(a->workspace) % 256 != 0 ||
      reinterpret_cast<uintptr_t>(a->inputs[0].data) % 256 != 0) {
    std::snprintf(a->error, a->error_bytes, "workspace or tensor not aligned");
    return 2;
  }
  const float* in = static_cast<const float*>(a->inputs[0].data);
  float* out = static_cast<float*>(a->outputs[0].data);
  int64_t n = 1;
  for (int d = 0; d < a->inputs[0].ndim; ++d) n *= a->inputs[0].shape[d];
  static_cast<char*>(a->workspace)[999] = 1;  // the workspace is really there
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(a->scalars[0]) * in[i];
  return 0;
}
