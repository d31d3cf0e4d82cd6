"""`tilelang_mlir.ops` is `tilelang_mlir.torch.ops` (the PyTorch layer), under its
public name: the same module object."""

import sys

from .torch import ops

sys.modules[__name__] = ops
