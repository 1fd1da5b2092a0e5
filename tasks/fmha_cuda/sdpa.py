# fmha_cuda's comparison with PyTorch (KernelBench format, docs/problems.md): the timed set of the
# task (Q, K, V bf16 [4, 16, 4096, 128], non-causal, scale 1/sqrt(128)) as a PyTorch problem, so
# that `lathe eval tasks/fmha_cuda/sdpa.py KERNEL --mode kernelbench` times the kernel and then
# torch.nn.functional.scaled_dot_product_attention (the flash backend on an H200) live, with the
# same protocol on the same device, and reports speedup_vs_eager (the kernel's throughput as a
# multiple of SDPA's).
#
# ABI as the task's: inputs Q, K, V (forward's parameters), output O (bf16, the model's own dtype),
# scalars causal, scale (get_init_inputs, in Model.__init__'s order).
#
# The oracle runs this forward in float64 (the worker calls model.double()): there it computes the
# textbook formula with matmul and softmax, so the reference does not depend on which SDPA backend
# float64 gets (or on SDPA existing: CPU PyTorch 1.13 has none). In the inputs' own dtype (bf16:
# the timed eager path) it calls SDPA. Materializing the fp64 scores takes 8.6 GB of device memory
# per [4, 16, 4096, 4096] tensor (three at the peak when causal): fine on an H200.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CAUSAL = 0
B, H, S, D = 4, 16, 4096, 128

LATHE_PERTURBATIONS = {"scale": [0.25, 4.0], "shift": [-3.0, 3.0]}
LATHE_TOLERANCE = {"rtol": 1e-2, "atol": 3e-2, "nerr": 5e-3}  # tasks/fmha_cuda/task.toml's


class Model(nn.Module):
    def __init__(self, causal, scale):
        super().__init__()
        self.causal = bool(causal)
        self.scale = float(scale)

    def forward(self, Q, K, V):
        if Q.dtype != torch.float64 and hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(Q, K, V, is_causal=self.causal, scale=self.scale)
        s = torch.matmul(Q, K.transpose(-2, -1)) * self.scale
        if self.causal:
            n = s.shape[-1]
            mask = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(s, dim=-1), V)


def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return [CAUSAL, 1.0 / math.sqrt(D)]
