# topk_cuda as a KernelBench problem: eager torch.topk on the timed shape, for
#   lathe eval tasks/topk_cuda/topk.py tasks/topk_cuda/kernels/expert --mode kernelbench
# which times the kernel and then torch.topk live on the same device (speedup_vs_eager). The ABI
# is task.toml's: input x [16384, 4096] float32, outputs (values float32, indices int64) [16384, 512];
# the init input k becomes ABI scalar 'k' = 512, which the kernels ignore (K is V's second extent).
#
# sorted=False: the task's contract leaves the order within a row free, and a sorted top-k is
# extra work the kernels do not do. The reference lathe compares against is this model in float64
# (model.double()), whose values are the float32 inputs exactly; LATHE_COMPARISON = "topk" compares
# values per row as multisets and checks indices against the input, as task.toml does.
import torch
import torch.nn as nn

LATHE_COMPARISON = "topk"
LATHE_TOLERANCE = {"rtol": 0.0, "atol": 0.0, "nerr": 0.0}

ROWS, COLS, K = 16384, 4096, 512


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.topk(x, self.k, dim=-1, largest=True, sorted=False)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [K]
