"""`tilelang.intrinsics` (0.1.6 to 0.1.12) and `tilelang.cuda.intrinsics`
(later): the layout helpers of TileLang's tensor-core code.

- `get_mma_micro_size(dtype)`: (16, 16, k) of an mma tile, k = 32 for 8-bit
  operands, 16 otherwise;
- `get_ldmatrix_offset(matrix, row, col, stride, dtype, transposed)`: the
  element of a 16xK operand tile that register `col` of lane `row` holds
  after an `ldmatrix` (PTX's fragment maps for 32-, 16- and 8-bit elements;
  sub-byte elements scale the column by the packing);
- `mma_store_index_map(thread, local)`: the element of the 16x16 accumulator
  tile register `local` of lane `thread` holds;
- `get_swizzle_layout(row, col, row_size, dtype, swizzle_bytes)`: TileLang's
  XOR swizzle of 16-byte chunks within groups of 8 rows, as
  (column tile, row, swizzled column);
- `make_mma_swizzle_layout(shared_buf, is_smooth)`: that swizzle as a
  shared-memory layout for T.annotate_layout (none where the row is not a
  multiple of 64 bytes, or with `is_smooth`).

The functions compute on ints and on the index values of a tile program.
TileLang's intrinsic emitters (TensorCoreIntrinEmitter, ...) generate TVM IR
and are out of scope (compat/refusals.py)."""

from __future__ import annotations

from typing import Optional, Tuple

from ..base import dtypes as dt
from ..language.annotations import SwizzleLayout


def _bits(dtype) -> int:
    return dt.as_dtype(str(getattr(dtype, "name", dtype))).bits


def get_mma_micro_size(dtype="float16") -> Tuple[int, int, int]:
    """(x, y, k) of the tensor-core tile for operands of `dtype`."""
    return 16, 16, 32 if _bits(dtype) == 8 else 16


def get_ldmatrix_offset(matrix: str, row_idx, col_idx, stride=None, dtype="float16",
                        transposed: bool = False):
    """(row, column) in the operand tile of register `col_idx` of lane
    `row_idx` after ldmatrix (see the module docstring)."""
    if matrix not in ("A", "B"):
        raise ValueError(f"matrix should be either A or B, got {matrix!r}")
    bits = _bits(dtype)
    lane, reg = row_idx, col_idx
    if bits == 32:
        if matrix == "A" and not transposed:
            return lane % 16, (lane // 16) * 4 + reg % 4
        if matrix == "B" and transposed:
            return (lane // 16) * 8 + lane % 8, ((lane % 16) // 8) * 4 + reg % 4
        raise ValueError("ldmatrix of 32-bit elements supports A non-transposed and B "
                         "transposed")
    if bits == 16:
        if transposed:
            return 8 * (lane // 16) + lane % 8, 8 * ((lane % 16) // 8) + reg % 8
        return lane % 16, 8 * (lane // 16) + reg % 8
    if bits <= 8:
        pack = 8 // bits
        if matrix == "A" and not transposed:
            return lane % 16, (reg + (lane // 16) * 16) * pack
        if matrix == "B" and transposed:
            return (lane // 16) * 8 + lane % 8, (reg + 16 * ((lane % 16) // 8)) * pack
        raise ValueError("ldmatrix of 8-bit elements supports A non-transposed and B transposed")
    raise ValueError(f"ldmatrix does not load {dtype} elements")


def mma_store_index_map(thread_id, local_id):
    """(row, column) in the 16x16 accumulator tile of register `local_id`
    of lane `thread_id`."""
    row = 8 * (local_id % 4 // 2) + thread_id // 4
    col = 8 * (local_id // 4) + (thread_id % 4) * 2 + local_id % 2
    return row, col


def get_swizzle_layout(row_idx, col_idx, row_size: int, dtype,
                       swizzle_bytes: Optional[int] = None):
    """(column tile, row, swizzled column) of element (row, col) of a
    shared buffer whose rows have `row_size` elements."""
    bits = _bits(dtype)
    row_bytes = bits * int(row_size) // 8
    if row_bytes % 32 != 0:
        raise ValueError(f"the row ({row_bytes} bytes) must be a multiple of 32 bytes to swizzle")
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    per_chunk = 128 // bits  # elements of a 16-byte chunk
    chunks = int(swizzle_bytes) // 16
    chunk, within = col_idx // per_chunk, col_idx % per_chunk
    tile, c = chunk // chunks, chunk % chunks
    src = (row_idx % 8) // (8 // chunks)
    return tile, row_idx, (c ^ src) * per_chunk + within


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False) -> SwizzleLayout:
    """The swizzle of `get_swizzle_layout` as the layout of a shared buffer."""
    shape = getattr(shared_buf, "shape", None)
    dtype = getattr(shared_buf, "dtype", None)
    if not shape or dtype is None:
        raise TypeError(f"make_mma_swizzle_layout takes a shared buffer, got "
                        f"{type(shared_buf).__name__}")
    row_bytes = int(shape[-1]) * _bits(dtype) // 8
    if is_smooth or row_bytes % 64 != 0:
        return SwizzleLayout(0)
    return SwizzleLayout(128 if row_bytes % 128 == 0 else 64)


def __getattr__(name):
    from .refusals import message

    raise AttributeError(message("tilelang.intrinsics", name))


__all__ = ["get_mma_micro_size", "get_ldmatrix_offset", "mma_store_index_map",
           "get_swizzle_layout", "make_mma_swizzle_layout"]
