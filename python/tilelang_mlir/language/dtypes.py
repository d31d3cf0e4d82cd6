"""Data types of tile programs: defined in the bottom layer
(`base/dtypes.py`), which the runtime imports without the language; kept
here for the code that imports them from this module, with TileLang's
`T.dtype` (the DType class: `T.dtype("float16")`, `isinstance(x, T.dtype)`)
and the helpers of TileLang's `tilelang.language.dtypes`."""

import numpy as np

from ..base.dtypes import *  # noqa: F401,F403
from ..base.dtypes import (ALL, ALL_NAMES, NAMED_ONLY, DType, as_dtype, boolean,  # noqa: F401
                           from_numpy, index, storage_dtype, to_numpy, to_torch)

dtype = DType  # TileLang's `T.dtype`: a dtype's constructor and class

# TileLang's list of the dtype names of the T namespace.
_all_dtypes = list(ALL_NAMES)


def get_tvm_dtype(value) -> DType:
    """The dtype named by `value` (a name, a DType, a torch or NumPy dtype,
    a Python type), as TileLang's `get_tvm_dtype`."""
    return as_dtype(value)


def resolve_torch_storage_dtype(value) -> DType:
    """The dtype of the torch tensors that store `value` (int4 -> int8,
    float4_e2m1fn -> float4_e2m1fnx2 where torch has it, else int8)."""
    return storage_dtype(as_dtype(value))


def is_float4_e2m1fn(value) -> bool:
    """Whether `value` is packed 4-bit E2M1."""
    return as_dtype(value).is_float4_e2m1fn()


def is_float4_e2m1_unpacked(value) -> bool:
    """Whether `value` is E2M1 stored one value a byte."""
    return as_dtype(value).is_float4_e2m1_unpacked()


def is_float4(value) -> bool:
    """Whether `value` is any E2M1 variant."""
    return as_dtype(value).is_float4()


def is_f8f6f4_family(value) -> bool:
    """Whether `value` is an 8-, 6- or 4-bit float, scalar or vector (the
    operand types of Blackwell's f8f6f4 MMA)."""
    d = as_dtype(value)
    return d.is_float4() or (d.element.name.startswith(("float8", "float6"))
                             and d.bits in (6, 8))


def validate_gemm_ab_dtypes(a_dtype, b_dtype, *, a_in_tmem: bool = False,
                            allow_f8f6f4_mixed: bool = False) -> None:
    """Raises ValueError unless a GEMM may take operands of these dtypes:
    the same dtype, or (where allowed) two of the f8f6f4 family."""
    if a_in_tmem or as_dtype(a_dtype) == as_dtype(b_dtype):
        return
    if allow_f8f6f4_mixed and is_f8f6f4_family(a_dtype) and is_f8f6f4_family(b_dtype):
        return
    raise ValueError(f"Mixed-dtype GEMM only supports f8f6f4 family operands currently, got "
                     f"A={a_dtype}, B={b_dtype}")


class _AnyDTypeMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        if isinstance(obj, (str, type, np.dtype)):
            return True
        kind = type(obj)
        return kind.__module__ == "torch" and kind.__name__ == "dtype"


class AnyDType(metaclass=_AnyDTypeMeta):
    """TileLang's type of what names a dtype: a dtype name or object
    (`"float16"`, T.float16), a Python or NumPy type or dtype, a torch
    dtype. For annotations (`dtype: T.AnyDType`) and
    `isinstance(x, T.AnyDType)`; `T.dtype(x)` / T.get_tvm_dtype(x) turn one
    into a dtype."""
