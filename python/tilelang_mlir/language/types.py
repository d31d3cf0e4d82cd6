"""Argument types of tile programs: tensors with static or symbolic shapes.

The types themselves are plain data of the bottom layer
(`base/signature.py`); this module is their T.* spelling.
"""

from __future__ import annotations

from typing import Union

from ..base.dtypes import DType
from ..base.signature import Dim, ScalarType, SymbolicDim, TensorType

__all__ = ["Buffer", "Dim", "ScalarType", "SymbolicDim", "Tensor", "TensorType", "dynamic",
           "symbolic"]


def dynamic(name: str, dtype: Union[str, DType] = "int32") -> SymbolicDim:
    """A dynamic (symbolic) dimension: `M = T.dynamic("M")`."""
    return SymbolicDim(name)


symbolic = dynamic


def Tensor(shape, dtype="float32") -> TensorType:
    return TensorType(shape, dtype)


Buffer = Tensor
