"""Developer tools (`tl.tools`).

- `plot_layout(kernel, buffer, path=None)`: a picture of which thread and
  register hold each element of a fragment, or where the elements of a
  shared buffer land (16-byte chunk, bank), for a compiled CUDA kernel
  (matplotlib); `layout_text(kernel, buffer)` is the terminal version and
  `allocations(kernel)` lists the buffers. See `tools/layout.py`.
- `trace_report(trace_dir, html_path=None)`: the lower trace as the diff of
  every pass against the previous step, as text and as one HTML page; also
  `python -m tilelang_mlir.tools.trace <dir> [--html out.html]`.
- `tile_opt`: the `tile-opt` driver (`python -m tilelang_mlir.tools.tile_opt`).

Nothing here is imported until used (matplotlib only by `plot_layout`).
"""

_LAYOUT = ("plot_layout", "layout_text", "allocations", "save_layout_plots", "Allocation",
           "FragmentLayout", "shared_offsets")
_TRACE = ("trace_report", "read_trace")
_AFFINE = ("parse_affine_map", "AffineMap")

__all__ = list(_LAYOUT + _TRACE + _AFFINE)


def __getattr__(name):
    import importlib

    for module, names in (("layout", _LAYOUT), ("trace", _TRACE), ("affine", _AFFINE)):
        if name in names:
            return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module 'tilelang_mlir.tools' has no attribute {name!r}")
