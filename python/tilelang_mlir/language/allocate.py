"""Buffer allocation in the scopes of a block.

TileLang's scope strings name where a buffer lives; the ones with a meaning
here are "shared" / "shared.dyn", "local.fragment", "local" and
"local.var". `T.alloc_global` (scope "global") is a workspace tensor of the
program, outside its kernels: a hidden parameter the runtime allocates for
each call (see PrimFunc.workspaces).
"""

from __future__ import annotations

from ._builtin import builtin

# TileLang's scope strings and ours.
_SCOPES = {"shared": "shared", "shared.dyn": "shared", "local.fragment": "fragment",
           "local": "local", "local.var": "var"}


def _scope(b, scope, what: str) -> str:
    if not isinstance(scope, str):
        raise b.error(f"{what}: scope must be a string, got {scope!r}")
    if scope == "global":
        raise b.error(f"{what} in scope 'global' inside a T.Kernel: a global workspace "
                      "belongs to the program, outside its kernels (`X = T.alloc_global(shape, "
                      "dtype)` at the top level)")
    if scope not in _SCOPES:
        raise b.error(f"{what}: unknown scope {scope!r}; expected one of "
                      f"{sorted(_SCOPES) + ['global']}")
    return _SCOPES[scope]


@builtin
def alloc_shared(b, shape, dtype, scope: str = "shared.dyn"):
    """A tile in the shared memory of the block. (As in TileLang, every
    T.alloc_* allocates in the scope it is given: `T.alloc_fragment(shape,
    dtype, "local")` is a T.alloc_local.)"""
    return b.alloc(shape, dtype, _scope(b, scope, "T.alloc_shared"))


@builtin
def alloc_fragment(b, shape, dtype, scope: str = "local.fragment"):
    """A register tile distributed over the threads of the block."""
    return b.alloc(shape, dtype, _scope(b, scope, "T.alloc_fragment"))


@builtin
def alloc_local(b, shape, dtype, scope: str = "local"):
    """A small array private to each thread (another scope string allocates
    in that scope, as in TileLang)."""
    return b.alloc(shape, dtype, _scope(b, scope, "T.alloc_local"))


@builtin
def alloc_buffer(b, shape, dtype, scope: str = "global"):
    """TVM's allocation: a buffer in `scope` ("shared", "shared.dyn",
    "local.fragment", "local"; "global" is T.alloc_global)."""
    if scope == "global" and b.kernel_depth == 0:
        return b.alloc_global(shape, dtype)
    return b.alloc(shape, dtype, _scope(b, scope, "T.alloc_buffer"))


def allocate(shape, dtype, scope: str = "global"):
    """TVM's `allocate` under TileLang's name: T.alloc_buffer."""
    return alloc_buffer(shape, dtype, scope)


@builtin
def alloc_global(b, shape, dtype, scope: str = "global"):
    """A global-memory workspace of the program (`X = T.alloc_global(shape,
    dtype)` outside its kernels, e.g. the partial results a split kernel
    writes and a combine kernel reads): allocated for each call,
    uninitialized, not returned."""
    if scope != "global":
        raise b.error(f"T.alloc_global allocates in scope 'global', got {scope!r}")
    return b.alloc_global(shape, dtype)


_UNSET = object()


@builtin
def alloc_var(b, dtype, *args, init=_UNSET, scope: str = "local.var"):
    """A scalar private to each thread, zero unless an initial value is
    given; assigning to its name stores into it. TileLang's forms:
    `T.alloc_var(dtype)`, `T.alloc_var(dtype, init)`,
    `T.alloc_var(dtype, "local.var")`, `T.alloc_var(dtype, init, scope)`,
    and `init=` / `scope=` as keywords."""
    if len(args) > 2:
        raise TypeError(f"T.alloc_var takes at most 3 positional arguments, got {len(args) + 1}")
    if len(args) == 1:
        if isinstance(args[0], str) and init is _UNSET:
            scope = args[0]
        elif init is not _UNSET:
            raise TypeError("T.alloc_var: the initial value is given twice")
        else:
            init = args[0]
    elif len(args) == 2:
        if init is not _UNSET:
            raise TypeError("T.alloc_var: the initial value is given twice")
        init, scope = args
    if _scope(b, scope, "T.alloc_var") != "var":
        raise b.error(f"not supported by tilelang-mlir: T.alloc_var in scope {scope!r} "
                      "(a var lives in 'local.var')")
    buf = b.alloc((), dtype, "var")
    if init is _UNSET or init is None:
        init = 0  # TileLang's vars start at zero
    _check_int_literal(b, init, buf.dtype)
    buf[()].store(init)
    return buf


def _check_int_literal(b, value, dtype) -> None:
    """A Python int initializer must fit the var's integer dtype (TVM's
    literal check, a ValueError)."""
    from .values import LiteralRangeError

    if isinstance(value, bool) or not isinstance(value, int) or not dtype.is_int or \
            dtype.kind == "index":
        return
    lo, hi = ((0, 2 ** dtype.bits - 1) if dtype.is_unsigned
              else (-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1))
    if not lo <= value <= hi:
        raise LiteralRangeError(f"Literal value {value} exceeds the range of {dtype} "
                                f"([{lo}, {hi}])", b.source_location())


@builtin
def alloc_reducer(b, shape, dtype, op: str = "sum", replication=None):
    """Not supported: TileLang's reducer buffers (accumulation across the
    threads of a T.Parallel loop, combined by T.finalize_reducer)."""
    raise b.error("not supported by tilelang-mlir: T.alloc_reducer / T.finalize_reducer; "
                  "accumulate into a fragment of the full tile and combine it with "
                  "T.reduce_sum / T.reduce_max / T.reduce_min")


@builtin
def finalize_reducer(b, reducer, dst=None, batch: int = 1, annotations=None):
    """See T.alloc_reducer: not supported."""
    alloc_reducer.__wrapped__(b, None, None)


__all__ = ["allocate", "alloc_shared", "alloc_fragment", "alloc_local", "alloc_buffer", "alloc_global",
           "alloc_var", "alloc_reducer", "finalize_reducer"]
