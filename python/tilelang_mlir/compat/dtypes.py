"""`tilelang.DataType` and the dtype tables TileLang's programs import.

`DataType("float16").bits` is TVM's DataType as TileLang programs use it:
a dtype name with its bit width, lane count and kind, over this package's
dtypes (`tilelang_mlir.base.dtypes`)."""

from __future__ import annotations

from ..base import dtypes as dt


class _DataTypeCheck(type):
    def __instancecheck__(cls, obj) -> bool:
        # The T namespace's dtypes (T.float16, T.int8x4, ...) are TVM
        # DataTypes in TileLang: `isinstance(T.float16, tvm.DataType)`.
        return type.__instancecheck__(cls, obj) or isinstance(obj, dt.DType)


class DataType(metaclass=_DataTypeCheck):
    """A scalar or vector dtype: `DataType("float16")`, `DataType("int8x4")`;
    `isinstance(T.float16, DataType)` holds, as in TileLang."""

    def __init__(self, dtype):
        text = str(getattr(dtype, "name", dtype)) if not isinstance(dtype, str) else dtype
        lanes = 1
        base, sep, tail = text.rpartition("x")
        if sep and base and tail.isdigit() and base[-1].isdigit():
            text, lanes = base, int(tail)
        self.dtype = dt.as_dtype(dtype if lanes == 1 and not isinstance(dtype, str) else text)
        self.lanes = lanes

    @property
    def bits(self) -> int:
        return self.dtype.bits

    @property
    def type_code(self) -> str:
        return self.dtype.kind

    def is_float(self) -> bool:
        return self.dtype.is_float

    def is_int(self) -> bool:
        return self.dtype.kind == "int"

    def is_uint(self) -> bool:
        return self.dtype.kind == "uint"

    def is_bool(self) -> bool:
        return self.dtype.is_bool

    def with_lanes(self, lanes: int) -> "DataType":
        return DataType(f"{self.dtype.name}x{lanes}" if lanes != 1 else self.dtype.name)

    def __str__(self) -> str:
        return self.dtype.name if self.lanes == 1 else f"{self.dtype.name}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"

    def __eq__(self, other) -> bool:
        try:
            other = other if isinstance(other, DataType) else DataType(other)
        except TypeError:
            return NotImplemented
        return self.dtype == other.dtype and self.lanes == other.lanes

    def __hash__(self) -> int:
        return hash((self.dtype, self.lanes))


def torch_dtype_names() -> dict:
    """torch dtype -> the dtype name of tile programs, for every dtype of
    ours that torch has."""
    import torch

    out = {}
    for d in dt.ALL:
        try:
            out[dt.to_torch(d)] = d.name
        except (TypeError, ValueError, AttributeError):
            continue
    out.setdefault(torch.bool, "bool")
    return out
