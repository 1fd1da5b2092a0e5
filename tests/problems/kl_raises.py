# A KLineage problem whose reference fails: the import reports the problem's exception.
import torch


def make_inputs(*, device, seed):
    return {"x": torch.ones(4, device=device)}


def torch_ref(x):
    raise ValueError("this reference is broken on purpose")
