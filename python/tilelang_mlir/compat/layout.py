"""`tilelang.layout`: `make_swizzled_layout` (and `Layout` / `Fragment`
where the T namespace has them), as T's."""

from __future__ import annotations

import tilelang_mlir.language as _T

make_swizzled_layout = _T.make_swizzled_layout


def __getattr__(name):
    if name in ("Layout", "Fragment", "make_padded_layout") and hasattr(_T, name):
        return getattr(_T, name)
    raise AttributeError(f"module 'tilelang.layout' has no attribute {name!r} (not supported "
                         f"by tilelang-mlir: tilelang.layout.{name})")
