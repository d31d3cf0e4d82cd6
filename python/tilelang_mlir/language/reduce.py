"""Reductions and scans along one dimension of a tile.

TileLang's names, keywords and meanings (tilelang/language/reduce_op.py,
scan_op.py). Besides fragments, an operand may be a shared buffer or a
region: it is staged through a fragment (T.copy in, and back for the
destination), as TileLang does.

`batch` and `annotations` are TileLang's lowering knobs (how many outputs
share one all-reduce's barriers; packed fp32x2 adds on SM100): they do not
change what is computed, and this compiler's reduction plan is its own, so
they are checked and otherwise have no effect.
"""

from __future__ import annotations

from ._builtin import builtin

KINDS = ("sum", "max", "min", "abssum", "absmax", "bitand", "bitor", "bitxor")


def _knobs(b, what: str, batch, annotations) -> None:
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise b.error(f"{what}: batch must be an int >= 1, got {batch!r}", kind=ValueError,
                      at_definition=True)
    if annotations is not None and not isinstance(annotations, dict):
        raise b.error(f"{what}: annotations must be a dict, got {annotations!r}")


def _emit(b, kind, buffer, out, dim, clear, batch, nan_propagate, annotations):
    _knobs(b, f"T.reduce_{kind}", batch, annotations)
    if annotations and "nan_propagate" in annotations:
        nan_propagate = nan_propagate or bool(annotations["nan_propagate"])
    b.reduce(kind, buffer, out, dim, bool(clear), bool(nan_propagate))


_NAN_DOC = ("nan_propagate=True makes a NaN among float16 / bfloat16 elements the result "
            "(CUDA's __hmax_nan / __hmin_nan); by default, and always for float32 and "
            "float64 (as in TileLang), NaN elements are ignored.")
_KNOB_DOC = "batch / annotations: TileLang's lowering knobs, accepted (no effect on the result)."


def _reduce(kind: str, what: str, nan: bool, has_clear: bool = True):
    if nan:
        def reduce_fn(b, buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
                      nan_propagate: bool = False, annotations=None):
            _emit(b, kind, buffer, out, dim, clear, batch, nan_propagate, annotations)
    elif has_clear:
        def reduce_fn(b, buffer, out, dim: int = -1, clear: bool = True, batch: int = 1,
                      annotations=None):
            _emit(b, kind, buffer, out, dim, clear, batch, False, annotations)
    else:  # TileLang's reduce_abssum always clears; `clear` is ours, kept.
        def reduce_fn(b, buffer, out, dim: int = -1, batch: int = 1, annotations=None,
                      clear: bool = True):
            _emit(b, kind, buffer, out, dim, clear, batch, False, annotations)

    reduce_fn.__name__ = reduce_fn.__qualname__ = f"reduce_{kind}"
    reduce_fn.__doc__ = (f"T.reduce_{kind}(buffer, out, dim=-1, clear=True, ...): reduces "
                         f"`buffer` along `dim` with {what} into `out` (the shape of `buffer` "
                         "without `dim`, or with extent 1 there); with clear=False the result "
                         "is combined with `out`'s values. " + (_NAN_DOC + " " if nan else "")
                         + _KNOB_DOC)
    return builtin(reduce_fn)


reduce_sum = _reduce("sum", "a sum", nan=False)
reduce_max = _reduce("max", "max", nan=True)
reduce_min = _reduce("min", "min", nan=True)
reduce_abssum = _reduce("abssum", "a sum of absolute values", nan=False, has_clear=False)
reduce_absmax = _reduce("absmax", "the largest absolute value", nan=True)
reduce_bitand = _reduce("bitand", "bitwise and (integer or bool buffers; the identity is "
                        "all ones)", nan=False)
reduce_bitor = _reduce("bitor", "bitwise or (integer or bool buffers)", nan=False)
reduce_bitxor = _reduce("bitxor", "bitwise xor (integer or bool buffers)", nan=False)


@builtin
def reduce(b, buffer, out, reduce_type: str, dim: int = -1, clear: bool = True, batch: int = 1,
           nan_propagate: bool = False, annotations=None):
    """T.reduce(buffer, out, reduce_type, dim, clear, batch=1, nan_propagate=False):
    the generic form; `reduce_type` is one of "sum", "max", "min", "abssum",
    "absmax", "bitand", "bitor", "bitxor" (see T.reduce_<type>)."""
    if reduce_type not in KINDS:
        raise b.error(f"T.reduce: unknown reduce_type {reduce_type!r}; expected one of {KINDS}")
    _emit(b, reduce_type, buffer, out, dim, clear, batch, nan_propagate, annotations)


@builtin
def cumsum(b, src, dst=None, dim: int = 0, reverse: bool = False, annotations=None):
    """T.cumsum(src, dst=None, dim=0, reverse=False): the inclusive prefix sum
    of `src` along `dim` (from the end with reverse=True) into `dst` (in
    place when `dst` is omitted); `src` / `dst` are buffers or regions
    (`X[0:M, 0:N]`) of the same shape."""
    _knobs(b, "T.cumsum", 1, annotations)
    b.scan("sum", src, dst, dim, reverse)


@builtin
def cummax(b, src, dst=None, dim: int = 0, reverse: bool = False, annotations=None):
    """T.cummax(src, dst=None, dim=0, reverse=False): the inclusive prefix
    maximum of `src` along `dim` (from the end with reverse=True) into `dst`
    (in place when omitted); NaN elements are ignored (fmaxf), integers of an
    unsigned dtype compare unsigned."""
    _knobs(b, "T.cummax", 1, annotations)
    b.scan("max", src, dst, dim, reverse)


__all__ = ["reduce", "reduce_sum", "reduce_max", "reduce_min", "reduce_abssum",
           "reduce_absmax", "reduce_bitand", "reduce_bitor", "reduce_bitxor", "cumsum",
           "cummax"]
