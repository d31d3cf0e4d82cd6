"""Argument types of tile programs: tensors with static or symbolic shapes."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

from . import dtypes as dt
from .dtypes import DType


class SymbolicDim:
    """A size known only at run time (`T.dynamic("M")`): a kernel compiled
    once serves every value. Tensors that share a symbol must agree on it."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"a symbolic size needs an identifier name, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"T.dynamic({self.name!r})"

    # Shape arithmetic outside a tile program (e.g. an output twice as long)
    # is not supported: say so instead of failing obscurely.
    def _no_arith(self, *_):
        raise TypeError(f"arithmetic on symbolic size {self.name!r} outside a tile "
                        "program is not supported")

    __add__ = __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = _no_arith
    __floordiv__ = __rfloordiv__ = _no_arith


def dynamic(name: str, dtype: Union[str, DType] = "int32") -> SymbolicDim:
    """A dynamic (symbolic) dimension: `M = T.dynamic("M")`."""
    return SymbolicDim(name)


symbolic = dynamic

Dim = Union[int, SymbolicDim]


class TensorType:
    """`T.Tensor(shape, dtype)`: a global-memory tensor argument."""

    def __init__(self, shape: Union[Dim, Sequence[Dim]], dtype: Union[str, DType, None] = "float32"):
        if isinstance(shape, (int, SymbolicDim)):
            shape = (shape,)
        dims = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, SymbolicDim)):
                raise TypeError(f"tensor dimensions must be ints or T.dynamic sizes, got {d!r}")
            if isinstance(d, int) and d <= 0:
                raise TypeError(f"tensor dimensions must be positive, got {d}")
            dims.append(d)
        self.shape: Tuple[Dim, ...] = tuple(dims)
        self.dtype: Optional[DType] = None if dtype is None else dt.as_dtype(dtype)

    def __repr__(self) -> str:
        return f"T.Tensor({self.shape}, {self.dtype})"


def Tensor(shape, dtype="float32") -> TensorType:
    return TensorType(shape, dtype)


Buffer = Tensor


class ScalarType:
    """A scalar kernel argument: `n: T.int32`."""

    def __init__(self, dtype: DType):
        self.dtype = dt.as_dtype(dtype)
