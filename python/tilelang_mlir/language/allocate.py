"""Buffer allocation in the scopes of a block."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def alloc_shared(b, shape, dtype, scope: str = "shared.dyn"):
    """A tile in the shared memory of the block."""
    return b.alloc(shape, dtype, "shared")


@builtin
def alloc_fragment(b, shape, dtype, scope: str = "local.fragment"):
    """A register tile distributed over the threads of the block."""
    return b.alloc(shape, dtype, "fragment")


@builtin
def alloc_local(b, shape, dtype, scope: str = "local"):
    """A small array private to each thread."""
    return b.alloc(shape, dtype, "local")


@builtin
def alloc_var(b, dtype, init=None, scope: str = "local.var"):
    """A scalar private to each thread; assigning to its name stores into it."""
    buf = b.alloc((), dtype, "var")
    if init is not None:
        buf[()].store(init)
    return buf
