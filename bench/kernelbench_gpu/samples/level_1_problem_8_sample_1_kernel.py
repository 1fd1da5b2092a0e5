# Sample 1, inline CUDA (load_inline): the sum over one dimension, kept as size 1.
# The tensor seen as outer x R x inner (R the reduced dimension): one thread per output, walking R
# with stride inner, so that neighbouring threads read neighbouring addresses.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = "torch::Tensor kb_sum_dim(torch::Tensor x, int64_t dim);"

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void kb_sum_dim_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t r,
                            int64_t inner) {
  const int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (o >= outer * inner) return;
  const float* p = x + (o / inner) * r * inner + (o % inner);
  float s = 0.0f;
  for (int64_t k = 0; k < r; ++k) s += p[k * inner];
  y[o] = s;
}

torch::Tensor kb_sum_dim(torch::Tensor x, int64_t dim) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "kb_sum_dim: a float32 CUDA tensor");
  auto xc = x.contiguous();
  if (dim < 0) dim += xc.dim();
  TORCH_CHECK(dim >= 0 && dim < xc.dim(), "kb_sum_dim: dim out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
  for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
  const int64_t r = xc.size(dim);
  TORCH_CHECK(r > 0, "kb_sum_dim: an empty reduced dimension");
  auto sizes = xc.sizes().vec();
  sizes[dim] = 1;  // keepdim, as the Model
  auto y = torch::empty(sizes, xc.options());
  const int64_t n = outer * inner;
  if (n == 0) return y;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  kb_sum_dim_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), outer, r, inner);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

ext = load_inline(name="kbgpu_l1_p8_s1_kb_sum_dim", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["kb_sum_dim"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return ext.kb_sum_dim(x, self.dim)
