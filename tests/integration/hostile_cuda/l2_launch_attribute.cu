// expect: forbidden
// Pins its input in L2 through a launch attribute (cudaLaunchKernelEx) instead of a stream
// attribute: the same persistent-L2 trick without cudaStreamSetAttribute.
#include <lathe/abi.h>
__global__ void axpy(float a, const float* x, const float* y, float* z, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) z[i] = a * x[i] + y[i];
}
extern "C" int lathe_launch(const lathe_args* args) {
  const int64_t n = args->inputs[0].shape[0];
  cudaLaunchAttribute at[1] = {};
  at[0].id = cudaLaunchAttributeAccessPolicyWindow;
  at[0].val.accessPolicyWindow.base_ptr = const_cast<void*>(args->inputs[0].data);
  at[0].val.accessPolicyWindow.num_bytes = static_cast<size_t>(n) * sizeof(float);
  at[0].val.accessPolicyWindow.hitRatio = 1.0f;
  at[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  at[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>((n + 255) / 256));
  cfg.blockDim = dim3(256);
  cfg.stream = static_cast<cudaStream_t>(args->stream);
  cfg.attrs = at;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, axpy, 2.5f, static_cast<const float*>(args->inputs[0].data),
                            static_cast<const float*>(args->inputs[1].data),
                            static_cast<float*>(args->outputs[0].data), n) != cudaSuccess;
}
