"""Signals between blocks and GPUs: `T.signal` and `T.wait` on integer
flags in global memory, typically in a symmetric buffer
(`T.SymmetricTensor`, `X.peer(rank)`), with release/acquire ordering at
system scope."""

from __future__ import annotations

from ._builtin import builtin

__all__ = ["signal", "wait"]

_MODES = ("set", "add")
_COMPARE = {"eq": "eq", "==": "eq", "ne": "ne", "!=": "ne", "ge": "ge", ">=": "ge",
            "gt": "gt", ">": "gt", "le": "le", "<=": "le", "lt": "lt", "<": "lt"}


@builtin
def signal(b, flag, value=1, op: str = "set"):
    """Once every thread of the block has reached it, sets the integer flag
    `flag` (an element, `F[i]` or `F.peer(r)[i]`) to `value` (op="set") or
    adds `value` to it (op="add"), releasing at system scope every write the
    block made before: a T.wait that sees the new value sees them too."""
    if op not in _MODES:
        raise b.error(f"T.signal: op must be one of {_MODES}, got {op!r}")
    b.signal(flag, value, op)


@builtin
def wait(b, flag, value=1, cmp: str = "eq", timeout_ms: int = 10000):
    """Waits until the integer flag `flag` (an element) compares `cmp`
    ("eq", "ne", "ge", "gt", "le", "lt" or ==, !=, >=, >, <=, <) with
    `value`; then every write released by the signal it saw is visible to
    the whole block. After `timeout_ms` without success the kernel stops
    with an error (a rank that never signals does not hang the job);
    `timeout_ms` is at most 2**63 // 10**6 (292 years: the poll counts
    int64 nanoseconds). A flag
    tensor that is not a T.SymmetricTensor must be signalled in the same
    program (otherwise nothing could set it)."""
    if cmp not in _COMPARE:
        raise b.error(f"T.wait: cmp must be one of {sorted(set(_COMPARE))}, got {cmp!r}")
    if (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
            or not 0 < timeout_ms <= _MAX_TIMEOUT_MS):
        raise b.error(f"T.wait: timeout_ms must be an int from 1 to {_MAX_TIMEOUT_MS} (292 "
                      f"years: the poll counts int64 nanoseconds), got {timeout_ms!r}")
    b.wait(flag, value, _COMPARE[cmp], timeout_ms)


# The longest T.wait (tile.wait's verifier: limits::kWaitTimeoutMs).
_MAX_TIMEOUT_MS = (2**63 - 1) // 10**6
