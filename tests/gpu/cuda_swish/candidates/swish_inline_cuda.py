# expect: ok
# Inline CUDA through load_inline (cuda_sources): built by lathe before the candidate runs, for
# the task's architecture, and launched on torch's current stream, so that its calls can be
# captured into a CUDA graph.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor swish(torch::Tensor x);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void swish_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = v.x / (1.0f + expf(-v.x));
    v.y = v.y / (1.0f + expf(-v.y));
    v.z = v.z / (1.0f + expf(-v.z));
    v.w = v.w / (1.0f + expf(-v.w));
    y[i] = v;
  }
}

__global__ void swish_tail(const float* __restrict__ x, float* __restrict__ y, int64_t from, int64_t n) {
  int64_t i = from + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}

torch::Tensor swish(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "swish: a float32 CUDA tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel(), n4 = n / 4;
  auto stream = at::cuda::getCurrentCUDAStream();
  if (n4 > 0) {
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n4 + threads - 1) / threads, 65535);
    swish_kernel<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xc.data_ptr<float>()),
                                                 reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
  }
  if (n > 4 * n4) swish_tail<<<1, 4, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), 4 * n4, n);
  return y;
}
"""

ext = load_inline(name="lathe_test_swish_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["swish"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.swish(x)
