"""`tilelang.math`: integer helpers of host code (TileLang's names)."""

from __future__ import annotations

import numbers
import operator


def _int(name: str, x) -> int:
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{name} takes integers, got {type(x).__name__}") from None


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) of integers; of symbolic sizes (an eager program's
    T.const before the call binds it, T.dynamic), the expression
    (a + b - 1) // b, as TileLang computes it."""
    if _is_int(a) and _is_int(b):
        a, b = operator.index(a), operator.index(b)
        if b == 0:
            raise ZeroDivisionError("cdiv by zero")
        return -(-a // b)
    if not (_is_int(a) or hasattr(a, "__floordiv__")) or not (_is_int(b) or
                                                                 hasattr(b, "__rfloordiv__")):
        raise TypeError(f"cdiv takes integers or symbolic sizes, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    return (a + b - 1) // b


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral)  # Python's and NumPy's integers


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x (1 for x <= 1)."""
    x = _int("next_power_of_2", x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


__all__ = ["cdiv", "next_power_of_2"]
