# KLineage format: a sum over the last axis of 4096 unit normals per row. Some rows land near
# zero, where a correct fp32 summation is off by ~1e-5..1e-4: the imported tolerance scales with
# the outputs' magnitude (docs/problems.md, "Tolerances").
import torch


def make_inputs(*, device, seed):
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return {"x": torch.randn(256, 4096, generator=g).to(device)}


def torch_ref(x):
    return x.sum(-1)
