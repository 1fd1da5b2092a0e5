# Sample 2, Triton: log-softmax with one program per row, the whole row in registers (its length
# rounded up to a power of two; padding reads -inf, which adds exp(-inf) = 0 to the sum).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    lse = tl.log(tl.sum(tl.exp(z), axis=0))
    tl.store(y_ptr + row * stride + offs, z - lse, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        log_softmax_kernel[(rows,)](x, y, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return y
