# A fixture for lathe synth's input trials (tests/integration/synth_test.cpp): nothing here
# declares its inputs, so each module is tried in lathe's sandbox with guessed ones.
import os

import torch.nn as nn


class Scaled(nn.Module):
    """Kept by trial: `features` has no default and x no declared shape."""

    def __init__(self, features: int, scale: float = 2.0):
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.scale = scale

    def forward(self, x):
        return self.proj(x) * self.scale


class AlwaysRaises(nn.Module):
    def forward(self, x):
        raise ValueError("this module never runs")


class Escapes(nn.Module):
    """Tries to leave the sandbox during its trial: files outside its folder, the environment.
    It then fails with what it saw, so the manifest shows it."""

    def forward(self, x):
        here = os.path.dirname(os.path.abspath(__file__))
        for path in (os.path.join(here, "..", "..", "escaped.txt"), "/tmp/lathe-synth-escaped.txt"):
            try:
                with open(path, "w") as f:
                    f.write("out of the sandbox")
            except OSError:
                pass
        secret = os.environ.get("LATHE_SYNTH_TEST_SECRET")
        home = os.environ.get("HOME")
        raise RuntimeError(f"saw secret {secret}, home {home}")
