"""Data types of tile programs.

A `DType` names an element type the way TileLang users write it ("float16",
T.float16) and knows its MLIR type spelling, its NumPy and PyTorch
counterparts and how it converts. As in TileLang (whose dtypes are TVM's
`DataType`, a `str`), a DType *is* a string: `T.float16 == "float16"`,
`getattr(torch, T.float16)`, `str(T.float16)`, hashing and formatting all
see its name, and dtype strings and objects are interchangeable everywhere.

Beyond the scalar types the compiler computes with, the table names every
dtype TileLang's `tilelang.language.dtypes` offers: the narrow float
families (float8 variants, float6, float4, float8_e8m0fnu), int4/uint4,
tfloat32, and the vector types `<scalar>x<lanes>` (`float16x2`,
`float32x4`, `int8x4`, ...), each with TVM's `bits` (per lane), `lanes`
and `itemsize`. Part of the bottom layer: no MLIR here (the frontend turns
`DType.mlir` into an MLIR type: `language.values.ir_type`).
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Union

import numpy as np


class DType(str):
    """An element type of a tile program, and the string that names it.

    `DType("float16")` (TileLang's `T.dtype(...)`) looks a dtype up by name,
    by a torch or NumPy dtype or by a Python type; the other constructor
    form, `DType(name, mlir, bits, kind, compute)`, defines one (the table
    below). Attributes: `name` (the canonical name the compiler uses: the
    spelling `float8_e4m3fn` is the type `float8_e4m3`), `mlir`, `bits`
    (per lane, as TVM's), `lanes`, `kind` ("float", "int", "uint", "bool",
    "index", "handle") and `compute`: False for types the compiler stores
    but has no arithmetic for, which are an error as the element type of a
    program's values.
    """

    def __new__(cls, name, mlir: Optional[str] = None, bits: Optional[int] = None,
                kind: Optional[str] = None, compute: bool = True, *, spelling: str = "",
                lanes: int = 1, element: Optional["DType"] = None):
        if mlir is None:
            return as_dtype(name)
        self = str.__new__(cls, spelling or name)
        self.__dict__.update(name=name, mlir=mlir, bits=bits, kind=kind, compute=compute,
                             lanes=lanes, _element=element)
        return self

    # -- comparisons: by type, and (TileLang's dtypes are strings) by name --------
    def __eq__(self, other) -> bool:
        """Equal to the DType of the same type and to any string that names
        it (`T.float == "float32"`, `T.float16 == "half"`)."""
        if isinstance(other, DType):
            return self.name == other.name and self.lanes == other.lanes
        if isinstance(other, str):
            found = _lookup(other)
            return found is not None and found.name == self.name and found.lanes == self.lanes
        return NotImplemented

    def __ne__(self, other) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = str.__hash__

    def __reduce__(self):
        return (as_dtype, (str(self),))

    def __repr__(self) -> str:
        return f"T.{str(self)}"

    def __str__(self) -> str:
        return str.__str__(self)

    # -- TVM's DataType attributes --------------------------------------------------
    @property
    def itemsize(self) -> int:
        """Bytes of one element (all lanes; sub-byte and bool types: 1)."""
        return max(1, (self.bits * self.lanes + 7) // 8)

    bytes = itemsize

    @property
    def element(self) -> "DType":
        """The scalar type of one lane (the dtype itself when it has one lane)."""
        return self if self._element is None else self._element

    def with_lanes(self, lanes: int) -> "DType":
        """The vector type of `lanes` lanes of this type's scalar."""
        lanes = int(lanes)
        if lanes == 1:
            return self.element
        return as_dtype(f"{self.element}x{lanes}")

    def as_torch(self):
        """The torch dtype of tensors of this dtype (TileLang's storage
        choices for the types torch lacks: int4 in int8, float4_e2m1fn in
        float4_e2m1fn_x2 or int8)."""
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

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_subbyte(self) -> bool:
        """Narrower than a byte (int4, float4_e2m1fn, the float6 types)."""
        return self.lanes == 1 and self.bits < 8 and self.kind != "bool"

    @property
    def pack(self) -> int:
        """How many elements share a byte in memory: 2 for the 4-bit types
        (TileLang packs them along the last dimension, the first element in
        the low bits), else 1."""
        return 8 // self.bits if self.is_subbyte and 8 % self.bits == 0 else 1

    def is_float4_e2m1fn(self) -> bool:
        """Whether this is packed 4-bit E2M1 (TileLang's predicate)."""
        return self.element.name == "float4_e2m1fn"

    def is_float4_e2m1_unpacked(self) -> bool:
        """Whether this is E2M1 stored one value a byte (TileLang's predicate)."""
        return self.element.name == "float4_e2m1_unpacked"

    def is_float4(self) -> bool:
        """Whether this is any E2M1 variant, scalar or vector."""
        return self.element.name in ("float4_e2m1fn", "float4_e2m1_unpacked")

    def __call__(self, *args, **kwargs):
        """`T.float32(x)` is `T.cast(x, "float32")` inside a tile program and
        a constant outside it; `T.int32()` outside a program is a symbolic
        size (TVM's size variable). The language layer installs this (see
        `set_call_handler`)."""
        if _CALL_HANDLER is None:
            raise TypeError(f"calling {self!r} needs the tile language: import "
                            "tilelang_mlir.language first")
        return _CALL_HANDLER(self, *args, **kwargs)


# What calling a dtype does (`T.float32(x)`): installed by the language
# layer, which this layer must not import.
_CALL_HANDLER = None


def set_call_handler(handler) -> None:
    """Makes `dtype(*args)` call `handler(dtype, *args)` (language/values.py
    installs T.cast and the symbolic sizes)."""
    global _CALL_HANDLER
    _CALL_HANDLER = handler


float16 = DType("float16", "f16", 16, "float")
bfloat16 = DType("bfloat16", "bf16", 16, "float")
float32 = DType("float32", "f32", 32, "float")
float64 = DType("float64", "f64", 64, "float")
float8_e4m3 = DType("float8_e4m3", "f8E4M3FN", 8, "float")
# TileLang's float8_e4m3fn: the same type on every target (CUDA and ROCm
# codegen treat both as e4m3 without infinities), spelled as torch spells it.
float8_e4m3fn = DType("float8_e4m3", "f8E4M3FN", 8, "float", spelling="float8_e4m3fn")
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
# TensorFloat-32: float32 storage and values; T.gemm on it may use TF32
# tensor cores (TileLang's meaning), everything else computes in float32.
tfloat32 = DType("tfloat32", "f32", 32, "float")

# MX scale factors: an unsigned power of two 2^(c - 127), NaN at c = 255.
# Values compute in float32 as float8's do; a conversion to it rounds the
# magnitude up to a power of two and saturates (CUDA's __nv_cvt_*_to_e8m0
# with cudaRoundPosInf and __NV_SATFINITE, what TileLang's casts call).
float8_e8m0fnu = DType("float8_e8m0fnu", "f8E8M0FNU", 8, "float")

# TileLang's names of the other narrow types: known by name and width; the
# compiler stores them (sub-byte ones packed, see `is_subbyte`) but has no
# arithmetic on them.
float8_e4m3fnuz = DType("float8_e4m3fnuz", "f8E4M3FNUZ", 8, "float", False)
float8_e5m2fnuz = DType("float8_e5m2fnuz", "f8E5M2FNUZ", 8, "float", False)
float8_e3m4 = DType("float8_e3m4", "f8E3M4", 8, "float", False)
float8_e4m3b11fnuz = DType("float8_e4m3b11fnuz", "f8E4M3B11FNUZ", 8, "float", False)
float6_e2m3fn = DType("float6_e2m3fn", "f6E2M3FN", 6, "float", False)
float6_e3m2fn = DType("float6_e3m2fn", "f6E3M2FN", 6, "float", False)
float4_e2m1fn = DType("float4_e2m1fn", "f4E2M1FN", 4, "float", False)
# E2M1 stored one value a byte (TileLang's tcgen05 shared-memory layout type).
float4_e2m1_unpacked = DType("float4_e2m1_unpacked", "i8", 8, "float", False)
int4 = DType("int4", "i4", 4, "int", False)
uint4 = DType("uint4", "i4", 4, "uint", False)
# Device pointers (T.ptr): kept as int64 words in tensors.
handle = DType("handle", "i64", 64, "handle", False)

ALL = (float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2, int8,
       int16, int32, int64, uint8, boolean)
# The wider unsigned types of TileLang programs (bit manipulation in the
# dequantizing kernels); not in ALL, whose every conversion pair
# test_conversions checks on every target.
WIDE_UNSIGNED = (uint16, uint32, uint64)
NAMED_ONLY = (float8_e4m3fnuz, float8_e5m2fnuz, float8_e3m4,
              float8_e4m3b11fnuz, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn,
              float4_e2m1_unpacked, int4, uint4)

_ALIASES = {
    "half": float16, "fp16": float16, "f16": float16,
    "bf16": bfloat16,
    "float": float32, "fp32": float32, "f32": float32,
    "double": float64, "fp64": float64, "f64": float64,
    "float8_e4m3fn": float8_e4m3fn, "e4m3": float8_e4m3, "fp8_e4m3": float8_e4m3,
    "e5m2": float8_e5m2, "fp8_e5m2": float8_e5m2,
    "int": int32, "i32": int32, "i8": int8, "i64": int64, "i16": int16,
    "u8": uint8, "bool_": boolean, "index": index,
    # TileLang's C-style names (tvm.DataType's canonical spellings)
    "short": int16, "long": int64, "uint": uint32, "ulong": uint64,
    # TVM's spellings of the custom types
    "custom[tfloat32]": tfloat32, "custom[float4_e2m1_unpacked]8": float4_e2m1_unpacked,
}

_BY_NAME: Dict[str, DType] = {str(d): d for d in ALL + WIDE_UNSIGNED + NAMED_ONLY
                              + (float8_e8m0fnu,)}
_BY_NAME.update({"tfloat32": tfloat32, "handle": handle})
_BY_NAME.update(_ALIASES)

# The scalar types vector types are made of (TileLang's `<scalar>x<lanes>`).
_VECTOR_ELEMENTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "bfloat16", "tfloat32", "float8_e3m4",
                    "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
                    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn",
                    "float6_e3m2fn", "float4_e2m1fn", "int4", "uint4", "bool")
_VECTOR = re.compile(r"^(?P<base>[a-z0-9_]+?)x(?P<lanes>[0-9]+)$")
_MAX_LANES = 1024


def _vector(text: str) -> Optional[DType]:
    """The vector dtype `<scalar>x<lanes>` (made once, then kept)."""
    m = _VECTOR.match(text)
    if m is None:
        return None
    base = _BY_NAME.get(m.group("base"))
    lanes = int(m.group("lanes"))
    if base is None or str(base) not in _VECTOR_ELEMENTS or not 2 <= lanes <= _MAX_LANES:
        return None
    spelling = f"{base}x{lanes}"
    found = _BY_NAME.get(spelling)
    if found is None:
        found = DType(f"{base.name}x{lanes}", f"vector<{lanes}x{base.mlir}>", base.bits, base.kind,
                      False, spelling=spelling, lanes=lanes, element=base)
        _BY_NAME[spelling] = found
    return found


def _lookup(text: str) -> Optional[DType]:
    found = _BY_NAME.get(text)
    if found is None:
        found = _vector(text)
    return found


# TileLang's `tilelang.language.dtypes._all_dtypes`: every name the T
# namespace offers as a dtype (the vector types with 2 to 64 lanes).
def _all_names():
    names = ["bool", "short", "int", "uint", "long", "half", "float", "double", "int4"]
    for base in ("int", "uint"):
        for bits in (8, 16, 32, 64):
            names.append(f"{base}{bits}")
            names += [f"{base}{bits}x{n}" for n in (2, 4, 8, 16, 32, 64)]
    for bits in (16, 32, 64):
        names.append(f"float{bits}")
        names += [f"float{bits}x{n}" for n in (2, 4, 8, 16, 32, 64)]
    for f in ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
              "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
              "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"):
        names.append(f)
        names += [f"{f}x{n}" for n in (2, 4, 8, 16, 32, 64)]
    names += ["float4_e2m1_unpacked", "bfloat16", "bfloat16x2", "tfloat32"]
    names += [f"tfloat32x{n}" for n in (2, 4, 8, 16, 32, 64)]
    return tuple(names)


ALL_NAMES = _all_names()


def as_dtype(value: Union[str, DType, object]) -> DType:
    """Turns a dtype string, DType, NumPy dtype, torch dtype or Python type
    (bool, int, float) into a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _lookup(value)
        if found is not None:
            return found
        raise TypeError(f"unknown dtype {value!r}; expected one of "
                        f"{sorted(str(d) for d in ALL + WIDE_UNSIGNED)} (or another name "
                        "of TileLang's dtype table, e.g. 'float8_e4m3fn', 'int4', "
                        "'float16x2')")
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
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "float8_e8m0fnu": "float8_e8m0fnu",
}


def from_numpy(np_dtype: np.dtype) -> DType:
    name = _NUMPY.get(np.dtype(np_dtype).name)
    if name is None:
        raise TypeError(f"NumPy dtype {np_dtype} has no tile dtype")
    return _BY_NAME[name]


def to_numpy(dtype: DType) -> np.dtype:
    """The NumPy dtype of a tile dtype (bfloat16/float8 need ml_dtypes)."""
    dtype = as_dtype(dtype)
    if dtype.name in ("bfloat16", "float8_e4m3", "float8_e5m2", "float8_e8m0fnu"):
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError(f"{dtype.name} NumPy arrays need the ml_dtypes package; "
                            "pass torch tensors instead") from None
        return np.dtype({"bfloat16": ml_dtypes.bfloat16,
                         "float8_e4m3": ml_dtypes.float8_e4m3fn,
                         "float8_e5m2": ml_dtypes.float8_e5m2,
                         "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu}[dtype.name])
    if dtype.name == "bool":
        return np.dtype(np.bool_)
    if dtype.name == "tfloat32":
        return np.dtype(np.float32)
    if dtype.is_subbyte:  # packed two (or more) a byte, as TileLang stores them
        return np.dtype(np.uint8 if dtype.kind == "uint" else np.int8)
    try:
        return np.dtype(dtype.name)
    except TypeError:
        raise TypeError(f"dtype {dtype} has no NumPy dtype") from None


def float_limits(dtype: DType):
    """(largest finite, most negative finite) value of a float dtype, the
    narrow float formats (float8, float6, float4_e2m1fn) included."""
    import ml_dtypes

    dtype = as_dtype(dtype)
    name = {"float4_e2m1_unpacked": "float4_e2m1fn", "float8_e4m3": "float8_e4m3fn"}.get(
        dtype.element.name, dtype.element.name)
    kind = getattr(ml_dtypes, name, None) if dtype.element.is_subbyte or \
        name.startswith("float8") else None
    info = ml_dtypes.finfo(kind if kind is not None else to_numpy(dtype.element))
    return float(info.max), float(info.min)


# Our dtype name -> torch's attribute name (TileLang's `as_torch`).
_TORCH = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float64": "float64", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "bool": "bool",
    "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2fnuz": "float8_e5m2fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu", "float4_e2m1fnx2": "float4_e2m1fn_x2",
    "int4": "int8", "uint4": "uint8", "tfloat32": "float32",
}
# Torch's attribute name -> our dtype spelling (the inverse, by torch name).
_FROM_TORCH = {
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float": "float32", "float64": "float64", "double": "float64", "int8": "int8",
    "int16": "int16", "short": "int16", "int32": "int32", "int": "int32", "int64": "int64",
    "long": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
    "uint64": "uint64", "bool": "bool", "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0fnu": "float8_e8m0fnu",
    "float4_e2m1fn_x2": "float4_e2m1fnx2",
}


def _torch_dtype_name(value) -> Optional[str]:
    module = type(value).__module__
    if module != "torch":
        return None
    name = str(value).split(".")[-1]
    if name in _FROM_TORCH:
        return _FROM_TORCH[name]
    raise TypeError(f"torch dtype {value} has no tile dtype")


def to_torch(dtype: DType):
    """The torch dtype of `dtype` (TileLang's choices for the types torch
    lacks: int4 is stored in int8, float4_e2m1fn in float4_e2m1fn_x2 where
    torch has it, else int8)."""
    import torch

    dtype = as_dtype(dtype)
    if dtype.name == "float4_e2m1fn":
        return getattr(torch, "float4_e2m1fn_x2", torch.int8)
    name = _TORCH.get(dtype.name)
    result = getattr(torch, name, None) if name else None
    if result is None:
        raise TypeError(f"dtype {dtype} has no torch dtype in torch {torch.__version__}")
    return result


def storage_dtype(dtype: DType) -> DType:
    """The dtype of the torch tensors that hold `dtype` (TileLang's
    `resolve_torch_storage_dtype`): `dtype` itself where torch has it."""
    return as_dtype(to_torch(dtype))
