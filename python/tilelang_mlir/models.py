"""`tilelang_mlir.models` is `tilelang_mlir.torch.models` (the PyTorch layer), under its
public name: the same module object."""

import sys

from .torch import models

sys.modules[__name__] = models
