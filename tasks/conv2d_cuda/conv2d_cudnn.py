# cuDNN's convolution for tasks/conv2d_cuda, as a KernelBench-format PyTorch problem: the timed
# layer of task.toml (batch 32, 56 x 56, 256 -> 256 channels, 3x3, stride 1, pad 1, bf16), with the
# task's ABI, so any conv2d_cuda kernel bundle runs on it unchanged:
#
#   lathe eval tasks/conv2d_cuda/conv2d_cudnn.py tasks/conv2d_cuda/kernels/expert --mode kernelbench
#
# checks the kernel against the fp64 reference (this model in float64) and times it and eager
# PyTorch by KernelBench's protocol; speedup_vs_eager is the kernel's throughput as a fraction of
# cuDNN's. Not a task's `problem` (task.toml says why).
#
# Layouts. lathe writes every tensor contiguous in its logical shape, so the inputs are made in
# the kernel's memory order: x is [N, H, W, C] (NHWC) and w is [K, 3, 3, C] (KRSC), and the model
# returns y as [N, H, W, K]. forward() only permutes views: x.permute(0, 3, 1, 2) of a contiguous
# NHWC tensor is an NCHW tensor in channels_last memory format, and w.permute(0, 3, 1, 2) a
# channels_last [K, C, 3, 3] filter, so F.conv2d takes cuDNN's NHWC path with no layout copies;
# its output is channels_last as well, whose permute(0, 2, 3, 1) is the contiguous NHWC y. The
# eager time is therefore cuDNN's kernel(s) plus PyTorch's host dispatch of three views and the
# conv call (not measured here: microseconds to a few tens of them). The kernelbench protocol
# synchronizes after every call, so it counts that dispatch against a ~0.2 ms convolution (the
# candidate pays only its own lathe_launch); --mode do_bench queues the calls back to back, so
# the host runs ahead and only device time counts: the fairer figure for cuDNN.
#
# cudnn.benchmark is on: the first call of each configuration tries cuDNN's algorithms and keeps
# the fastest, so the baseline is the best cuDNN offers, not its heuristic first choice (the
# warm-up calls absorb the search). KernelBench's harness leaves it off; set it to False here to
# compare with that.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cudnn.benchmark = True

N, H, W, C, K = 32, 56, 56, 256, 256

# The task's perturbations and tolerances (task.toml [perturbations] and [comparison] say why).
LATHE_PERTURBATIONS = {"scale": [0.01, 4.0]}
LATHE_TOLERANCE = {"rtol": 1e-2, "atol": 5e-2, "nerr": 3e-3}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        y = F.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), stride=1, padding=1)
        return y.permute(0, 2, 3, 1)


def get_inputs():
    # U(-1, 1) as the task draws them, rounded to bf16.
    x = (torch.rand(N, H, W, C) * 2 - 1).to(torch.bfloat16)
    w = (torch.rand(K, 3, 3, C) * 2 - 1).to(torch.bfloat16)
    return [x, w]


def get_init_inputs():
    return []
