"""Argument types of tile programs: tensors with static or symbolic shapes.

The types themselves are plain data of the bottom layer
(`base/signature.py`); this module is their T.* spelling.
"""

from __future__ import annotations

from typing import Union

from ..base.dtypes import DType
from ..base.signature import Dim, ScalarType, SymbolicDim, SymmetricTensorType, TensorType

__all__ = ["Buffer", "Dim", "ScalarType", "SymbolicDim", "SymmetricTensor", "Tensor",
           "TensorType", "dynamic", "symbolic"]


def dynamic(name: str, dtype: Union[str, DType] = "int32") -> SymbolicDim:
    """A dynamic (symbolic) dimension: `M = T.dynamic("M")`."""
    return SymbolicDim(name)


symbolic = dynamic


def Tensor(shape, dtype="float32", data=None):
    """`T.Tensor(shape, dtype)`: the type of a tensor argument. Inside a
    program, `T.Tensor(shape, dtype, X.data)` is TileLang's view of global
    tensor X in another shape of the same size (as T.reshape)."""
    if data is None:
        return TensorType(shape, dtype)
    from . import state
    from .values import BufferData

    b = state.current()
    if not isinstance(data, BufferData):
        raise b.error(f"T.Tensor(shape, dtype, data): data is a tensor's `.data`, got {data!r}")
    return b.view(data.buffer, shape, dtype, "T.Tensor(shape, dtype, X.data)")


Buffer = Tensor


def SymmetricTensor(shape, dtype="float32"):
    """`T.SymmetricTensor(shape, dtype)`: the type of a symmetric buffer
    argument, the local part of a buffer every rank allocates at the same
    size (`tilelang_mlir.distributed`); `X.peer(r)` in the program is rank
    r's part. A plain tensor passed for it is a world of one rank."""
    return SymmetricTensorType(shape, dtype)
