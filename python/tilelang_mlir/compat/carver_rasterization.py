"""`tilelang.carver.roller.rasterization`: the block rasterization plans a
carver hint names (`T.use_swizzle` applies one in a program)."""

from __future__ import annotations


class Rasterization:
    panel_width = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.panel_width or ''})"


class NoRasterization(Rasterization):
    """Blocks in launch order."""


class Rasterization2DRow(Rasterization):
    """Blocks in panels of `panel_width` rows (better L2 reuse)."""

    def __init__(self, panel_width: int = 4) -> None:
        self.panel_width = panel_width


class Rasterization2DColumn(Rasterization):
    """Blocks in panels of `panel_width` columns."""

    def __init__(self, panel_width: int = 4) -> None:
        self.panel_width = panel_width


__all__ = ["Rasterization", "NoRasterization", "Rasterization2DRow", "Rasterization2DColumn"]
