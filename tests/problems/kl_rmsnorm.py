# KLineage format (make_inputs(*, device, seed) returning named tensors, torch_ref(**inputs)):
# RMSNorm over the last axis. Scaling x is safe (the output is scale-invariant but for eps), and
# the file says so: lathe perturbs inputs only where the problem declares it.
import torch

LATHE_PERTURBATIONS = {"scale": [0.01, 100.0]}


def make_inputs(*, device, seed):
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    x = torch.randn(32, 512, generator=g)
    weight = torch.rand(512, generator=g) + 0.5
    return {"x": x.to(device), "weight": weight.to(device)}


def torch_ref(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
