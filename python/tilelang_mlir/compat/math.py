"""`tilelang.math`: integer helpers of host code (TileLang's names)."""

from __future__ import annotations

import operator


def _int(name: str, x) -> int:
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name} takes integers, got {type(x).__name__}") from None


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) of integers."""
    a, b = _int("cdiv", a), _int("cdiv", b)
    if b == 0:
        raise ZeroDivisionError("cdiv by zero")
    return -(-a // b)


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x (1 for x <= 1)."""
    x = _int("next_power_of_2", x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


__all__ = ["cdiv", "next_power_of_2"]
