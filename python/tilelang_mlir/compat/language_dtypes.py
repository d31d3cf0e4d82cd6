"""`tilelang.language.dtypes`: the dtype objects of the T namespace, and
`_TORCH_DTYPE_TO_STR` (torch dtype -> dtype name), as TileLang's programs
import them."""

from __future__ import annotations

import tilelang_mlir.language as _T

from .dtypes import DataType, torch_dtype_names  # noqa: F401

_NAMES = ("dtype", "bool", "float16", "bfloat16", "float32", "float64", "half", "float",
          "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64")
for _name in _NAMES:
    if hasattr(_T, _name):
        globals()[_name] = getattr(_T, _name)


def __getattr__(name):
    if name == "_TORCH_DTYPE_TO_STR":
        table = torch_dtype_names()
        globals()[name] = table
        return table
    if name == "_STR_TO_TORCH_DTYPE":
        table = {v: k for k, v in torch_dtype_names().items()}
        globals()[name] = table
        return table
    if hasattr(_T, name):
        return getattr(_T, name)
    from ..language import dtypes as _ours  # TileLang's dtype helpers (_all_dtypes, ...)

    if not name.startswith("__") and hasattr(_ours, name):
        return getattr(_ours, name)
    raise AttributeError(f"module 'tilelang.language.dtypes' has no attribute {name!r} (not "
                         f"supported by tilelang-mlir: T.{name})")
