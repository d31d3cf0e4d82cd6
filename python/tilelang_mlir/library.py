"""`tilelang_mlir.library` is `tilelang_mlir.torch.library` (the PyTorch layer), under its
public name: the same module object."""

import sys

from .torch import library

sys.modules[__name__] = library
