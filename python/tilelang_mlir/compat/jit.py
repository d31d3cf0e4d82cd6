"""`tilelang.jit`: TileLang's JIT module. The module itself is callable,
as TileLang's `tilelang.jit` decorator is, because importing a submodule
`tilelang.jit` binds the module where the package had the decorator."""

from __future__ import annotations

import sys
import types

from ..compiler.compile import compile, jit as jit_function  # noqa: A004,F401
from ..runtime.kernel import Kernel as JITKernel  # noqa: F401

jit = jit_function


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return jit_function(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
