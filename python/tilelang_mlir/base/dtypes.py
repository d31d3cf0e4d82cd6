"""Data types of tile programs.

A `DType` names an element type the way TileLang users write it ("float16",
T.float16) and knows its MLIR type spelling, its NumPy and PyTorch
counterparts and how it converts. Dtype strings and objects are
interchangeable everywhere. Part of the bottom layer: no MLIR here (the
frontend turns `DType.mlir` into an MLIR type: `language.values.ir_type`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np


@dataclass(frozen=True)
class DType:
    """An element type of a tile program."""

    name: str
    mlir: str  # MLIR type spelling
    bits: int
    kind: str  # "float", "int", "uint", "bool", "index"
    # False for TileLang's names of types our compiler has no arithmetic
    # for (float8_e4m3fnuz, float4_e2m1fn, ...): usable as names (`.bits`,
    # `.as_torch()`, comparisons), an error as the element type of a program.
    compute: bool = True

    def __eq__(self, other) -> bool:
        """Equal to the DType of the same name, and (as in TileLang, whose
        dtypes are strings) to any string that names it: T.float == "float32"."""
        if isinstance(other, DType):
            return self.name == other.name
        if isinstance(other, str):
            return _BY_NAME.get(other) is self
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    @property
    def bytes(self) -> int:
        """Bytes of one element (bool and sub-byte types: 1)."""
        return max(1, self.bits // 8)

    itemsize = bytes

    def as_torch(self):
        """The torch dtype of tensors of this dtype."""
        return to_torch(self)

    def as_numpy(self):
        return to_numpy(self)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "index")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_unsigned(self) -> bool:
        return self.kind in ("uint", "bool")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"T.{self.name}"

    def __call__(self, value):
        """`T.float32(x)` is `T.cast(x, "float32")` inside a tile program and
        a constant outside it (the language layer installs the cast: see
        `set_call_handler`)."""
        if _CALL_HANDLER is None:
            raise TypeError(f"calling {self!r} needs the tile language: import "
                            "tilelang_mlir.language first")
        return _CALL_HANDLER(value, self)


# What calling a dtype does (`T.float32(x)`): T.cast, installed by the
# language layer, which this layer must not import.
_CALL_HANDLER = None


def set_call_handler(handler) -> None:
    """Makes `dtype(value)` call `handler(value, dtype)` (language/__init__
    installs `T.cast`)."""
    global _CALL_HANDLER
    _CALL_HANDLER = handler


float16 = DType("float16", "f16", 16, "float")
bfloat16 = DType("bfloat16", "bf16", 16, "float")
float32 = DType("float32", "f32", 32, "float")
float64 = DType("float64", "f64", 64, "float")
float8_e4m3 = DType("float8_e4m3", "f8E4M3FN", 8, "float")
float8_e5m2 = DType("float8_e5m2", "f8E5M2", 8, "float")
int8 = DType("int8", "i8", 8, "int")
int16 = DType("int16", "i16", 16, "int")
int32 = DType("int32", "i32", 32, "int")
int64 = DType("int64", "i64", 64, "int")
uint8 = DType("uint8", "i8", 8, "uint")
uint16 = DType("uint16", "i16", 16, "uint")
uint32 = DType("uint32", "i32", 32, "uint")
uint64 = DType("uint64", "i64", 64, "uint")
boolean = DType("bool", "i1", 1, "bool")
index = DType("index", "index", 64, "index")

# TileLang's names of the other narrow types: known by name and width only.
float8_e4m3fnuz = DType("float8_e4m3fnuz", "f8E4M3FNUZ", 8, "float", False)
float8_e5m2fnuz = DType("float8_e5m2fnuz", "f8E5M2FNUZ", 8, "float", False)
float8_e8m0fnu = DType("float8_e8m0fnu", "f8E8M0FNU", 8, "float", False)
float8_e3m4 = DType("float8_e3m4", "f8E3M4", 8, "float", False)
float8_e4m3b11fnuz = DType("float8_e4m3b11fnuz", "f8E4M3B11FNUZ", 8, "float", False)
float6_e2m3fn = DType("float6_e2m3fn", "f6E2M3FN", 6, "float", False)
float6_e3m2fn = DType("float6_e3m2fn", "f6E3M2FN", 6, "float", False)
float4_e2m1fn = DType("float4_e2m1fn", "f4E2M1FN", 4, "float", False)
int4 = DType("int4", "i4", 4, "int", False)
tfloat32 = DType("tfloat32", "tf32", 32, "float", False)

ALL = (float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2, int8,
       int16, int32, int64, uint8, boolean)
# The wider unsigned types of TileLang programs (bit manipulation in the
# dequantizing kernels); not in ALL, whose every conversion pair
# test_conversions checks on every target.
WIDE_UNSIGNED = (uint16, uint32, uint64)
NAMED_ONLY = (float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu, float8_e3m4,
              float8_e4m3b11fnuz, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn, int4,
              tfloat32)

_ALIASES = {
    "half": float16, "fp16": float16, "f16": float16,
    "bf16": bfloat16,
    "float": float32, "fp32": float32, "f32": float32,
    "double": float64, "fp64": float64, "f64": float64,
    "float8_e4m3fn": float8_e4m3, "e4m3": float8_e4m3, "fp8_e4m3": float8_e4m3,
    "e5m2": float8_e5m2, "fp8_e5m2": float8_e5m2,
    "int": int32, "i32": int32, "i8": int8, "i64": int64, "i16": int16,
    "u8": uint8, "bool_": boolean, "index": index,
    # TileLang's C-style names (tvm.DataType's canonical spellings)
    "short": int16, "long": int64, "uint": uint32, "ulong": uint64,
}

_BY_NAME = {d.name: d for d in ALL + WIDE_UNSIGNED + NAMED_ONLY}
_BY_NAME.update(_ALIASES)


def as_dtype(value: Union[str, DType, object]) -> DType:
    """Turns a dtype string, DType, NumPy dtype or torch dtype into a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"unknown dtype {value!r}; expected one of "
                        f"{sorted(d.name for d in ALL + WIDE_UNSIGNED)}")
    for py_type, ours in ((bool, boolean), (int, int32), (float, float32)):
        if value is py_type:  # Python's types, as in TileLang
            return ours
    torch_name = _torch_dtype_name(value)
    if torch_name is not None:
        return as_dtype(torch_name)
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    return from_numpy(np_dtype)


_NUMPY = {
    "float16": "float16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "bool": "bool", "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2",
}


def from_numpy(np_dtype: np.dtype) -> DType:
    name = _NUMPY.get(np.dtype(np_dtype).name)
    if name is None:
        raise TypeError(f"NumPy dtype {np_dtype} has no tile dtype")
    return _BY_NAME[name]


def to_numpy(dtype: DType) -> np.dtype:
    """The NumPy dtype of a tile dtype (bfloat16/float8 need ml_dtypes)."""
    dtype = as_dtype(dtype)
    if dtype.name in ("bfloat16", "float8_e4m3", "float8_e5m2"):
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError(f"{dtype.name} NumPy arrays need the ml_dtypes package; "
                            "pass torch tensors instead") from None
        return np.dtype({"bfloat16": ml_dtypes.bfloat16,
                         "float8_e4m3": ml_dtypes.float8_e4m3fn,
                         "float8_e5m2": ml_dtypes.float8_e5m2}[dtype.name])
    if dtype.name == "bool":
        return np.dtype(np.bool_)
    return np.dtype(dtype.name)


_TORCH = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float64": "float64", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "bool": "bool",
    "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2fnuz": "float8_e5m2fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu", "float4_e2m1fn": "float4_e2m1fn_x2",
    "int4": "int8", "tfloat32": "float32",
}


def _torch_dtype_name(value) -> Optional[str]:
    module = type(value).__module__
    if module != "torch":
        return None
    name = str(value).split(".")[-1]
    for ours, theirs in _TORCH.items():
        if theirs == name:
            return ours
    raise TypeError(f"torch dtype {value} has no tile dtype")


def to_torch(dtype: DType):
    """The torch dtype of `dtype` (TileLang's choices for the types torch
    lacks: int4 is stored in int8, float4_e2m1fn in float4_e2m1fn_x2)."""
    import torch

    dtype = as_dtype(dtype)
    name = _TORCH.get(dtype.name)
    result = getattr(torch, name, None) if name else None
    if result is None:
        raise TypeError(f"dtype {dtype} has no torch dtype in torch {torch.__version__}")
    return result
