"""The explicit warp-specialization layer of the builder: thread roles,
user barriers, register budgets and the asynchronous operations a program
that specializes itself orders on its own (issue 20).

A role is a range of the block's threads that runs a region of the program
(`tile.role`). The program writes it as TileLang does: a branch on the
thread index (`tx = T.get_thread_binding()`; `if tx < 128:` /
`elif tx >= 128 and tx < 256:` / `else:`) or `with T.ws(i):` (warpgroup i).
Inside a role, tile operations run on the role's threads.
"""

from __future__ import annotations

import contextlib
from typing import Optional, Tuple

from ..base import dtypes as dt
from ..language.values import (Buffer, BufferRef, IndexExpr, ThreadAtom, _describe,
                               static_int, to_index, to_scalar)


def _ir():
    from .. import ir

    return ir


def _tile():
    from ..dialects import tile

    return tile


def _i64(v: int):
    ir = _ir()
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


class AccessPtr:
    """T.access_ptr(X[i, j], "r"): where a per-thread copy reads or writes
    (only T.ptx_cp_async takes one)."""

    def __init__(self, buffer: Buffer, indices, access_type: str):
        self.buffer, self.indices, self.access_type = buffer, indices, access_type

    def __repr__(self):
        return f"T.access_ptr({self.buffer.name}[...], {self.access_type!r})"


class RoleBuilder:
    """Mixed into the Builder (frontend/builder.py)."""

    role_range: Optional[Tuple[int, int]] = None  # the role being built

    # -- thread index and roles ------------------------------------------------
    def thread_binding(self, dim: int = 0) -> IndexExpr:
        self.require_kernel("T.get_thread_binding")
        dim = static_int(dim, "T.get_thread_binding dimension")
        threads = [int(t) for t in self.kernel_op.threads] + [1, 1]
        if not 0 <= dim < 3:
            raise self.error(f"T.get_thread_binding: dim is 0, 1 or 2, got {dim}")
        if threads[dim] == 1:
            return IndexExpr(0)  # a dimension of extent 1
        value = self.thread_index_value()
        linear = IndexExpr(0, {ThreadAtom(value, "tx"): 1})
        if threads[1] == threads[2] == 1:
            return linear  # a one-dimensional block: comparisons give roles
        # The linear index runs x fastest: x = t % X, y = (t / X) % Y, z = t / (X Y).
        below = 1
        for d in range(dim):
            below *= threads[d]
        index = linear.floordiv(IndexExpr(below)) if below > 1 else linear
        return index.mod(IndexExpr(threads[dim])) if dim < 2 else index

    @contextlib.contextmanager
    def role(self, begin: int, end: int, what: str):
        """Builds a `tile.role` of threads [begin, end); `what` names the
        construct for errors."""
        self.require_kernel(what)
        if self.role_range is not None:
            lo, hi = self.role_range
            raise self.error(f"{what}: roles do not nest (this is inside the role of threads "
                             f"[{lo}, {hi})); inside a role, branch on the thread index with "
                             "scalar code only")
        if not 0 <= begin < end <= self.kernel_threads:
            raise self.error(f"{what}: no thread of the block ({self.kernel_threads} threads) "
                             f"is in [{begin}, {end})")
        op = _tile().role(begin, end)
        self.role_range = (begin, end)
        try:
            with _ir().InsertionPoint.at_block_terminator(op.body.blocks[0]):
                yield
        finally:
            self.role_range = None

    def warpgroup_range(self, ids) -> Tuple[int, int]:
        """T.ws(i, j, ...): the threads of warpgroups i, j, ... (consecutive)."""
        ids = sorted(static_int(i, "T.ws warpgroup") for i in ids)
        if not ids:
            raise self.error("T.ws needs at least one warpgroup index")
        if ids != list(range(ids[0], ids[-1] + 1)):
            raise self.error(f"T.ws{tuple(ids)}: the warpgroups of one role must be consecutive")
        return 128 * ids[0], 128 * (ids[-1] + 1)

    # -- barriers ----------------------------------------------------------------
    def alloc_barrier(self, arrive_count) -> Buffer:
        self.require_kernel("T.alloc_barrier")
        counts = list(arrive_count) if isinstance(arrive_count, (list, tuple)) else [arrive_count]
        counts = [static_int(c, "T.alloc_barrier arrive_count") for c in counts]
        if not counts:
            raise self.error("T.alloc_barrier needs at least one arrive count")
        for c in counts:
            if not 1 <= c < 2 ** 20:
                raise self.error(f"T.alloc_barrier: arrive counts must be in [1, 2^20), got {c}")
        ir, tile = _ir(), _tile()
        ty = tile.buffer_type([len(counts)], ir.IntegerType.get_signless(64), "shared")
        value = tile.AllocBarrierOp(ty, ir.DenseI64ArrayAttr.get(counts)).result
        return Buffer(value, [len(counts)], dt.int64, "barrier", self.unique_name("barrier"))

    def _barrier(self, bar, what: str):
        """(buffer value, index value) of `bar` (a barrier array: its first
        barrier) or `bar[i]`."""
        if isinstance(bar, Buffer) and bar.scope == "barrier":
            return bar.value, IndexExpr(0).materialize()
        if isinstance(bar, BufferRef) and bar.buffer.scope == "barrier":
            if len(bar.items) != 1 or isinstance(bar.items[0], slice):
                raise self.error(f"{what}: index a barrier array with one index, got {bar!r}")
            return bar.buffer.value, to_index(bar.items[0], f"{what} barrier index").materialize()
        raise self.error(f"{what} takes a barrier from T.alloc_barrier (or one element of it), "
                         f"got {_describe(bar)}")

    def barrier_arrive(self, bar, what: str = "T.barrier_arrive",
                       after_copies: bool = False) -> None:
        """Every executing thread arrives once; with `after_copies`, when its
        earlier T.ptx_cp_async copies have landed (T.cp_async_barrier_noinc)."""
        self.require_kernel(what)
        buf, idx = self._barrier(bar, what)
        extra = {"after_copies": True} if after_copies else {}
        _tile().BarrierArriveOp(buf, idx, per_thread=True, **extra)

    def barrier_arrive_expect_tx(self, bar, tx, what: str) -> None:
        """Every executing thread arrives once and announces `tx` bytes."""
        self.require_kernel(what)
        buf, idx = self._barrier(bar, what)
        n = static_int(tx, f"{what} byte count")
        if not 0 <= n < 2 ** 20:
            raise self.error(f"{what}: the byte count must be in [0, 2^20), got {n}")
        _tile().BarrierArriveOp(buf, idx, expect_tx=_i64(n), per_thread=True)

    def barrier_wait(self, bar, parity, what: str = "T.barrier_wait") -> None:
        self.require_kernel(what)
        buf, idx = self._barrier(bar, what)
        p = to_index(parity, f"{what} parity")
        if p.is_const() and p.const not in (0, 1):
            raise self.error(f"{what}: the parity is 0 or 1, got {p.const}")
        _tile().BarrierWaitOp(buf, idx, p.materialize())

    def named_barrier(self, barrier_id, arrive_count, arrive: bool = False) -> None:
        """`bar.sync id, count` (`bar.arrive` with `arrive`): a barrier with
        both known at compile time (id 1 to 15) is a tile.named_barrier,
        which roles' barriers avoid; others are tile.partial_barrier."""
        what = "T.named_barrier_arrive" if arrive else "T.sync_threads"
        self.require_kernel(what)
        known = [IndexExpr.lift(x) for x in (barrier_id, arrive_count)]
        if not arrive and all(k is not None and k.is_const() for k in known) and \
                known[0].const != 0:
            _tile().NamedBarrierOp(_i64(known[0].const), _i64(known[1].const))
            return
        id_ = self._i32(barrier_id, f"{what} barrier id")
        count = None if arrive_count is None else self._i32(arrive_count, f"{what} thread count")
        _tile().PartialBarrierOp(id_.value, threads=count.value if count is not None else None,
                                 arrive=arrive or None)

    def block_barrier(self) -> None:
        """A barrier over the block, or over the role it is in."""
        self.require_kernel("T.sync_threads")
        _tile().BarrierOp()

    # -- registers and fences ------------------------------------------------------
    def set_max_nreg(self, count, increase: bool) -> None:
        self.require_kernel("T.set_max_nreg")
        if self.role_range is None:
            raise self.error("T.set_max_nreg sets the register budget of a role: call it inside "
                             "`if tx < ...:` or `with T.ws(...)`")
        _tile().SetMaxNRegOp(_i64(static_int(count, "T.set_max_nreg count")),
                             increase=bool(increase))

    def fence_proxy_async(self) -> None:
        self.require_kernel("T.fence_proxy_async")
        _tile().FenceProxyAsyncOp()

    # -- per-thread asynchronous copies ----------------------------------------------
    def cp_async(self, dst, src, num_elems, predicate=None) -> None:
        """T.ptx_cp_async(T.access_ptr(shared[...], "w"), T.access_ptr(global[...],
        "r"), n): the executing thread copies n consecutive elements (4, 8 or
        16 bytes) asynchronously (tile.cp_async)."""
        self.require_kernel("T.ptx_cp_async")
        for ptr, side in ((dst, "destination"), (src, "source")):
            if not isinstance(ptr, AccessPtr):
                raise self.error(f"T.ptx_cp_async: the {side} must be a T.access_ptr(...), got "
                                 f"{_describe(ptr)}")
        if dst.buffer.scope != "shared" or src.buffer.scope != "global":
            raise self.error("T.ptx_cp_async only supports global->shared/shared.dyn copies, "
                             f"got {src.buffer.scope} {src.buffer.name!r} to {dst.buffer.scope} "
                             f"{dst.buffer.name!r}")
        n = static_int(num_elems, "T.ptx_cp_async element count")
        if dst.buffer.dtype != src.buffer.dtype:
            raise self.error(f"T.ptx_cp_async copies bits: {src.buffer.name!r} holds "
                             f"{src.buffer.dtype} but {dst.buffer.name!r} {dst.buffer.dtype}")
        if n * dst.buffer.dtype.bits not in (32, 64, 128):
            raise self.error(f"T.ptx_cp_async copies 4, 8 or 16 bytes, got {n} elements of "
                             f"{dst.buffer.dtype}")
        for ptr in (dst, src):
            last = ptr.buffer.shape[-1]
            if isinstance(last, int) and last % n:
                raise self.error(f"T.ptx_cp_async: rows of {ptr.buffer.name!r} ({last} elements) "
                                 f"are not whole groups of {n}")
            if ptr.indices[-1].is_const() and ptr.indices[-1].const % n:
                raise self.error(f"T.ptx_cp_async: the copy at column {ptr.indices[-1].const} of "
                                 f"{ptr.buffer.name!r} is not aligned to its {n} elements")
        # predicate: where false, the thread's elements are zeros (TileLang's
        # conditional cp.async)
        pred = {} if predicate is None else {
            "predicate": to_scalar(predicate, dt.boolean).value}
        _tile().CpAsyncOp(src.buffer.value, [i.materialize() for i in src.indices],
                          dst.buffer.value, [i.materialize() for i in dst.indices], _i64(n),
                          **pred)

    def async_commit(self) -> None:
        self.require_kernel("T.ptx_commit_group")
        _tile().AsyncCommitOp()

    def async_wait(self, pending) -> None:
        self.require_kernel("T.ptx_wait_group")
        n = static_int(pending, "T.ptx_wait_group count")
        if n < 0:
            raise self.error(f"T.ptx_wait_group: the count must be non-negative, got {n}")
        _tile().AsyncWaitOp(_i64(n))

    def access_ptr(self, ref, access_type="r", *extents, offset=0, extent=None,
                   ignore_last_ndim=0) -> "AccessPtr":
        """The address of element `ref` (`X[i, j]`; a whole buffer: its
        first element) plus `offset` elements (row-major)."""
        self.require_kernel("T.access_ptr")
        if isinstance(ref, Buffer):
            ref = BufferRef(ref, (0,) * ref.ndim)
        if not isinstance(ref, BufferRef):
            raise self.error("T.access_ptr takes a buffer or one element of it (`X[i, j]`), "
                             f"got {_describe(ref)}")
        masks = {1: "r", 2: "w", 3: "rw"}
        access_type = masks.get(access_type, access_type)
        if access_type not in ("r", "w", "rw"):
            raise self.error(f"T.access_ptr: access_type is 'r', 'w' or 'rw' (or the mask 1, "
                             f"2, 3), got {access_type!r}")
        if ignore_last_ndim:
            raise self.error("not supported by tilelang-mlir: T.access_ptr(..., "
                             "ignore_last_ndim=...)")
        indices = list(ref._point_indices("T.access_ptr of"))
        if not (isinstance(offset, int) and offset == 0):
            if not indices:
                raise self.error("T.access_ptr(..., offset=...) of a scalar buffer")
            indices[-1] = to_index(indices[-1], "T.access_ptr index").add(
                to_index(offset, "T.access_ptr offset"))
        return AccessPtr(ref.buffer, indices, access_type)

    # -- TMA -------------------------------------------------------------------------
    def tma_copy(self, src, dst, barrier, cluster_mask=None) -> None:
        """A TMA load from a global tensor into a shared buffer, completing
        on `barrier`; the issuing thread announces its bytes there. From a
        shared buffer to a global tensor (TileLang's TMA store, which
        completes through T.tma_store_wait), the copy of T.copy: it has read
        the shared buffer before the next operation runs."""
        self.require_kernel("T.tma_copy")

        def scope(x):
            return x.buffer.scope if isinstance(x, BufferRef) else getattr(x, "scope", None)

        if scope(src) == "shared" and scope(dst) == "global":
            if barrier is not None:
                raise self.error("T.tma_copy from shared to global memory (a TMA store) "
                                 "takes no barrier=: it completes through T.tma_store_wait")
            self.copy(src, dst, what="T.tma_copy")
            return
        if barrier is None:
            raise self.error("T.tma_copy from global to shared memory needs barrier=: the "
                             "barrier on which the copy completes")
        bar, idx = self._barrier(barrier, "T.tma_copy")
        attrs = None
        if cluster_mask is not None:
            # A multicast: the lowest rank of the mask loads the tile into
            # the same place of every block of the mask, completing on the
            # same barrier of each; every block announces the whole tile's
            # bytes (the blocks outside the mask load their own).
            mask = static_int(cluster_mask, "T.tma_copy cluster_mask")
            blocks = self._cluster_blocks("T.tma_copy(..., cluster_mask=...)")
            if mask < 0 or mask >> blocks:
                raise self.error(f"T.tma_copy: cluster_mask {cluster_mask!r} must be a bit "
                                 f"mask of the {blocks} block ranks of a cluster")
            if mask:
                ir = _ir()
                attrs = {"multicast_mask": ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(64), mask)}
        self.copy(src, dst, via=(bar, idx), what="T.tma_copy", tma_attrs=attrs)
