"""Data types of tile programs: defined in the bottom layer
(`base/dtypes.py`), which the runtime imports without the language; kept
here for the code that imports them from this module, with TileLang's
`T.dtype` constructor."""

from ..base.dtypes import *  # noqa: F401,F403
from ..base.dtypes import (ALL, NAMED_ONLY, DType, as_dtype, boolean, from_numpy,  # noqa: F401
                           index, to_numpy, to_torch)


class _DTypeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, DType)


class dtype(metaclass=_DTypeMeta):  # noqa: N801 (TileLang's name)
    """`T.dtype(x)`: the dtype named by a string ("float16", "float"), a
    torch or NumPy dtype, a Python type (int, float, bool) or a dtype, as in
    TileLang; `isinstance(x, T.dtype)` tests for a dtype. The result has
    `.bits`, `.bytes`, `.as_torch()` and compares equal to its name."""

    def __new__(cls, value) -> DType:
        return as_dtype(value)

