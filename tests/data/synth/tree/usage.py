# A fixture for lathe synth's inputs by usage (tests/integration/synth_test.cpp): each module
# runs only when its inputs or constructor are drawn as forward and the constructor use them.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Lookup(nn.Module):
    """tokens index an embedding's rows: drawn as int64 below its row count."""

    def __init__(self, vocab: int, width: int):
        super().__init__()
        self.table = nn.Embedding(vocab, width)

    def forward(self, tokens):
        return self.table(tokens) * 2.0


class PickedLoss(nn.Module):
    """labels are a class per row of scores (nll_loss' target): int64 below scores' dim 1."""

    def forward(self, scores, labels):
        return F.nll_loss(F.log_softmax(scores, dim=1), labels)


class Resized(nn.Module):
    """Runs only with its scale_factor set, which defaults to None: tried by keyword."""

    def __init__(self, scale_factor=None):
        super().__init__()
        self.scale_factor = scale_factor

    def forward(self, x):
        if self.scale_factor is None:
            raise ValueError("Resized needs a scale_factor")
        return F.interpolate(x, scale_factor=self.scale_factor) + 1.0


class KeywordOnly(nn.Module):
    """A keyword-only constructor argument without a default (torchvision's RAFT FlowHead)."""

    def __init__(self, *, channels):
        super().__init__()
        self.proj = nn.Linear(channels, 4)

    def forward(self, x):
        return torch.tanh(self.proj(x))


class Windows(nn.Module):
    """forward takes a number (torchvision's MaxViT WindowPartition): passed as declared."""

    def forward(self, x, p: int):
        b, c, h, w = x.shape
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, (h // p) * (w // p), p * p, c) - 0.5


class Inherited(nn.Linear):
    """Its constructor is nn.Linear's (convnext's LayerNorm2d is nn.LayerNorm's): one size, then
    two are tried."""

    def forward(self, x):
        return torch.relu(super().forward(x))


class Probabilities(nn.Module):
    """p and t are probabilities (binary_cross_entropy's input and target): drawn in [0, 1)."""

    def forward(self, p, t):
        return F.binary_cross_entropy(p, t, reduction="none") * 0.5


class Forwarded(nn.Linear):
    """A constructor that passes everything on as *args (torch.nn's RNN, GRU): none, one size,
    then two are tried."""

    def __init__(self, *args):
        super().__init__(*args)

    def forward(self, x):
        return torch.tanh(super().forward(x))
