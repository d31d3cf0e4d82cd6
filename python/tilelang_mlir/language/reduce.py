"""Reductions and scans along one dimension of a tile."""

from __future__ import annotations

from ._builtin import builtin


def _reduce(kind):
    @builtin
    def reduce_fn(b, buffer, out, dim: int = -1, clear: bool = True):
        b.reduce(kind, buffer, out, dim, clear)

    reduce_fn.__name__ = reduce_fn.__qualname__ = f"reduce_{kind}"
    reduce_fn.__doc__ = (f"Reduces `buffer` along `dim` with {kind} into `out`; with "
                         "clear=False the result is combined with `out`'s values.")
    return reduce_fn


reduce_sum = _reduce("sum")
reduce_max = _reduce("max")
reduce_min = _reduce("min")
reduce_abssum = _reduce("abssum")
reduce_absmax = _reduce("absmax")


@builtin
def reduce(b, buffer, out, reduce_type: str, dim: int = -1, clear: bool = True):
    """`T.reduce(buf, out, "sum", dim)`: the generic form."""
    kinds = ("sum", "max", "min", "abssum", "absmax")
    if reduce_type not in kinds:
        from ..base.errors import TileLangError

        raise TileLangError(f"unknown reduction {reduce_type!r}; expected one of {kinds}",
                            b.location)
    b.reduce(reduce_type, buffer, out, dim, clear)


@builtin
def cumsum(b, src, dst=None, dim: int = 0, reverse: bool = False):
    """Inclusive prefix sum of `src` along `dim` into `dst` (in place when
    `dst` is omitted)."""
    b.cumsum(src, dst, dim, reverse)
