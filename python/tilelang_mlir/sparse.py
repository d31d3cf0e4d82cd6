"""`tilelang_mlir.sparse` is `tilelang_mlir.torch.sparse` (the PyTorch layer), under its
public name: the same module object."""

import sys

from .torch import sparse

sys.modules[__name__] = sparse
