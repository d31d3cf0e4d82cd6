"""`T.any_of` / `T.all_of`: whether any / every element of a buffer region
is true, as a boolean value of the thread that asks."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def any_of(b, buffer):
    """True if any element of `buffer` (a buffer, or a region such as
    `mask[i, j, :]`) is nonzero."""
    return b.region_truth(buffer, "or", "T.any_of")


@builtin
def all_of(b, buffer):
    """True if every element of `buffer` (a buffer, or a region such as
    `mask[i, j, :]`) is nonzero."""
    return b.region_truth(buffer, "and", "T.all_of")


__all__ = ["any_of", "all_of"]
