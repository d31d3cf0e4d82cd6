"""`tilelang.tools` (and `tilelang.tools.plot_layout`): `plot_layout`.

TileLang's form, `plot_layout(layout, save_directory="./tmp", name=...,
formats="pdf")`, draws a `T.Layout` (each element of the input grid labeled
with the index it is stored at) or a `T.Fragment` (each element labeled
`T<thread>:R<register>`, colored by thread) and writes
`<save_directory>/<name>.<format>` for each of `formats` ("pdf", "png",
"svg" or "all"). This package's form, `plot_layout(kernel, buffer, path)`,
draws a buffer of a compiled CUDA kernel as the compiler placed it
(tilelang_mlir.tools.plot_layout). TileLang's analyzer of TVM PrimFuncs is
out of scope (compat/refusals.py).
"""

from __future__ import annotations

import logging
import os
import re
from typing import List, Optional, Sequence, Union

import numpy as np

import tilelang_mlir.language as _T

from ..tools import layout as _layout
from . import tvm_pkg as tvm  # noqa: F401  (TileLang's module imports it too)

logger = logging.getLogger("tilelang.tools")

_FORMATS = ("pdf", "png", "svg")


def _grid_of(shape: Sequence[int], grid_shape=None):
    """The 2-D grid the elements are drawn in: leading dimensions as rows."""
    shape = [int(s) for s in shape]
    if grid_shape is not None:
        rows, cols = (int(x) for x in grid_shape)
        if rows * cols != int(np.prod(shape)):
            raise ValueError(f"grid_shape {tuple(grid_shape)} does not hold the layout's "
                             f"{int(np.prod(shape))} elements")
        return rows, cols
    cols = shape[-1]
    return int(np.prod(shape[:-1])) if len(shape) > 1 else 1, cols


def _layout_values(layout) -> List[List[int]]:
    """Output index tuples of every input element of a T.Layout, row-major."""
    shape = [int(s) for s in layout.shape]
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    outs = [np.broadcast_to(np.asarray(o, dtype=np.int64), idx.shape[1:])
            for o in layout.forward(list(idx))]
    return [list(t) for t in zip(*[o.tolist() for o in outs])]


_AFFINE = re.compile(r"affine_map<\(([^)]*)\)(?:\[(\w+)\])?\s*->\s*\((.*)\)>")


def _fragment_values(frag, replica: int = 0):
    """(thread, register) of every element of a T.Fragment, row-major."""
    m = _AFFINE.fullmatch(frag.map)
    if not m:
        raise ValueError(f"cannot read the layout of {frag!r}")
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    sym = m.group(2)
    body = m.group(3).replace("floordiv", "//").replace("mod", "%")
    shape = [int(s) for s in frag.shape]
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    env = {d: idx[i] for i, d in enumerate(dims)}
    if sym:
        env[sym] = np.int64(replica)
    thread, reg = eval(f"({body})", {"__builtins__": {}}, env)  # noqa: S307 (our own map text)
    thread = np.broadcast_to(np.asarray(thread), idx.shape[1:])
    reg = np.broadcast_to(np.asarray(reg), idx.shape[1:])
    return thread.tolist(), reg.tolist()


def _draw(labels: List[str], colors: np.ndarray, rows: int, cols: int, title: str,
          colormap: str):
    Figure = _layout._matplotlib()
    fig = Figure(figsize=(max(3.0, 0.9 * cols), max(2.0, 0.5 * rows)))
    ax = fig.add_subplot()
    ax.imshow(colors.reshape(rows, cols), cmap=colormap, aspect="auto")
    if rows * cols <= 1024:
        for k, text in enumerate(labels):
            ax.text(k % cols, k // cols, text, ha="center", va="center", fontsize=7)
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_title(title, fontsize=9)
    return fig


def _plot_object(layout, save_directory: str, name: str, colormap: Optional[str],
                 verbose: bool, formats: Union[str, Sequence[str]], grid_shape):
    rows, cols = _grid_of(layout.shape, grid_shape)
    if isinstance(layout, _T.Fragment):
        threads, regs = _fragment_values(layout)
        labels = [f"T{t}:R{r}" for t, r in zip(threads, regs)]
        colors = np.asarray(threads, dtype=float)
        title = f"T.Fragment {list(layout.shape)}: thread and register of each element"
        cmap = colormap or "RdPu"
    else:
        outs = _layout_values(layout)
        labels = [",".join(str(v) for v in o) for o in outs]
        flat = np.ravel_multi_index(np.asarray(outs).T,
                                    [max(o[k] for o in outs) + 1 for k in range(len(outs[0]))])
        colors = flat.astype(float)
        title = f"T.Layout {list(layout.shape)}: where each element is stored"
        cmap = colormap or "Spectral"
    if verbose:
        for k, text in enumerate(labels):
            where = tuple(int(i) for i in np.unravel_index(k, [int(s) for s in layout.shape]))
            print(f"{where} -> {text}")
    fig = _draw(labels, colors, rows, cols, title, cmap)
    wanted = list(_FORMATS) if formats == "all" else (
        [formats] if isinstance(formats, str) else list(formats))
    for fmt in wanted:
        if fmt not in _FORMATS:
            raise ValueError(f"formats: {fmt!r} is not one of {', '.join(_FORMATS)} or 'all'")
    os.makedirs(save_directory, exist_ok=True)
    paths = []
    for fmt in wanted:
        path = os.path.join(save_directory, f"{name}.{fmt}")
        fig.savefig(path)
        paths.append(path)
    return paths


def plot_layout(layout, buffer=None, path=None, save_directory: str = "./tmp",
                name: str = "layout", colormap: Optional[str] = None, verbose: bool = False,
                formats: Union[str, Sequence[str]] = "pdf", view: str = "input",
                grid_shape=None, **kwargs):
    """`plot_layout(T.Layout or T.Fragment, save_directory=, name=,
    formats=)` (TileLang's form: returns the files written) or
    `plot_layout(kernel, buffer, path=None, ...)` (see
    tilelang_mlir.tools.plot_layout)."""
    if isinstance(layout, (_T.Layout, _T.Fragment)):
        if view != "input":
            raise NotImplementedError(f"not supported by tilelang-mlir: plot_layout(view="
                                      f"{view!r}) (the input grid is drawn)")
        return _plot_object(layout, save_directory, name, colormap, verbose, formats,
                            grid_shape)
    if buffer is None:
        raise TypeError(f"plot_layout takes a T.Layout, a T.Fragment, or a compiled kernel "
                        f"and a buffer name; got {type(layout).__name__}")
    return _layout.plot_layout(layout, buffer, path, **kwargs)


__all__ = ["plot_layout"]
