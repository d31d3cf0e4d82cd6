"""`tilelang.tools`: `plot_layout` draws the layout of a buffer of a
compiled CUDA kernel (tilelang_mlir.tools.plot_layout); TileLang's form,
`plot_layout(layout_object, ...)`, takes TVM layout objects and is not
supported."""

from __future__ import annotations

import logging

from ..tools import layout as _layout
from . import tvm_pkg as tvm  # noqa: F401  (TileLang's module imports it too)

logger = logging.getLogger("tilelang.tools")


def plot_layout(kernel, buffer=None, path=None, **kwargs):
    """`plot_layout(kernel, buffer, path=None, ...)`: see
    tilelang_mlir.tools.plot_layout."""
    if buffer is None:
        raise NotImplementedError("not supported by tilelang-mlir: plot_layout(layout) of a TVM "
                                  "layout object; use plot_layout(kernel, buffer_name, path)")
    return _layout.plot_layout(kernel, buffer, path, **kwargs)


__all__ = ["plot_layout"]
