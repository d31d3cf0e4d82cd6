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
    """T.alloc_reducer(shape, dtype, op="sum"): a deferred reduction whose
    logical outputs have `shape`; `op` is "sum", "max", "min", "bitand",
    "bitor" or "bitxor" (bitwise: integer dtypes). Open its epoch with
    T.reducer_init(acc[, init]), contribute with
    T.reducer_update(acc[indices], v) in T.Parallel loops (each logical
    iteration counts once, however the loop is spread over threads), close it
    with T.finalize_reducer(acc, dst). The legacy form (replication="all" or
    "none") is a fragment updated as `acc[i] += v` in T.Parallel loops after a
    T.clear, finalized in place by T.finalize_reducer(acc)."""
    return b.alloc_reducer(shape, dtype, op, replication)


@builtin
def reducer_init(b, reducer, init=None):
    """T.reducer_init(acc, init=None): opens the reducer's epoch (once per
    T.alloc_reducer, before any update). `init` is a logical starting value,
    evaluated here and combined once into every output at the finalize; it
    must have the reducer's dtype (Python numbers are converted)."""
    b.reducer_init(reducer, init)


@builtin
def reducer_update(b, target, value):
    """T.reducer_update(acc[indices], value): contributes `value` (converted
    to the reducer's dtype) to the output `acc[indices]`, once per logical
    iteration of the enclosing T.Parallel loop; the indices are that loop's
    variables and constants."""
    b.reducer_update(target, value)


@builtin
def finalize_reducer(b, reducer, dst=None, batch: int = 1, annotations=None):
    """T.finalize_reducer(acc, dst): closes the epoch and writes the logical
    results (each output's contributions and the starting value combined)
    into the fragment `dst` of the reducer's shape and dtype; in the same
    block as T.reducer_init, or a conditional in it. A legacy reducer
    finalizes in place: T.finalize_reducer(acc). `batch` / `annotations`
    are TileLang's lowering knobs (results do not depend on them); `batch`
    must be >= 1 and divide the number of output elements."""
    from ..base.errors import TileLangValueError, program_error
    from .values import static_int

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise program_error(f"finalize_reducer: batch must be >= 1, got {batch!r}",
                            b.source_location(), kind=ValueError, at_definition=True)
    total = 1
    for n in getattr(reducer, "shape", ()):
        total *= static_int(n, "reducer shape")
    if batch > total:
        raise TileLangValueError(f"finalize_reducer: batch ({batch}) exceeds total output "
                                 f"elements ({total})", b.source_location())
    if total % batch:
        raise TileLangValueError(f"finalize_reducer: batch ({batch}) must evenly divide "
                                 f"total output elements ({total})", b.source_location())
    b.finalize_reducer(reducer, dst)


__all__ = ["allocate", "alloc_shared", "alloc_fragment", "alloc_local", "alloc_buffer",
           "alloc_global", "alloc_var", "alloc_reducer", "reducer_init", "reducer_update",
           "finalize_reducer"]
