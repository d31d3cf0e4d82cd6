"""The eager program style's declarations: `T.const` and `T.empty`.

In the eager style (TileLang's current examples), `@tilelang.jit` decorates
the tile program itself; its parameters are tensors and compile-time values:

    @tilelang.jit
    def matmul(A, B, block_M, block_N, block_K, dtype=T.float16):
        M, N, K = T.const("M, N, K")      # sizes, bound per compile
        A: T.Tensor((M, K), dtype)        # A and B are tensor parameters
        B: T.Tensor((K, N), dtype)
        C = T.empty((M, N), dtype)        # an output, allocated by the call
        with T.Kernel(...):
            ...
        return C

Both names hand their arguments to the eager emitter of the frontend
(`frontend/eager.py`), which the builder carries while it runs such a
function; anywhere else they are an error.
"""

from __future__ import annotations

from ..base import dtypes as dt
from ..base.errors import TileLangError
from . import state

__all__ = ["const", "empty"]


def _emitter(what: str):
    builder = state.current() if state.active() else None
    emitter = getattr(builder, "eager", None)
    if emitter is None:
        raise TileLangError(f"{what} can only be used in the body of a @tilelang.jit function "
                            "written in the eager style (one whose parameters are tensors and "
                            "compile-time values, declared in its body with `A: T.Tensor(...)`); "
                            "a @T.prim_func declares its tensors in its signature",
                            builder.location if builder is not None else None)
    return emitter


def const(names: str, dtype="int32"):
    """`M, N = T.const("M, N")`: compile-time sizes of an eager program,
    bound by name when it is compiled (`f.compile(M=1024, ...)`) or from the
    shapes of the tensors it is called with. One name gives one value; a
    comma- or space-separated list gives a tuple."""
    if not isinstance(names, str):
        raise TileLangError(f"T.const takes the names as one string such as \"M, N\", got "
                            f"{names!r}")
    split = [n for n in names.replace(",", " ").split()]
    if not split or not all(n.isidentifier() for n in split):
        raise TileLangError(f"T.const: {names!r} is not a list of names such as \"M, N, K\"")
    dtype = dt.as_dtype(dtype)
    if not dtype.is_int:
        raise TileLangError(f"T.const declares integer sizes; dtype {dtype} is not an integer "
                            "type")
    emitter = _emitter("T.const")
    values = tuple(emitter.const(n, dtype) for n in split)
    return values[0] if len(split) == 1 and "," not in names else values


def empty(*shape, dtype="float32"):
    """`C = T.empty((M, N), dtype)`: an output tensor of an eager program,
    allocated by each call and returned by the function (`return C`). The
    shape is a tuple or list (or the sizes as separate arguments, with
    `dtype=` as a keyword)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        dims = list(shape[0])
    elif len(shape) == 2 and isinstance(shape[0], (tuple, list)):
        dims, dtype = list(shape[0]), shape[1]
    else:
        dims = list(shape)
    if not dims:
        raise TileLangError("T.empty needs a shape with at least one dimension")
    try:
        dtype = dt.as_dtype(dtype)
    except TypeError as e:
        raise TileLangError(f"T.empty: {e}") from None
    return _emitter("T.empty").empty(dims, dtype)
