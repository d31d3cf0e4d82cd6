"""`tilelang.layout.gemm_sp`: where CUTLASS's sparse compressors store the
2:4 metadata, as a `T.Layout` of the metadata buffer.

`T.gemm_sp` reads its metadata operand E in the ordered form of
tilelang_mlir/sparse.py (row m, metadata element c covers the columns of A
that follow those of element c - 1; four bits per group of four). CUTLASS
stores the same elements in another order: on sm_80/sm_86 (16-bit metadata
for 16-bit operands, 32-bit for 8-bit ones) the rows are interleaved in
groups of 32 (16) and element pairs are stored column-major; on sm_90 the
8-bit metadata of a tile is laid out in the atoms of CUTLASS's sparse GMMA
builder. TileLang's programs that take CUTLASS-compressed metadata say so
with `T.annotate_layout({E: make_cutlass_metadata_layout(E, mma_dtype,
arch)})`: the kernel's reads of E[i, c] then go to where CUTLASS stored that
element, so E as the kernel sees it is the ordered metadata. On a shared
buffer (`E_shared`) the layout only says where the elements lie in shared
memory, which no value depends on: this compiler places E_shared itself.

The index maps below are this module's own formulation of CUTLASS's
placement (each a one-to-one map; test_compat_sparse_layout.py checks them
against PyTorch's CUTLASS conversion where PyTorch has one).
"""

from __future__ import annotations

import warnings
from typing import List, Sequence

from ..base import dtypes as dt
from ..base.errors import TileLangError
from ..language.layout import Layout

__all__ = ["decompose_col_major", "make_cutlass_metadata_layout",
           "make_cutlass_metadata_layout_sm90", "make_cutlass_metadata_layout_sm8x"]


class MetadataLayout(Layout):
    """A T.Layout of 2:4 metadata. On a global tensor it places the
    elements (the kernel's accesses follow it); on a shared buffer it is
    the placement in shared memory, which this compiler chooses itself."""

    placement_only_in_shared = True


def decompose_col_major(index, basis: Sequence[int]) -> List:
    """The digits of `index` in the mixed radix `basis`, least significant
    first (index % basis[0], index // basis[0] % basis[1], ...)."""
    digits = []
    for radix in basis:
        digits.append(index % radix)
        index = index // radix
    return digits


def _shape(buffer, what: str) -> List[int]:
    try:
        dims = [int(d) for d in buffer.shape]
    except (TypeError, ValueError):
        raise TileLangError(f"{what}: the metadata buffer needs a shape known at compile "
                            f"time, got {list(buffer.shape)}") from None
    if len(dims) != 2:
        raise TileLangError(f"{what}: the metadata buffer is 2-d (rows, metadata columns), "
                            f"got shape {dims}")
    return dims


_SM90_OPERANDS = {"float16": 16, "bfloat16": 16, "float32": 32, "int8": 8,
                  "float8_e4m3": 8, "float8_e4m3fn": 8, "float8_e4m3fnuz": 8,
                  "float8_e5m2": 8, "float8_e5m2fnuz": 8}


def _strides_in_order(shape: Sequence[int], order: Sequence[int]) -> List[int]:
    """Strides of a tensor of `shape` whose dimensions are nested as
    `order` says (the dimension of order 0 is contiguous, then order 1...)."""
    strides = [0] * len(shape)
    step = 1
    for dim in sorted(range(len(shape)), key=lambda d: order[d]):
        strides[dim] = step
        step *= shape[dim]
    return strides


def make_cutlass_metadata_layout_sm90(buffer, mma_dtype="float16", block_k: int = 128):
    """The placement of CUTLASS's sm_90 sparse-GMMA metadata (8-bit
    elements) for operand type `mma_dtype` and a K tile of `block_k` columns
    of A (at most 128; larger is taken as 128, with a warning, as CUTLASS
    does)."""
    what = "make_cutlass_metadata_layout_sm90"
    if block_k > 128:
        warnings.warn(f"block_k {block_k} is too large, set to 128 for {mma_dtype}.",
                      stacklevel=2)
        block_k = 128
    name = str(mma_dtype)
    if name not in _SM90_OPERANDS:
        raise NotImplementedError(f"Unsupported dtype: {mma_dtype}")
    meta = dt.as_dtype(buffer.dtype)
    if meta.bits != 8 or not meta.is_int:
        raise ValueError(f"metadata should be 8 bit, got {buffer.dtype}")
    bits = _SM90_OPERANDS[name]
    atom_k = 512 // bits  # columns of A of one metadata atom
    if block_k % atom_k:
        raise ValueError(f"Tile K is too small, which should be at least {atom_k} for "
                         f"{mma_dtype}")
    if bits == 8:
        shape_i, stride_i = [64], [block_k // 8]
        shape_k, stride_k = [block_k // 8], [1]
    else:
        # Row digits (8, 2, 4) and column digits (bytes per atom row, 2,
        # atoms per tile), nested from the innermost: the byte, the row's
        # 2-block, the atom, the row's 8-block, the column pair, the 4-block.
        shape = [8, 2, 4, 32 // bits, 2, block_k // atom_k]
        strides = _strides_in_order(shape, [3, 1, 5, 0, 4, 2])
        shape_i, shape_k = shape[:3], shape[3:]
        stride_i, stride_k = strides[:3], strides[3:]
    rows, cols = _shape(buffer, what)
    tile_i, tile_k = 1, 1
    for s in shape_i:
        tile_i *= s
    for s in shape_k:
        tile_k *= s
    rep_i, rep_k = -(-rows // tile_i), -(-cols // tile_k)
    stride_i = stride_i + [tile_i * tile_k]
    stride_k = stride_k + [tile_i * tile_k * rep_i]
    shape_i, shape_k = shape_i + [rep_i], shape_k + [rep_k]

    def place(i, k):
        offset = 0
        for d, s in zip(decompose_col_major(i, shape_i), stride_i):
            offset = offset + d * s
        for d, s in zip(decompose_col_major(k, shape_k), stride_k):
            offset = offset + d * s
        return offset

    return MetadataLayout([rows, cols], place)


def make_cutlass_metadata_layout_sm8x(buffer, mma_dtype="float16"):
    """The placement of CUTLASS's sm_80 sparse-MMA metadata (PyTorch's
    `to_sparse_semi_structured` on its CUTLASS path): 16-bit metadata for
    16-bit operands, 32-bit for 8-bit ones."""
    what = "make_cutlass_metadata_layout_sm8x"
    name = str(mma_dtype)
    meta = dt.as_dtype(buffer.dtype)
    if name in ("float16", "bfloat16") and (meta.bits != 16 or not meta.is_int):
        raise ValueError(f"metadata should be 16 bit, got {buffer.dtype}")
    if name in ("float8_e4m3", "float8_e4m3fn", "float8_e5m2", "int8", "uint8") and \
            (meta.bits != 32 or not meta.is_int):
        raise ValueError(f"metadata should be 32 bit, got {buffer.dtype}")
    rows, cols = _shape(buffer, what)
    group = 32 if meta.bits == 16 else 16
    spread = 4 if meta.bits == 16 else 2

    def place(i, j):
        # Rows are interleaved within each group of `group`; then in every
        # 2x2 block of (row, column) the off-diagonal elements trade places
        # (the row's parity and the column's parity swap); the pairs of
        # columns are stored one after another, column-major over rows.
        r = (i // group) * group + (i % 8) * spread + (i % group) // 8
        r2 = (r // 2) * 2 + j % 2
        c2 = (j // 2) * 2 + r % 2
        offset = (c2 // 2) * (2 * rows) + r2 * 2 + c2 % 2
        return offset // cols, offset % cols

    return MetadataLayout([rows, cols], place)


def make_cutlass_metadata_layout(buffer, mma_dtype="float16", arch=None, **extra_args):
    """The placement of CUTLASS-compressed 2:4 metadata in `buffer` for
    `arch` (a compute capability "9.0" / "8.0", or a CUDA target; None: this
    machine's GPU): sm_90 and newer the sparse-GMMA layout (`block_k=`
    passed on), sm_80 to sm_89 the sparse-MMA one."""
    from .contrib_nvcc import get_target_compute_version, parse_compute_version

    if arch is None:
        arch = get_target_compute_version()
    elif isinstance(arch, str) and (":" in arch or arch.startswith("sm_")):
        arch = get_target_compute_version(arch if ":" in arch else f"cuda:{arch}")
    version = parse_compute_version(arch)
    if version >= (9, 0):
        return make_cutlass_metadata_layout_sm90(buffer, mma_dtype, **extra_args)
    if version >= (8, 0):
        return make_cutlass_metadata_layout_sm8x(buffer, mma_dtype)
    raise NotImplementedError(f"Unsupported architecture: {arch}")
