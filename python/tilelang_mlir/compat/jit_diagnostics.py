"""`tilelang.jit.diagnostics`: `jit_phase`, the timed log records of a
compile's phases (logger "tilelang.jit.diagnostics"). A phase logs its start
and its end with the elapsed time and the given context, or its failure
with the exception (which propagates), when diagnostics are on: `verbose`
(a compile's `verbose=True`) or TILELANG_JIT_DIAGNOSTICS set to 1/true/yes/on."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterator, Optional

logger = logging.getLogger("tilelang.jit.diagnostics")


def diagnostics_enabled(*, verbose: bool = False) -> bool:
    from .env import env

    return bool(verbose) or env.is_jit_diagnostics_enabled()


def _context(context: dict) -> str:
    return "".join(f" {k}={v!r}" for k, v in sorted(context.items()))


@contextlib.contextmanager
def jit_phase(name: str, *, enabled: Optional[bool] = None, verbose: bool = False,
              **context) -> Iterator[None]:
    if enabled is None:
        enabled = diagnostics_enabled(verbose=verbose)
    if not enabled:
        yield
        return
    text = _context(context)
    start = time.monotonic()
    logger.info("TileLang JIT phase start: %s%s", name, text)
    try:
        yield
    except Exception:
        logger.exception("TileLang JIT phase failed: %s elapsed=%.3fs%s", name,
                         time.monotonic() - start, text)
        raise
    logger.info("TileLang JIT phase done: %s elapsed=%.3fs%s", name,
                time.monotonic() - start, text)


__all__ = ["jit_phase", "diagnostics_enabled"]
