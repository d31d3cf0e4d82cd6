"""How the tuner writes values, configs and failures as text: the parts of
a cache key (a factory's source and closure, the call's arguments, the
configs), records on disk (`_jsonable`) and the one-line reasons of logs
and results."""

from __future__ import annotations

from typing import Callable

from ..frontend.prim_func import _closure_values, _fingerprint


def _value_text(value) -> str:
    """A stable text for an argument or config value (the compiler's
    closure fingerprint; objects it only names by type, such as torch
    dtypes, by their repr when that says more than an address)."""
    text = _fingerprint(value)
    if text == type(value).__qualname__:
        r = repr(value)
        if " at 0x" not in r:
            return r
    return text


def _argument_text(value) -> str:
    """`_value_text`, but a tensor (an eager program's argument) stands for
    its shape and dtype: the kernel depends on nothing else of it."""
    from ..frontend.eager import is_tensor

    if is_tensor(value):
        return f"tensor({tuple(value.shape)},{value.dtype})"
    return _value_text(value)


def _config_text(config: dict) -> str:
    return ", ".join(f"{k}={_value_text(v) if not isinstance(v, str) else v}"
                     for k, v in config.items())


def _jsonable(value):
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return _value_text(value)


def _factory_text(fn: Callable) -> str:
    closure = ",".join(f"{k}={_value_text(v)}" for k, v in sorted(_closure_values(fn).items()))
    return f"{_fingerprint(fn)}|{closure}"



def _reason(exc: BaseException) -> str:
    """One line saying why: the first line of a tile program's error message
    (without the file:line prefix), else `Type: message`."""
    from ..base.errors import TileLangError

    if isinstance(exc, TileLangError):
        text = exc.message
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = (text.strip().splitlines() or [type(exc).__name__])[0]
    return line if len(line) <= 400 else line[:397] + "..."


def _reason_line(exc: AssertionError) -> str:
    text = (str(exc).strip().splitlines() or ["AssertionError"])[0]
    return text if len(text) <= 400 else text[:397] + "..."
