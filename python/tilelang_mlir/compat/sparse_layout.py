"""`tilelang.cuda.intrinsics.sparse_layout`: the facts of the 2:4 sparse
metadata format that TileLang's sparse examples compute with (the rest of
`tilelang.cuda` generates TVM code and is not provided). tilelang-mlir's
`T.gemm_sp` reads the same row-major ordered metadata (see
tilelang_mlir/sparse.py): four bits per group of kept values."""

from __future__ import annotations

from typing import Dict, Tuple

from ..base import dtypes as dt

# A's element type -> (values kept per group, group size).
GROUP_CONFIG: Dict[dt.DType, Tuple[int, int]] = {
    dt.float32: (1, 2),
    dt.float16: (2, 4),
    dt.bfloat16: (2, 4),
    dt.int8: (2, 4),
    dt.uint8: (2, 4),
    dt.float8_e4m3: (2, 4),
    dt.float8_e5m2: (2, 4),
}

_BITS_PER_GROUP = 4


def _group(a_dtype) -> Tuple[int, int]:
    d = dt.as_dtype(a_dtype)
    if d not in GROUP_CONFIG:
        raise ValueError(f"2:4 sparse operands of type {d} are not supported; known: "
                         f"{', '.join(str(k) for k in GROUP_CONFIG)}")
    return GROUP_CONFIG[d]


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many elements of A (dense columns) one metadata element covers."""
    _, group = _group(a_dtype)
    return (dt.as_dtype(meta_dtype).bits // _BITS_PER_GROUP) * group


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads of the sparse MMA share one metadata
    value: 1 for 8-bit operands, 2 for wider ones."""
    _group(a_dtype)
    return 1 if dt.as_dtype(a_dtype).bits <= 8 else 2


__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]
