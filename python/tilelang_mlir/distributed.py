"""`tilelang_mlir.distributed` is `tilelang_mlir.torch.distributed` (the PyTorch layer), under its
public name: the same module object."""

import sys

from .torch import distributed

sys.modules[__name__] = distributed
