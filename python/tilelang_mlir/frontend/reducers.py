"""TileLang's reducers (T.alloc_reducer, T.reducer_init, T.reducer_update,
T.finalize_reducer), built from fragments, T.Parallel loops and T.reduce.

A reducer is a deferred reduction: every logical iteration of a T.Parallel
loop that calls `T.reducer_update(acc[idx], v)` contributes `v` exactly
once to the logical output `acc[idx]`, however the loop is spread over
threads, across as many loops and serial tiles as the epoch spans;
`T.finalize_reducer(acc, dst)` combines the contributions (and the optional
starting value of `T.reducer_init`, once per output) into `dst`.

Each update site (a T.Parallel loop and the shape of its index) keeps one
*wide* fragment of the loop's extents, set to the combine's identity at the
init: the update combines the iteration's contribution into its own element
(`wide[i, k] = wide[i, k] (+) v`), which replicas of an iteration compute
alike, so no contribution counts twice and nothing crosses threads until
the finalize. The finalize reduces each wide fragment over the loop
dimensions the index does not name (T.reduce) and combines the rest into
`dst` at the index. An index is loop variables of the enclosing T.Parallel,
constants, and values the iteration does not choose (a serial loop's
variable: the wide fragment has a dimension for each such index).

The legacy form, `T.alloc_reducer(..., replication="all"|"none")` with
`T.clear` / `T.fill`, read-modify-writes of `acc[idx]` in T.Parallel loops
and an in-place `T.finalize_reducer(acc)`, maps onto the same sites: inside
a T.Parallel loop, `acc[idx]` is the iteration's element of its site's wide
fragment (so `acc[i] += x` and `acc[i] = T.max(acc[i], x)` accumulate), and
the finalize combines them into the reducer's own fragment, which reads as
a fragment from then on. (TileLang combines every thread's copy, each
starting from the T.clear / T.fill value; here every wide element starts
from it: the same result for the identity.)

TileLang's TL_REDUCER_FORCE_BASELINE (its choice between physical plans)
has nothing to choose here: there is one plan.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..base import dtypes as dt
from ..language.values import (Buffer, BufferRef, IndexExpr, Scalar, _describe, binary,
                               to_index, to_scalar)

OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
_BITWISE = ("bitand", "bitor", "bitxor")


def _ir():
    from .. import ir

    return ir


def combine(op: str, a, b):
    """The reducer's combine of two values."""
    from ..language import math as tmath

    if op == "sum":
        return binary("+", a, b)
    if op == "max":
        return tmath.max(a, b)
    if op == "min":
        return tmath.min(a, b)
    return binary({"bitand": "&", "bitor": "|", "bitxor": "^"}[op], a, b)


def identity(op: str, dtype) -> object:
    """The combine's identity as a Python number of `dtype` (as TileLang's
    reducers: 0, -inf / the smallest integer, +inf / the largest, all ones)."""
    if op in ("sum", "bitor", "bitxor"):
        return False if dtype.is_bool else 0
    if op == "bitand":
        return True if dtype.is_bool else -1
    big = op == "min"
    if dtype.is_float:
        return float("inf") if big else float("-inf")
    if dtype.is_bool:
        return big
    if dtype.is_unsigned:
        return (1 << dtype.bits) - 1 if big else 0
    return (1 << (dtype.bits - 1)) - 1 if big else -(1 << (dtype.bits - 1))


class Site:
    """One update site: a T.Parallel loop and how the index names its
    variables (`("iv", k)`: the loop's k-th variable; `("const", c)`)."""

    def __init__(self, wide: Buffer, pattern: Tuple, extents: List[int]):
        self.wide = wide
        self.pattern = pattern
        self.extents = extents


class Reducer(Buffer):
    """The handle T.alloc_reducer returns (a Buffer whose storage is the
    result fragment: read as a fragment once a legacy reducer is
    finalized; a v2 handle is never read)."""

    def __init__(self, result: Buffer, op: str, legacy: bool):
        super().__init__(result.value, result.shape, result.dtype, result.scope, result.name)
        self.result = result
        self.op = op
        self.legacy = legacy
        self.state = "open" if legacy else "allocated"
        self.sites: Dict[Tuple, Site] = {}
        self.anchor = None  # new sites' wide fragments are made just before this op
        self.init_block = None  # the block of the T.reducer_init (scope checks)
        self.start = None  # the legacy T.clear / T.fill value
        self.seed: Optional[Buffer] = None  # T.reducer_init's captured starting value

    def __getitem__(self, items):
        if not isinstance(items, tuple):
            items = (items,)
        return ReducerRef(self, items)


class ReducerRef(BufferRef):
    """`acc[idx]` of a reducer: the target of T.reducer_update; for a legacy
    reducer inside T.Parallel, the iteration's element of its site."""

    def load(self) -> Scalar:
        from ..language import state

        return state.current().reducer_load(self)

    def store(self, value) -> None:
        from ..language import state

        state.current().reducer_store(self, value)


class ReducerBuilder:
    """The reducer part of the Builder (see the module's docstring)."""

    # -- T.alloc_reducer ------------------------------------------------------
    def alloc_reducer(self, shape, dtype, op: str, replication) -> Reducer:
        self.require_kernel("T.alloc_reducer")
        if op not in OPS:
            raise self.error(f"T.alloc_reducer: op must be one of {OPS}, got {op!r}",
                             kind=AssertionError, at_definition=True)
        d = dt.as_dtype(dtype)
        if op in _BITWISE and not (d.is_int or d.is_bool):
            raise self.error(f"T.alloc_reducer: bitwise reducer op {op!r} requires an integer "
                             f"dtype, got {d}", kind=AssertionError, at_definition=True)
        if replication is not None and replication not in ("all", "none"):
            raise self.error(f"T.alloc_reducer: replication must be 'all' or 'none', got "
                             f"{replication!r}")
        if replication is not None and op in _BITWISE:
            raise self.error("T.alloc_reducer: the legacy reducer (replication=...) only "
                             "supports sum/max/min", kind=AssertionError, at_definition=True)
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        result = self.alloc(shape, d, "fragment", self.unique_name("reducer"))
        red = Reducer(result, op, legacy=replication is not None)
        if red.legacy:
            self._reducer_open(red, identity(op, d))
        self._reducers.append(red)
        return red

    def _reducer_open(self, red: Reducer, start) -> None:
        """Opens an epoch here: an anchor op for the sites' fragments."""
        from ..dialects import memref
        from ..language.values import to_storage

        ir = _ir()
        red.start = start
        red.sites = {}
        red.init_block = ir.InsertionPoint.current.block
        # The anchor, after which new sites' fragments are made: the store of
        # the start value (which a legacy finalize with no update writes).
        var = self.alloc((), red.dtype, "var", self.unique_name(f"{red.name}_start"))
        red.anchor = memref.StoreOp(to_storage(start, red.dtype), var.value, []).operation
        red.start_var = var

    # -- T.reducer_init ---------------------------------------------------------
    def reducer_init(self, red, init=None) -> None:
        self._require_v2(red, "T.reducer_init")
        if red.state != "allocated" and red.state != "finalized":
            raise self.error(f"double T.reducer_init of reducer {red.name!r} (an epoch is "
                             "open; T.finalize_reducer closes it)")
        if red.state == "finalized":
            raise self.error(f"T.reducer_init of reducer {red.name!r} after its "
                             "T.finalize_reducer: allocate a new reducer for a new epoch")
        seed = None
        if init is not None:
            v = init.load() if isinstance(init, BufferRef) else init
            if isinstance(v, Scalar) and v.dtype != red.dtype:
                raise self.error(f"T.reducer_init: the starting value's dtype {v.dtype} does "
                                 f"not match reducer {red.name!r} dtype {red.dtype}")
            if isinstance(v, IndexExpr) and not v.is_const():
                v = to_scalar(v, red.dtype)
            seed = self.alloc((), red.dtype, "var", self.unique_name(f"{red.name}_seed"))
            seed[()].store(v)
        red.seed = seed
        self._reducer_open(red, identity(red.op, red.dtype))
        red.state = "open"

    # -- T.reducer_update / legacy accesses --------------------------------------
    def reducer_update(self, target, value) -> None:
        if not isinstance(target, ReducerRef):
            raise self.error("T.reducer_update expects `acc[indices]` of a T.alloc_reducer "
                             f"handle as its first argument, got {_describe(target)}")
        red = target.buffer
        self._require_v2(red, "T.reducer_update")
        if red.state == "allocated":
            raise self.error(f"T.reducer_update of reducer {red.name!r} before "
                             "T.reducer_init")
        if red.state == "finalized":
            raise self.error(f"T.reducer_update of reducer {red.name!r} after its "
                             "T.finalize_reducer")
        site, ivs = self._reducer_site(target, "T.reducer_update")
        slot = site.wide[ivs]
        slot.store(combine(red.op, slot.load(), to_scalar(value, red.dtype)))

    def reducer_load(self, ref: ReducerRef):
        red = ref.buffer
        if not red.legacy:
            raise self.error(f"illegal read of reducer {red.name!r}: its partial results "
                             "are read from the destination of T.finalize_reducer")
        if red.state == "finalized" or not self._parallel_stack:
            return BufferRef(red.result, ref.items).load()
        site, ivs = self._reducer_site(ref, "a read of the legacy reducer")
        return site.wide[ivs].load()

    def reducer_store(self, ref: ReducerRef, value) -> None:
        red = ref.buffer
        if not red.legacy:
            raise self.error(f"illegal store to reducer {red.name!r}: contribute with "
                             "T.reducer_update(acc[indices], value)")
        if red.state == "finalized" or not self._parallel_stack:
            BufferRef(red.result, ref.items).store(value)
            return
        site, ivs = self._reducer_site(ref, "a write of the legacy reducer")
        site.wide[ivs].store(value)

    def _reducer_site(self, ref: BufferRef, what: str):
        """The site of `ref` in the innermost T.Parallel loop (made, set to
        the start value at the epoch's anchor, the first time) and the loop
        variables that index its wide fragment."""
        red = ref.buffer
        stack = self._parallel_stack
        if not stack:
            raise self.error(f"{what} of reducer {red.name!r} outside any T.Parallel loop: "
                             "a thread-uniform update has no iteration to count once")
        op, ivs, extents = stack[-1]
        items = ref.items
        if len(items) != red.ndim:
            raise self.error(f"reducer {red.name!r} of rank {red.ndim} indexed with "
                             f"{len(items)} indices")
        pattern, dynamic = [], []
        for n, item in enumerate(items):
            ix = IndexExpr.lift(item)
            if ix is not None and ix.is_const():
                if not 0 <= ix.const < int(red.shape[n]):
                    raise self.error(f"index {ix.const} of reducer {red.name!r} is outside "
                                     f"its extent {red.shape[n]}")
                pattern.append(("const", ix.const))
                continue
            k = next((k for k, iv in enumerate(ivs) if ix is not None and ix.same(iv)), None)
            if k is not None:
                if extents[k] > int(red.shape[n]):
                    raise self.error(f"index {n} of reducer {red.name!r} runs over "
                                     f"{extents[k]} values, past its extent {red.shape[n]}")
                pattern.append(("iv", k))
                continue
            if ix is not None and any(ix.same(iv) for iv in self._all_parallel_ivs()):
                raise self.error(f"not supported by tilelang-mlir: index {n} of reducer "
                                 f"{red.name!r} ({item}) is a variable of an outer T.Parallel "
                                 "loop; update it from the innermost one")
            # A value the iteration does not choose (a serial loop's
            # variable): the wide fragment keeps a dimension for it.
            pattern.append(("dyn", n))
            dynamic.append(to_index(item, f"index {n} of reducer {red.name!r}"))
        key = (op, tuple(pattern))
        site = red.sites.get(key)
        if site is None:
            ir = _ir()
            lead = [int(red.shape[n]) for kind, n in pattern if kind == "dyn"]
            with ir.InsertionPoint.after(red.anchor):
                wide = self.alloc(lead + list(extents), red.dtype, "fragment",
                                  self.unique_name(f"{red.name}_partial"))
                self.fill(wide, red.start_var[()].load() if red.legacy else red.start)
            site = red.sites[key] = Site(wide, tuple(pattern), list(extents))
        return site, tuple(dynamic) + tuple(ivs)

    def _all_parallel_ivs(self):
        return [iv for _, ivs, _ in self._parallel_stack for iv in ivs]

    # -- T.finalize_reducer ------------------------------------------------------
    def finalize_reducer(self, red, dst=None) -> None:
        if not isinstance(red, Reducer):
            raise self.error(f"T.finalize_reducer expects a T.alloc_reducer handle, got "
                             f"{_describe(red)}")
        if red.state == "allocated":
            raise self.error(f"T.finalize_reducer of reducer {red.name!r} before "
                             "T.reducer_init")
        if red.state == "finalized":
            raise self.error(f"T.finalize_reducer of reducer {red.name!r} twice")
        if red.legacy:
            if dst is not None:
                raise self.error("T.finalize_reducer(acc, dst) is the form of reducers "
                                 "opened by T.reducer_init; a legacy reducer "
                                 "(replication=...) finalizes in place")
            dst = red.result
        else:
            if dst is None:
                raise self.error(f"T.finalize_reducer({red.name}) needs a destination "
                                 "fragment: T.finalize_reducer(acc, dst)")
            if not isinstance(dst, Buffer) or isinstance(dst, Reducer) or \
                    dst.scope != "fragment":
                raise self.error("T.finalize_reducer: the destination must be a fragment, got "
                                 f"{_describe(dst)}")
            if tuple(dst.shape) != tuple(red.shape) or dst.dtype != red.dtype:
                raise self.error(f"T.finalize_reducer: the destination {dst.name!r} must have "
                                 f"the reducer's shape {tuple(red.shape)} and dtype "
                                 f"{red.dtype}, got {tuple(dst.shape)} and {dst.dtype}")
        self._check_epoch_scope(red)
        start = red.start_var[()].load() if red.legacy else red.start
        self.fill(dst, start if red.legacy and not red.sites else identity(red.op, red.dtype))
        for site in red.sites.values():
            self._finalize_site(red, site, dst)
        if red.seed is not None:
            seed = red.seed[()].load()
            with self.parallel([int(n) for n in dst.shape]) as ivs:
                ref = dst[ivs]
                ref.store(combine(red.op, ref.load(), seed))
        red.state = "finalized"

    def _finalize_site(self, red: Reducer, site: Site, dst: Buffer) -> None:
        """Reduces the site's wide fragment over the loop dimensions its index
        does not name, then combines the rest into `dst` at the index."""
        named = {k for kind, k in site.pattern if kind == "iv"}
        # The wide fragment's dimensions: ("dyn", n) for each leading one,
        # ("iv", k) for loop dimension k.
        dims = [("dyn", n) for kind, n in site.pattern if kind == "dyn"] + \
            [("iv", k) for k in range(len(site.extents))]
        part = site.wide
        for k in reversed(range(len(site.extents))):
            if k in named:
                continue
            at = dims.index(("iv", k))
            shape = [e for i, e in enumerate(part.shape) if i != at] or [1]
            out = self.alloc(shape, red.dtype, "fragment", self.unique_name(f"{red.name}_sum"))
            self.reduce(red.op, part, out, at, True)
            dims.pop(at)
            part = out
        with self.parallel([int(n) for n in part.shape]) as ivs:
            index = []
            for n, (kind, v) in enumerate(site.pattern):
                if kind == "const":
                    index.append(v)
                else:
                    index.append(ivs[dims.index((kind, v))])
            ref = dst[tuple(index)]
            src = part[tuple(ivs)] if dims else part[0]
            ref.store(combine(red.op, ref.load(), src.load()))

    def _check_epoch_scope(self, red: Reducer) -> None:
        """The finalize is in the init's block, or in conditionals nested in
        it (a loop in between would combine the partials again)."""
        ir = _ir()
        block = ir.InsertionPoint.current.block
        while block != red.init_block:
            owner = block.owner
            if owner is None or owner.name not in ("scf.if",):
                raise self.error(f"T.finalize_reducer of reducer {red.name!r} is not in the "
                                 "scope of its T.reducer_init (the same block, or a "
                                 "conditional in it; not a loop the init is outside of)")
            block = owner.operation.block

    def reducer_fill(self, red: Reducer, value, what: str) -> None:
        """T.clear / T.fill of a reducer: a legacy reducer's epoch opens here
        with that start value. A handle allocated without `replication` that
        no v2 operation has touched yet becomes a legacy reducer here (as
        TileLang's shim treats the v1 syntax on such a handle); after a
        T.reducer_init it refuses."""
        if not red.legacy and red.state == "allocated":
            red.legacy = True
        if not red.legacy:
            raise self.error(f"illegal {what} of reducer {red.name!r}: its epoch opens with "
                             "T.reducer_init(acc[, init])")
        self._reducer_open(red, value)
        red.state = "open"

    def no_reducer(self, x, what: str) -> None:
        """Refuses a v2 reducer handle as a buffer operand of `what`."""
        if isinstance(x, BufferRef):
            x = x.buffer
        if isinstance(x, Reducer) and not x.legacy:
            raise self.error(f"illegal use of reducer {x.name!r} by {what}: a reducer is "
                             "updated with T.reducer_update and read through the destination "
                             "of T.finalize_reducer")

    def _require_v2(self, red, what: str) -> None:
        if not isinstance(red, Reducer):
            raise self.error(f"{what} expects a T.alloc_reducer handle, got {_describe(red)}")
        if red.legacy:
            raise self.error(f"{what}: reducer {red.name!r} is a legacy reducer "
                             "(replication=...): update it with `acc[i] += ...` in a "
                             "T.Parallel loop and finalize it with T.finalize_reducer(acc)")

    def check_reducers_finalized(self) -> None:
        """At the end of a kernel: every opened reducer epoch was closed."""
        for red in self._reducers:
            if not red.legacy and red.state == "open":
                raise self.error(f"reducer {red.name!r} is never finalized: close its epoch "
                                 "with T.finalize_reducer(acc, dst)")
        self._reducers = []
