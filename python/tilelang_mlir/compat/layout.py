"""`tilelang.layout` (and `tilelang.layout.swizzle`, `.layout`, `.fragment`,
`.swizzle_mode`): TileLang's layout constructors, giving this compiler's
layouts for `T.annotate_layout`; `make_cutlass_metadata_layout` (where
CUTLASS stores 2:4 metadata) is compat/gemm_sp_layout.py's.

Shared-memory layouts (the swizzles) say where a shared buffer's elements
are placed; a program's results do not depend on them. Each constructor
gives the XOR swizzle TileLang's does: 128-byte spans (full bank), 64 (half
bank), 32 (quarter bank) or none (linear), chosen from the buffer's row
where TileLang chooses (`make_swizzled_layout`, `make_wgmma_swizzled_layout`:
the largest span that divides the contiguous row's bytes).
`make_gemm_fragment_8x8` (and its transpose) and
`make_fully_replicated_layout_fragment` are `T.Fragment`s of TileLang's
thread/register maps. Volta and Blackwell (tcgen05) layouts and CuTe's
layout algebra are out of scope (compat/refusals.py)."""

from __future__ import annotations

import enum
from typing import Optional

import tilelang_mlir.language as _T

from ..base import dtypes as dt
from ..language.annotations import SwizzleLayout
from .gemm_sp_layout import make_cutlass_metadata_layout  # noqa: F401 (CUTLASS's 2:4 metadata)

Layout = _T.Layout
Fragment = _T.Fragment


class SwizzleMode(enum.Enum):
    """A shared-memory swizzle: none, or XOR over 32, 64 or 128 bytes."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def swizzle_byte_size(self) -> int:
        """The swizzle span in bytes (1 for none)."""
        return {0: 1, 1: 32, 2: 64, 3: 128}[self.value]

    def swizzle_atom_size(self) -> int:
        """The span in 16-byte vectors (1 for none)."""
        return 1 if self.is_none() else self.swizzle_byte_size() // 16

    def wgmma_layout_type(self) -> int:
        """The layout field of a wgmma shared-memory descriptor."""
        return {0: 0, 1: 3, 2: 2, 3: 1}[self.value]

    def tcgen05_layout_type(self) -> int:
        """The swizzle field of a tcgen05 descriptor."""
        return {0: 0, 1: 6, 2: 4, 3: 2}[self.value]

    def smem_alignment(self) -> int:
        """The shared-memory base alignment the swizzle needs, in bytes."""
        return {0: 128, 1: 256, 2: 512, 3: 1024}[self.value]

    @staticmethod
    def from_ordinal(ordinal: int) -> "SwizzleMode":
        return SwizzleMode(int(ordinal))

    def layout(self, buffer=None) -> SwizzleLayout:
        """This swizzle as a layout for T.annotate_layout."""
        return SwizzleLayout(0 if self.is_none() else self.swizzle_byte_size())


def _row(buffer):
    """(elements of the contiguous row, bits of an element) of a buffer."""
    shape = getattr(buffer, "shape", None)
    dtype = getattr(buffer, "dtype", None)
    if not shape or dtype is None:
        raise TypeError(f"a layout constructor takes a buffer (T.alloc_shared ...), got "
                        f"{type(buffer).__name__}")
    last = shape[-1]
    if not isinstance(last, int):
        raise TypeError(f"the buffer's last dimension must be a compile-time int, got {last!r}")
    return last, dt.as_dtype(dtype).bits


def _span(row_bytes: int) -> int:
    """The largest swizzle span (128, 64 or 32 bytes) that divides a row of
    `row_bytes`, else 0."""
    for span in (128, 64, 32):
        if row_bytes % span == 0:
            return span
    return 0


def make_swizzled_layout(buffer, k_major: bool = True, allow_pad: bool = True) -> SwizzleLayout:
    """The swizzle of a shared operand buffer: the largest XOR span that
    divides its row (`k_major` and `allow_pad` are accepted: the rows are
    never padded here)."""
    elems, bits = _row(buffer)
    return SwizzleLayout(_span(elems * bits // 8))


def make_wgmma_swizzled_layout(buffer, continuity: Optional[int] = None,
                               k_major: bool = True) -> SwizzleLayout:
    """The swizzle a wgmma operand reads: the largest span that divides
    `continuity` elements (default: the row)."""
    elems, bits = _row(buffer)
    if continuity is not None and continuity > 0:
        elems = int(continuity)
    return SwizzleLayout(_span(elems * bits // 8))


def make_full_bank_swizzled_layout(buffer) -> SwizzleLayout:
    """128-byte XOR swizzle."""
    _row(buffer)
    return SwizzleLayout(128)


def make_half_bank_swizzled_layout(buffer) -> SwizzleLayout:
    """64-byte XOR swizzle."""
    _row(buffer)
    return SwizzleLayout(64)


def make_quarter_bank_swizzled_layout(buffer) -> SwizzleLayout:
    """32-byte XOR swizzle."""
    _row(buffer)
    return SwizzleLayout(32)


def make_linear_layout(buffer) -> SwizzleLayout:
    """Row-major, no swizzle."""
    _row(buffer)
    return SwizzleLayout(0)


def make_gemm_fragment_8x8() -> Fragment:
    """The 8x8 accumulator tile of an mma over a warp: element (i, j) is in
    thread 4 i + j // 2, register j % 2."""
    return Fragment([8, 8], forward_fn=lambda i, j: (j // 2 + 4 * i, j % 2))


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transpose of `make_gemm_fragment_8x8`: thread 4 j + i // 2,
    register i % 2."""
    return Fragment([8, 8], forward_fn=lambda i, j: (i // 2 + 4 * j, i % 2))


def make_fully_replicated_layout_fragment(buffer, threads: int) -> Fragment:
    """Every one of `threads` threads holds the whole (fragment) buffer."""
    shape = [int(s) for s in getattr(buffer, "shape", buffer)]
    threads = int(threads)

    def forward(*idx):
        dims, rep = (idx[:-1], idx[-1]) if threads > 1 else (idx, 0)
        linear = 0
        for d, n in zip(dims, shape):
            linear = linear * n + d
        return rep, linear

    return Fragment(shape, forward_fn=forward, replicate=threads)


def __getattr__(name):
    from .refusals import message

    raise AttributeError(message("tilelang.layout", name))


__all__ = ["Layout", "Fragment", "SwizzleMode", "make_swizzled_layout",
           "make_wgmma_swizzled_layout", "make_full_bank_swizzled_layout",
           "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout",
           "make_linear_layout", "make_gemm_fragment_8x8", "make_gemm_fragment_8x8_transposed",
           "make_fully_replicated_layout_fragment", "make_cutlass_metadata_layout"]
