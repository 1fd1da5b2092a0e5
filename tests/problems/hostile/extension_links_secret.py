# An extension whose import (in lathe's extension build, which imports what load_inline built)
# leaves a link in its output folder to @TARGET@, a root-only file; root copied it, following the
# link, into the cache and the worker's stage, where this ModelNew reads it and raises it as its
# error: the file's contents came back in the evaluation's message (issue 42).
import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

// Only in lathe's extension build (its environment says TMPDIR=.): the worker's seccomp filter
// kills a process that calls symlink, and the worker must get as far as reading the copy.
static int planted = [] {
  const char* t = std::getenv("TMPDIR");
  return t && std::strcmp(t, ".") == 0 ? symlink("@TARGET@", "out/leak.so") : 0;
}();

torch::Tensor twice(torch::Tensor x) { return x * 2; }
"""

ext = load_inline(name="lathe_test_leak_links", cpp_sources=source, functions=["twice"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        where = getattr(ext, "__file__", None)
        if isinstance(where, str):
            folder = os.path.dirname(where)
            for name in sorted(os.listdir(folder)):
                if name.startswith("leak"):
                    with open(os.path.join(folder, name), "rb") as f:
                        raise RuntimeError("leaked: " + f.read().decode(errors="replace"))

    def forward(self, x):
        return nn.functional.gelu(self.fc(x))
