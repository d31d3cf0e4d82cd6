"""Argument types of tile programs: tensors with static or symbolic shapes.

The types themselves are plain data of the bottom layer
(`base/signature.py`); this module is their T.* spelling, with TileLang's
two forms of each: a call, `T.Tensor((M, N), T.float16)`, and a subscript,
`T.Tensor[(M, N), T.float16]` (TileLang's annotation style).
"""

from __future__ import annotations

import abc
import re
from typing import Union

from ..base.dtypes import DType
from ..base.signature import (Dim, ScalarType, SymbolicDim, SymExpr, SymmetricTensorType,
                              TensorType)

__all__ = ["Buffer", "Dim", "FragmentBuffer", "LocalBuffer", "Ref", "ScalarType",
           "SharedBuffer", "StridedTensor", "SymbolicDim", "SymExpr", "SymmetricTensor",
           "Tensor", "TensorType", "Var", "dynamic", "symbolic", "JITFunc"]


def dynamic(name: str, dtype: Union[str, DType] = "int32"):
    """A dynamic (symbolic) size: `M = T.dynamic("M")`; a kernel compiled
    once serves every value, bound from the shapes (and strides) of the
    tensors of each call. `T.dynamic("M, N")` (or "M N") gives a tuple.
    Arithmetic on sizes outside the program (`T.Tensor((M * 4,), ...)`,
    `T.ceildiv(M, 64)`) gives expressions of them."""
    if not isinstance(name, str):
        raise TypeError(f"T.dynamic takes the name as a string, got {name!r}")
    names = [n for n in re.split(r"[\s,]+", name.strip()) if n]
    if len(names) > 1:
        return tuple(SymbolicDim(n, dtype) for n in names)
    return SymbolicDim(name.strip(), dtype)


def symbolic(name: str, dtype: Union[str, DType] = "int32"):
    """TileLang's older name of T.dynamic."""
    return dynamic(name, dtype)


class _TensorProxy:
    """A tensor type's constructor: `X((M, N), dtype)` and `X[(M, N), dtype]`."""

    scope = "global"

    def __call__(self, shape, dtype="float32", data=None, strides=None, scope=None,
                 **ignored):
        if data is not None:
            return _view(shape, dtype, data)
        return TensorType(shape, dtype, strides, scope or self.scope)

    def __getitem__(self, keys):
        # TileLang's rule: a tuple of the call's arguments, or the shape alone.
        if not isinstance(keys, tuple) or all(not isinstance(k, (tuple, list, str))
                                              for k in keys):
            keys = (keys,)
        return self(*keys)


def _view(shape, dtype, data):
    from . import state
    from .values import BufferData

    b = state.current()
    if not isinstance(data, BufferData):
        raise b.error(f"T.Tensor(shape, dtype, data): data is a tensor's `.data`, got {data!r}")
    return b.view(data.buffer, shape, dtype, "T.Tensor(shape, dtype, X.data)")


class TensorProxy(_TensorProxy):
    """`T.Tensor(shape, dtype)` / `T.Tensor[shape, dtype]`: the type of a
    (contiguous, row-major) tensor argument. Inside a program,
    `T.Tensor(shape, dtype, X.data)` is TileLang's view of global tensor X
    in another shape of the same size (as T.reshape)."""


class StridedTensorProxy(_TensorProxy):
    """`T.StridedTensor(shape, strides, dtype)` / `T.StridedTensor[shape,
    strides, dtype]`: a tensor argument whose elements lie at `strides`
    (in elements; ints or T.dynamic sizes, bound from the tensor's
    strides), e.g. a column slice of a larger tensor."""

    def __call__(self, shape, strides, dtype="float32", scope=None):
        return TensorType(shape, dtype, strides, scope or self.scope)


class BufferProxy(_TensorProxy):
    """`T.Buffer(shape, dtype)`: TileLang's older name of T.Tensor (with
    `strides=` for a strided tensor)."""


class SharedBufferProxy(_TensorProxy):
    """`T.SharedBuffer(shape, dtype)`: the type of a shared-memory buffer, as
    TileLang's macros annotate their parameters (a macro takes the buffer
    it is called with)."""

    scope = "shared"


class FragmentBufferProxy(_TensorProxy):
    """`T.FragmentBuffer(shape, dtype)`: the type of a fragment (register
    tile), as TileLang's macros annotate their parameters."""

    scope = "fragment"


class LocalBufferProxy(_TensorProxy):
    """`T.LocalBuffer(shape, dtype)`: the type of a thread-local buffer, as
    TileLang's macros annotate their parameters."""

    scope = "local"


Tensor = TensorProxy()
StridedTensor = StridedTensorProxy()
Buffer = BufferProxy()
SharedBuffer = SharedBufferProxy()
FragmentBuffer = FragmentBufferProxy()
LocalBuffer = LocalBufferProxy()


class Ref:
    """`x: T.Ref` on a parameter of a `@T.macro`: the argument is passed by
    reference. It must be a `T.alloc_var` variable or a buffer element
    (`A[i]`); assigning to the parameter in the macro stores into it."""

    def __class_getitem__(cls, item):
        return cls


# TileLang's `T.Var`: a symbolic variable (`T.Var("n", T.int32)` is a
# T.dynamic size, `isinstance(M, T.Var)` asks whether M is one); as the
# annotation of a macro parameter, the older spelling of T.Ref.
Var = SymbolicDim


def SymmetricTensor(shape, dtype="float32"):
    """`T.SymmetricTensor(shape, dtype)`: the type of a symmetric buffer
    argument, the local part of a buffer every rank allocates at the same
    size (`tilelang_mlir.distributed`); `X.peer(r)` in the program is rank
    r's part. A plain tensor passed for it is a world of one rank."""
    return SymmetricTensorType(shape, dtype)


class JITFunc(abc.ABC):
    """TileLang's class of a function under `@tilelang.jit` (its `.func`),
    for `isinstance(x, T.JITFunc)` and annotations (`T.JITFunc[P, R]`):
    this package's eager-style jit functions and the compat route's
    `jit_obj.func` are instances."""

    def __class_getitem__(cls, item):
        return cls
