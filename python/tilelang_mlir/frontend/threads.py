"""The per-thread layer of the builder: lanes and warps, warp shuffles,
votes and reductions, block votes, election and atomics of every kind
(the ops of TileThreadOps.td).

TileLang programs write this code in the SIMT style: scalar code outside
`T.Parallel` runs in every thread of the block, `tx = T.get_thread_binding()`
tells the threads apart, and `B[tx] = T.shfl_xor(v, 1)` is each thread's
own store. The GPU lowerings find which values differ between threads
(ThreadVariance) and let each thread make its own stores and atomics.
"""

from __future__ import annotations

from typing import Optional

from ..base import dtypes as dt
from ..base.dtypes import DType
from ..language.values import (Buffer, BufferRef, IndexExpr, Scalar, Vector, _describe, binary,
                               from_storage, ir_type, static_int, storage_ir_type, to_index,
                               to_scalar, to_storage)

FULL_MASK = 0xFFFFFFFF
MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")


def _tile():
    from ..dialects import tile

    return tile


def _ir():
    from .. import ir

    return ir


class ThreadBuilder:
    """Mixed into the Builder (frontend/builder.py)."""

    # -- values ------------------------------------------------------------------
    def _value(self, x, what: str, dtype: Optional[DType] = None) -> Scalar:
        """A scalar operand (a load of `X[i]`, a number, an expression)."""
        if isinstance(x, Buffer) and x.ndim != 0:
            raise self.error(f"{what} takes a scalar value, got {_describe(x)}")
        try:
            s = to_scalar(x, dtype)
        except Exception as e:  # noqa: BLE001 (a TileLangError naming the value)
            raise self.error(f"{what}: {e}") from None
        if s.dtype.kind == "index":
            s = to_scalar(s, dt.int64 if dtype is None else dtype)
        return s

    def _i32(self, x, what: str) -> Scalar:
        """An i32 operand; a Python mask such as 0xFFFFFFFF keeps its bits."""
        if isinstance(x, bool) or (isinstance(x, float) and not x.is_integer()):
            raise self.error(f"{what} must be an integer, got {x!r}")
        if isinstance(x, (int, float)):
            x = int(x) & 0xFFFFFFFF
            x = x - (1 << 32) if x >= 1 << 31 else x
            return to_scalar(x, dt.int32)
        s = self._value(x, what)
        if s.dtype.is_float:
            raise self.error(f"{what} must be an integer, got a {s.dtype} value")
        return to_scalar(s, dt.int32)

    def _predicate(self, x, what: str):
        """The i1 of a predicate: an integer or a bool, true when non-zero."""
        if isinstance(x, float):
            raise self.error(f"{what} requires an integer or boolean predicate, got the "
                             f"float {x!r}", kind=TypeError)
        s = self._value(x, what)
        if s.dtype.is_float:
            raise self.error(f"{what} requires an integer or boolean predicate, got a "
                             f"{s.dtype} value", kind=TypeError)
        return to_scalar(s, dt.boolean).value

    @staticmethod
    def _shuffled(s: Scalar, what: str, error) -> Scalar:
        """Values of 8 to 64 bits move as they are (bools as a byte)."""
        if s.dtype.is_bool:
            return to_scalar(s, dt.uint8)
        if s.dtype.bits not in (8, 16, 32, 64):
            raise error(f"{what} moves values of 8, 16, 32 or 64 bits, got {s.dtype}")
        return s

    # -- lanes and warps ---------------------------------------------------------
    _thread_index = None

    def thread_index_value(self):
        """The kernel's one tile.thread_id, at the start of its body (so that
        every use sees the same value: T.tvm_thread_allreduce recognizes the
        thread index it reduces over)."""
        if self._thread_index is None:
            ir = _ir()
            with ir.InsertionPoint.at_block_begin(self.kernel_op.body.blocks[0]):
                self._thread_index = _tile().ThreadIdOp(ir.IndexType.get()).result
        return self._thread_index

    def linear_thread_index(self, what: str) -> IndexExpr:
        """The thread's index in the block (x fastest), as TileLang's
        helpers compute it from threadIdx."""
        self.require_kernel(what)
        return IndexExpr.of(self.thread_index_value(), "tid")

    # -- TVM's thread all-reduce ---------------------------------------------------
    reducer = None  # the T.comm_reducer of the enclosing T.attr(..., "reduce_scope", ...)

    def thread_allreduce(self, reducer, values, cond, dests, reduce_vars) -> None:
        """T.tvm_thread_allreduce under `T.attr(T.comm_reducer(f, [id]),
        "reduce_scope", ...)`: every thread gets `f` over the values of the
        threads that differ from it only along the reduce variables (thread
        indices of the block), into `dests`. Within a warp: xor shuffles;
        across warps: through shared memory."""
        what = "T.tvm_thread_allreduce"
        self.require_kernel(what)
        if len(values) != 1 or len(dests) != 1:
            raise self.error(f"{what} of {len(values)} values: tilelang-mlir reduces one value")
        if cond is not True and not (isinstance(cond, int) and cond == 1):
            raise self.error(f"{what}: the condition must be True (every thread takes part)")
        threads = list(self.kernel_op.threads)
        dims = []
        for var in reduce_vars:
            d = next((d for d in range(len(threads))
                      if isinstance(var, IndexExpr) and var.same(self.thread_binding(d))), None)
            if d is None:
                raise self.error(f"{what}: the reduce variable {var!r} must be a thread index "
                                 "(T.get_thread_binding(d))")
            dims.append(d)
        if not dims or sorted(dims) != list(range(min(dims), max(dims) + 1)):
            raise self.error(f"{what}: the reduce variables must be distinct, consecutive "
                             "thread dimensions")
        stride = 1
        for t in threads[:min(dims)]:
            stride *= t
        extent = 1
        for d in dims:
            extent *= threads[d]
        if extent & (extent - 1) or stride & (stride - 1):
            raise self.error(f"{what}: reducing over {extent} threads (stride {stride}): "
                             "tilelang-mlir reduces over a power of two of threads")
        dest = dests[0]
        if not isinstance(dest, BufferRef):
            raise self.error(f"{what}: the destination must be a buffer element (`R[0]`), got "
                             f"{_describe(dest)}")
        v = self._value(values[0], f"{what} value")
        dtype = v.dtype
        combine = reducer.combine
        if stride * extent <= 32:
            step = extent // 2
            while step:
                other = self.shuffle("Xor", v, step * stride, 32, FULL_MASK, what)
                v = to_scalar(combine(v, other), dtype)
                step //= 2
        else:
            v = self._allreduce_shared(v, combine, stride, extent, what)
        dest.store(v)

    def _allreduce_shared(self, v: Scalar, combine, stride: int, extent: int, what: str):
        """Across warps: every thread writes its value into a shared buffer,
        then combines those of its group in order."""
        total = 1
        for t in self.kernel_op.threads:
            total *= t
        buf = self.alloc((total,), v.dtype, "shared", self.unique_name("allreduce"))
        tid = self.linear_thread_index(what)
        BufferRef(buf, (tid,)).store(v)
        self.block_barrier()
        # the group's first thread: tid with the reduce digits cleared
        base = tid.add(tid.floordiv(IndexExpr(stride)).mod(IndexExpr(extent)).scale(stride), -1)
        acc = BufferRef(buf, (base,)).load()
        for k in range(1, extent):
            acc = to_scalar(combine(acc, BufferRef(buf, (base.add(IndexExpr(k * stride)),)).load()),
                            v.dtype)
        self.block_barrier()
        return acc

    def warp_size(self, warp_size, what: str) -> IndexExpr:
        """`warp_size`, or the target's (tile.warp_size) when None or 0."""
        if warp_size is None or (isinstance(warp_size, int) and warp_size == 0):
            return IndexExpr.of(_tile().WarpSizeOp(_ir().IndexType.get()).result, "warp_size")
        w = to_index(warp_size, f"{what} warp_size")
        if w.is_const() and w.const <= 0:
            raise self.error(f"{what}: warp_size must be positive, got {w.const}")
        return w

    def shuffle(self, kind: str, value, offset, width, mask, what: str) -> Scalar:
        self.require_kernel(what)
        original = self._value(value, f"{what} value")
        v = self._shuffled(original, what, self.error)
        w = self._i32(width, f"{what} width")
        if isinstance(width, int) and (width < 1 or width > 32 or width & (width - 1)):
            raise self.error(f"{what}: width must be a power of two in [1, 32], got {width}")
        tile = _tile()
        op = tile.ShuffleOp(ir_type(v.dtype), getattr(tile.ShuffleKind, kind), v.value,
                            self._i32(offset, f"{what} lane").value, w.value,
                            self._i32(mask, f"{what} mask").value)
        result = Scalar(op.result, v.dtype)
        return to_scalar(result, original.dtype) if original.dtype != v.dtype else result

    def warp_vote(self, kind: str, pred, mask, what: str) -> Scalar:
        self.require_kernel(what)
        p = self._predicate(pred, what)
        ir, tile = _ir(), _tile()
        bits = 64 if kind == "ballot" else 32
        op = tile.WarpVoteOp(ir.IntegerType.get_signless(bits), getattr(tile.VoteKind, kind), p,
                             self._i32(mask, f"{what} mask").value)
        return Scalar(op.result, dt.uint64 if kind == "ballot" else dt.int32)

    def active_mask(self) -> Scalar:
        self.require_kernel("T.activemask")
        return Scalar(_tile().ActiveMaskOp(_ir().IntegerType.get_signless(64)).result, dt.uint64)

    def warp_match(self, kind: str, value, mask, what: str) -> Scalar:
        self.require_kernel(what)
        v = self._value(value, f"{what} value")
        if v.dtype.bits not in (32, 64) or v.dtype.is_bool:
            raise self.error(f"{what} compares values of 32 or 64 bits, got {v.dtype}")
        tile = _tile()
        op = tile.WarpMatchOp(_ir().IntegerType.get_signless(32), getattr(tile.MatchKind, kind),
                              v.value,
                              self._i32(mask, f"{what} mask").value)
        return Scalar(op.result, dt.uint32)

    def warp_reduce(self, kind: str, value, what: str) -> Scalar:
        self.require_kernel(what)
        v = self._value(value, f"{what} value")
        if kind.startswith("bit") and not v.dtype.is_int:
            raise self.error(f"{what} needs an integer value, got {v.dtype}")
        if v.dtype.is_bool or v.dtype.bits not in (8, 16, 32, 64):
            raise self.error(f"{what} reduces values of 8, 16, 32 or 64 bits, got {v.dtype}")
        tile = _tile()
        names = {"bitand": "BitAnd", "bitor": "BitOr", "bitxor": "BitXor"}
        op = tile.WarpReduceOp(ir_type(v.dtype),
                               getattr(tile.WarpReduceKind, names.get(kind, kind)), v.value,
                               is_unsigned=v.dtype.is_unsigned or None)
        return Scalar(op.result, v.dtype)

    def thread_return(self) -> None:
        self.require_kernel("T.thread_return")
        _tile().ThreadReturnOp()

    def sync_warp(self, mask) -> None:
        self.require_kernel("T.sync_warp")
        _tile().SyncWarpOp(self._i32(FULL_MASK if mask is None else mask,
                                     "T.sync_warp mask").value)

    def block_vote(self, kind: str, pred, what: str) -> Scalar:
        self.require_kernel(what)
        if self.role_range is not None:
            raise self.error(f"{what} is a barrier of the whole block; it cannot run in the "
                             f"role of threads [{self.role_range[0]}, {self.role_range[1]})")
        tile = _tile()
        names = {"and": "And", "or": "Or"}
        op = tile.BlockVoteOp(_ir().IntegerType.get_signless(32),
                              getattr(tile.BlockVoteKind, names.get(kind, kind)),
                              self._predicate(pred, what))
        return Scalar(op.result, dt.int32)

    def elect(self, extent) -> Scalar:
        self.require_kernel("T.shuffle_elect")
        n = self.static_nonnegative(extent, "T.shuffle_elect thread_extent")
        ir = _ir()
        op = _tile().ElectOp(ir.IntegerType.get_signless(1),
                             ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n))
        return Scalar(op.result, dt.boolean)

    def static_nonnegative(self, x, what: str) -> int:
        n = static_int(x, what)
        if n < 0:
            raise self.error(f"{what} must be non-negative, got {n}")
        return n

    # -- thread block clusters ---------------------------------------------------
    def set_cluster(self, dims, grid) -> None:
        """The kernel runs in clusters of `dims` blocks ([x, y, z])."""
        dims = [static_int(d, "cluster_dims") for d in dims]
        if any(d < 1 for d in dims):
            raise self.error(f"cluster_dims must be positive, got {dims}")
        size = dims[0] * dims[1] * dims[2]
        if size > 8:
            raise self.error(f"a cluster of {dims} has {size} blocks; clusters hold at most 8 "
                             "(the portable size)")
        for d, (c, g) in enumerate(zip(dims, list(grid) + [1, 1])):
            e = IndexExpr.lift(g) if not isinstance(g, int) else IndexExpr(g)
            if e is not None and e.is_const() and e.const % c:
                raise self.error(f"the grid's dimension {d} ({e.const} blocks) is not a "
                                 f"multiple of the cluster's ({c})")
        self.kernel_op.operation.attributes["tile.cluster"] = \
            _ir().DenseI64ArrayAttr.get(dims)

    def cluster_barrier(self, step: str, what: str) -> None:
        self.require_kernel(what)
        if "tile.cluster" not in self.kernel_op.operation.attributes:
            raise self.error(f"{what} synchronizes the blocks of a cluster, but the kernel runs "
                             "without clusters: T.Kernel(..., cluster_dims=...) or "
                             "T.ClusterKernel")
        if self.role_range is not None:
            raise self.error(f"{what} is a barrier of the cluster's blocks; it cannot run in the "
                             f"role of threads [{self.role_range[0]}, {self.role_range[1]})")
        _tile().ClusterBarrierOp(getattr(_tile().ClusterStep, step))

    def cluster_rank(self) -> Scalar:
        self.require_kernel("T.block_rank_in_cluster")
        return Scalar(_tile().ClusterRankOp(_ir().IntegerType.get_signless(32)).result, dt.int32)

    def arrive_on_rank(self, bar, rank, what: str) -> None:
        self.require_kernel(what)
        buf, idx = self._barrier(bar, what)
        _tile().BarrierArriveRankOp(buf, idx, self._i32(rank, f"{what} cta_id").value)

    # -- copies between the blocks of a cluster (T.copy_cluster) ----------------
    def _cluster_blocks(self, what: str) -> int:
        """The blocks of the kernel's clusters; an error without clusters."""
        attr = self.kernel_op.operation.attributes
        if "tile.cluster" not in attr:
            raise self.error(f"{what} copies between the blocks of a thread block cluster, but "
                             "the kernel runs without clusters: T.Kernel(..., cluster_dims=...) "
                             "or T.ClusterKernel")
        n = 1
        for d in _ir().DenseI64ArrayAttr(attr["tile.cluster"]):
            n *= d
        return n

    def copy_cluster(self, src, dst, dst_block=None, cluster_mask=None, barrier=None,
                     eviction: Optional[str] = None, coalesced_width=None,
                     loop_layout=None) -> None:
        """T.copy_cluster: with `dst_block`, `src` (a shared region) into the
        same region of `dst` in block `dst_block` of the cluster (through
        `barrier` of that block when given); with `cluster_mask`, a global
        region into a whole shared buffer by TMA multicast to the blocks of
        the mask (see tile.copy's multicast_mask); with neither, T.copy."""
        what = "T.copy_cluster"
        self.require_kernel(what)
        if dst_block is not None and cluster_mask is not None:
            raise self.error(f"{what} takes dst_block= (a copy into another block's shared "
                             "memory) or cluster_mask= (a TMA multicast), not both")
        if cluster_mask is not None:
            mask = static_int(cluster_mask, f"{what} cluster_mask")
            if mask < 0:
                raise self.error(f"{what}: cluster_mask must be a non-negative bit mask of "
                                 f"block ranks, got {mask}")
            for name, value in (("loop_layout", loop_layout),
                                ("coalesced_width", coalesced_width),
                                ("remote_barrier", barrier)):
                if value is not None:
                    raise self.error(
                        f"{what}(..., cluster_mask=..., {name}=...): {name} is the "
                        "dst_block copy's (its element-wise loop or its barrier in the other "
                        "block); a multicast is one TMA load that completes on a barrier of "
                        "its own")
            if mask == 0:  # TileLang: no block multicasts; a plain copy
                self.copy(src, dst, what=what)
                return
            self._multicast_copy(src, dst, mask, eviction, what)
            return
        if eviction is not None:
            raise self.error(f"{what}(..., eviction_policy=...): the eviction priority is the "
                             "TMA multicast's (cluster_mask=...); a copy between shared "
                             "buffers (dst_block=...) does not go through L2")
        if dst_block is None:
            if barrier is not None:
                raise self.error(f"{what}(..., remote_barrier=...) needs dst_block=: the "
                                 "block whose barrier the copy completes on")
            self.copy(src, dst, what=what)  # TileLang: neither is a plain copy
            return
        if coalesced_width is not None:
            w = static_int(coalesced_width, f"{what} coalesced_width")
            if w <= 0:
                raise self.error(f"{what}: coalesced_width must be a positive number of "
                                 f"elements, got {w}")
        self._remote_copy(src, dst, dst_block, barrier, what)

    def _multicast_copy(self, src, dst, mask: int, eviction, what: str) -> None:
        """One TMA load, multicast to the blocks of `mask` (tile.copy's
        multicast_mask): every block's first thread announces the bytes it
        receives on a barrier of the copy's own, its warps arrive, and its
        threads wait for the phase (the parity alternates from one run of
        the copy to the next)."""
        blocks = self._cluster_blocks(what)
        if mask >> blocks:
            raise self.error(f"{what}: cluster_mask {mask:#x} names block ranks beyond the "
                             f"{blocks} blocks of a cluster")
        if self.role_range is not None:
            threads = self.role_range[1] - self.role_range[0]
        else:
            threads = 1
            for t in self.kernel_op.threads:
                threads *= t
        dbuf = dst.buffer if isinstance(dst, BufferRef) else dst
        if isinstance(dst, BufferRef):
            offsets, extents = dst.offsets_extents()
            whole = all(o.is_const() and o.const == 0 for o in offsets) and \
                all(e is None or e == n for e, n in zip(extents, dbuf.shape))
        else:
            whole = isinstance(dst, Buffer)
        if not whole or dbuf.scope != "shared":
            raise self.error(f"{what}(..., cluster_mask=...) multicasts a TMA load into a "
                             f"whole shared buffer, got {_describe(dst)}")
        if isinstance(dst, BufferRef):
            dst = dbuf
        if any(n > 256 for n in dbuf.shape[:-1]):
            raise self.error(f"{what}(..., cluster_mask=...) is one TMA load, whose box has at "
                             f"most 256 elements along each dimension; {dbuf.name!r} has shape "
                             f"{tuple(dbuf.shape)}")
        tile, ir = _tile(), _ir()
        first = self.kernel_op.body.blocks[0].operations[0]
        with ir.InsertionPoint(first):
            bar = self.alloc_barrier([(threads + 31) // 32])
            phase = self.alloc((), dt.int32, "var", self.unique_name("cluster_phase"))
            BufferRef(phase, ()).store(to_scalar(0, dt.int32))
        idx = IndexExpr(0).materialize()
        attrs = {"multicast_mask": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), mask)}
        if eviction not in (None, "evict_normal"):
            attrs["eviction"] = getattr(tile.Eviction, eviction)
        self.copy(src, dst, via=(bar.value, idx), what=what, tma_attrs=attrs)
        tile.BarrierArriveOp(bar.value, idx)  # one arrival per warp
        p = BufferRef(phase, ()).load()
        tile.BarrierWaitOp(bar.value, idx, to_index(p, f"{what} parity").materialize())
        BufferRef(phase, ()).store(binary("^", p, to_scalar(1, dt.int32)))

    def _remote_copy(self, src, dst, rank, barrier, what: str) -> None:
        """tile.cluster_copy of two shared regions of one shape."""
        blocks = self._cluster_blocks(what)
        sbuf, soff, sext = self._region(src, f"{what} source")
        dbuf, doff, dext = self._region(dst, f"{what} destination")
        for side, buf in (("source", sbuf), ("destination", dbuf)):
            if buf.scope != "shared":
                raise self.error(f"{what}(..., dst_block=...) copies between shared buffers; "
                                 f"the {side} {buf.name!r} is {buf.scope}")
            if buf.remap is not None or buf.pack > 1 or buf.bitview is not None:
                raise self.error(f"{what}: the {side} {buf.name!r} is a view or holds packed "
                                 "elements; copy between shared buffers of whole elements")
        if sbuf.dtype != dbuf.dtype:
            raise self.error(f"{what}(..., dst_block=...) copies elements as they are: "
                             f"{sbuf.name!r} holds {sbuf.dtype} but {dbuf.name!r} {dbuf.dtype}")
        sext, dext = self._point_extents(sext), self._point_extents(dext)
        if None in sext and None in dext:
            raise self.error(f"{what} needs the extent of at least one side: pass a whole "
                             "buffer or slices, not two element positions")
        s_full, d_full = self._full_extents(sext, dext)
        if s_full is None or d_full is None:
            raise self.error(f"{what} cannot match the region of {sbuf.name!r} with the region "
                             f"of {dbuf.name!r}")
        why = self._region_mismatch(s_full, list(sbuf.shape), d_full, list(dbuf.shape))
        if why is not None:
            raise self.error(f"{what}: the region of {sbuf.name!r} has shape {tuple(s_full)} "
                             f"but the region of {dbuf.name!r} has shape {tuple(d_full)} ({why})")
        r = IndexExpr.lift(rank)
        if r is not None and r.is_const() and not 0 <= r.const < blocks:
            raise self.error(f"{what}: dst_block {r.const} is not a block of the cluster (ranks "
                             f"0 to {blocks - 1})")
        kwargs = {}
        if barrier is not None:
            kwargs["barrier"], kwargs["barrier_index"] = self._barrier(
                barrier, f"{what} remote_barrier")
        ir = _ir()
        _tile().ClusterCopyOp(sbuf.value, [o.materialize() for o in soff],
                              dbuf.value, [o.materialize() for o in doff],
                              self._i32(rank, f"{what} dst_block").value,
                              ir.DenseI64ArrayAttr.get(s_full),
                              ir.DenseI64ArrayAttr.get(d_full), **kwargs)

    # -- tensors from addresses -------------------------------------------------
    def make_tensor(self, ptr, shape, dtype, strides, elem_offset, scope) -> Buffer:
        what = "T.make_tensor"
        if scope != "global":
            raise self.error(f"{what} makes global tensors, got scope={scope!r}")
        if elem_offset is not None and not (isinstance(elem_offset, int) and elem_offset == 0):
            raise self.error(f"not supported by tilelang-mlir: {what}(..., elem_offset=...); "
                             "offset the address or index the tensor instead")
        try:
            dtype = dt.as_dtype(dtype)
        except TypeError as e:
            raise self.error(f"{what}: {e}") from None
        if isinstance(shape, (int, IndexExpr, Scalar)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            raise self.error(f"{what}: shape must be a tuple of sizes, got {_describe(shape)}")
        dims = [to_index(d, f"{what}: dimension {i} of the shape") for i, d in enumerate(shape)]
        for i, d in enumerate(dims):
            if d.is_const() and d.const <= 0:
                raise self.error(f"{what}: dimension {i} must be positive, got {d.const}")
        if strides is not None:
            expect, row = [], IndexExpr(1)
            for d in reversed(dims):
                expect.insert(0, row)
                row = row.mul(d)
            got = [to_index(s, f"{what} stride") for s in strides]
            if len(got) != len(dims) or not all(g.same(e) for g, e in zip(got, expect)):
                raise self.error(f"not supported by tilelang-mlir: {what} with strides "
                                 f"{list(strides)}; tensors at addresses are row-major "
                                 "(contiguous)")
        address = self._value(ptr, f"{what} address")
        if address.dtype.is_float or address.dtype.bits != 64:
            raise self.error(f"{what} takes a 64-bit device address (a T.ptr), got a "
                             f"{address.dtype} value")
        ir = _ir()
        dynamic = ir.ShapedType.get_dynamic_size()
        static = [d.const if d.is_const() else dynamic for d in dims]
        sizes = [d.materialize() for d in dims if not d.is_const()]
        ty = _tile().buffer_type(static, storage_ir_type(dtype))
        value = _tile().MakeTensorOp(ty, to_scalar(address, dt.int64).value, sizes).result
        return Buffer(value, [d.const if d.is_const() else d for d in dims], dtype, "global",
                      self.unique_name("tensor"))

    def address_of(self, ref) -> Scalar:
        """The 64-bit device address of one element of a global tensor:
        the aligned base of its memref plus (offset + index . strides)
        elements."""
        what = "T.address_of"
        if isinstance(ref, Buffer):
            ref = BufferRef(ref, (0,) * ref.ndim)
        if not isinstance(ref, BufferRef):
            raise self.error(f"{what} takes one element of a tensor (`A[i, j]`), got "
                             f"{_describe(ref)}")
        buf = ref.buffer
        if buf.scope != "global":
            raise self.error(f"not supported by tilelang-mlir: {what} of {buf.scope} buffer "
                             f"{buf.name!r}; addresses are of global tensors (for T.make_tensor"
                             "); a per-thread copy takes T.access_ptr")
        if buf.dtype.bits % 8:
            raise self.error(f"not supported by tilelang-mlir: {what} of {buf.dtype} tensor "
                             f"{buf.name!r}, whose elements are not stored as whole bytes "
                             "each")
        from ..dialects import memref

        idx = buf.stored_index(ref._point_indices(f"{what} of"))
        nbytes = buf.dtype.bits // 8
        made = buf.value.owner
        made = getattr(made, "operation", made)
        if getattr(made, "name", None) == "tile.make_tensor":
            # A tensor at an address (row-major): that address plus the
            # row-major offset (its memref is no real one on the GPU).
            elems, row = IndexExpr(0), IndexExpr(1)
            for i, d in reversed(list(zip(idx, buf.shape))):
                elems = elems.add(i.mul(row))
                row = row.mul(d if isinstance(d, IndexExpr) else IndexExpr(d))
            offset = to_scalar(elems.scale(nbytes), dt.int64)
            address = binary("+", Scalar(made.operands[0], dt.int64), offset)
            return Scalar(address.value, dt.handle)
        meta = memref.ExtractStridedMetadataOp(buf.value)
        elems = IndexExpr.of(meta.offset)
        for i, st in zip(idx, meta.strides):
            elems = elems.add(i.mul(IndexExpr.of(st)))
        base = IndexExpr.of(memref.ExtractAlignedPointerAsIndexOp(buf.value).result)
        address = base.add(elems.scale(nbytes))
        return Scalar(to_scalar(address, dt.int64).value, dt.handle)

    # -- the grid and the launch -----------------------------------------------
    def pdl(self, trigger: bool) -> None:
        self.require_kernel("T.pdl_trigger" if trigger else "T.pdl_sync")
        tile = _tile()
        (tile.PdlTriggerOp if trigger else tile.PdlWaitOp)()

    def grid_sync(self, what: str) -> None:
        self.require_kernel(what)
        if self.role_range is not None:
            raise self.error(f"{what} is a barrier of the whole grid; it cannot run in the "
                             f"role of threads [{self.role_range[0]}, {self.role_range[1]})")
        _tile().GridSyncOp()

    def annotate_kernel_int(self, key: str, n, what: str) -> None:
        self.require_kernel(what)
        n = static_int(n, what)
        if n <= 0:
            raise self.error(f"{what}: n must be a positive integer, got {n}")
        ir = _ir()
        self.kernel_op.operation.attributes[key] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), n)

    def annotate_l2_hit_ratio(self, ratios) -> None:
        what = "T.annotate_l2_hit_ratio"
        self.require_kernel(what)
        if not isinstance(ratios, dict):
            raise self.error(f"{what} takes {{tensor: hit ratio}}, got {_describe(ratios)}")
        ir = _ir()
        entries = []
        for buf, ratio in ratios.items():
            if not isinstance(buf, Buffer) or buf.scope != "global":
                raise self.error(f"{what}: persistent L2 applies to global tensors (kernel "
                                 f"arguments), got {_describe(buf)}")
            if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or \
                    not 0.0 <= float(ratio) <= 1.0:
                raise self.error(f"{what}: the hit ratio of {buf.name!r} must be a number in "
                                 f"[0, 1], got {ratio!r}")
            try:
                index = ir.BlockArgument(buf.value).arg_number
            except ValueError:
                raise self.error(f"{what}: {buf.name!r} is not a kernel argument") from None
            entries.append((str(index), ir.FloatAttr.get_f32(float(ratio))))
        self.kernel_op.operation.attributes["tile.l2_hit_ratio"] = ir.DictAttr.get(
            dict(entries))

    # -- atomics -----------------------------------------------------------------
    def _memory_order(self, order, allowed, what: str):
        if order is None:
            return None
        if order not in allowed:
            raise self.error(f"{what} does not support memory_order={order!r}; expected one "
                             f"of {sorted(allowed)}", kind=ValueError, at_definition=True)
        return getattr(_tile().MemoryOrder, order)

    def _element(self, ref, what: str):
        """(buffer, stored indices) of one element `X[i, j]` (a rank-0
        buffer, or a whole buffer: its first element)."""
        if isinstance(ref, Buffer):
            ref = BufferRef(ref, (0,) * ref.ndim) if ref.ndim else BufferRef(ref, ())
        if not isinstance(ref, BufferRef):
            raise self.error(f"{what} takes an element of a buffer (`X[i]`), got "
                             f"{_describe(ref)}")
        buf = ref.buffer
        if buf.scope not in ("global", "shared"):
            raise self.error(f"{what} updates global or shared memory, got {buf.scope} "
                             f"buffer {buf.name!r}")
        if buf.dtype.is_bool:
            raise self.error(f"{what} cannot update the bool buffer {buf.name!r}")
        idx = buf.stored_index(ref._point_indices(f"{what} of"))
        return buf, [i.materialize() for i in idx]

    def atomic_element(self, kind: str, dst, value, order, return_prev: bool,
                       what: str) -> Optional[Scalar]:
        """One element's atomic update (tile.atomic_rmw): every thread that
        runs it outside T.Parallel makes it; the previous element when
        `return_prev`."""
        self.require_kernel(what)
        buf, idx = self._element(dst, what)
        if kind.startswith("bit") and not buf.dtype.is_int:
            raise self.error(f"{what} needs an integer destination, got {buf.dtype} "
                             f"{buf.name!r}")
        mo = self._memory_order(order, MEMORY_ORDERS, what)
        v = to_storage(self._value(value, f"{what} value"), buf.dtype)
        tile = _tile()
        names = {"bitand": "BitAnd", "bitor": "BitOr", "bitxor": "BitXor"}
        attrs = {"is_unsigned": True} if buf.dtype.is_unsigned else {}
        if mo is not None:
            attrs["memory_order"] = mo
        op = tile.AtomicRMWOp(storage_ir_type(buf.dtype) if return_prev else None,
                              getattr(tile.AtomicKind, names.get(kind, kind)), v, buf.value,
                              idx, **attrs)
        return from_storage(op.result, buf.dtype) if return_prev else None

    def atomic_load(self, src, order, what: str = "T.atomic_load") -> Scalar:
        self.require_kernel(what)
        buf, idx = self._element(src, what)
        mo = self._memory_order(order, ("relaxed", "consume", "acquire", "seq_cst"), what)
        op = _tile().AtomicLoadOp(storage_ir_type(buf.dtype), buf.value, idx, mo)
        return from_storage(op.result, buf.dtype)

    def atomic_store(self, dst, value, order, what: str = "T.atomic_store") -> None:
        self.require_kernel(what)
        buf, idx = self._element(dst, what)
        mo = self._memory_order(order, ("relaxed", "release", "seq_cst"), what)
        v = to_storage(self._value(value, f"{what} value"), buf.dtype)
        _tile().AtomicStoreOp(v, buf.value, idx, mo)

    @staticmethod
    def is_tile_value(value) -> bool:
        """Whether an atomic's value is a tile (a buffer or a sliced region)
        rather than one value (a scalar, an element)."""
        return isinstance(value, Buffer) or (isinstance(value, BufferRef) and any(
            isinstance(i, slice) for i in value.items))

    def atomic_fill(self, kind: str, dst, value, order, what: str) -> None:
        """An atomic update of every element of a region (or a whole buffer)
        by one scalar value: each element once, in a T.Parallel over the
        region (TileLang's tile atomic with a scalar value)."""
        if isinstance(dst, Buffer):
            buf, offsets = dst, [IndexExpr(0)] * dst.ndim
            extents = list(dst.static_shape(what))
        else:
            buf = dst.buffer
            offsets, extents = dst.offsets_extents()
            extents = [1 if e is None else e for e in extents]
        dims = [d for d, e in enumerate(extents) if e != 1]
        with self.parallel([extents[d] for d in dims] or [1]) as ivs:
            idx = list(offsets)
            for d, iv in zip(dims, ivs):
                idx[d] = offsets[d].add(iv)
            self.atomic_element(kind, BufferRef(buf, tuple(idx)), value, order, False, what)

    def atomic_region(self, kind: str, dst, value, order, what: str) -> None:
        """An atomic update of a region by a tile (or region) of values: one
        element update each, in a T.Parallel over the tile; by a scalar,
        each element of the region once (atomic_fill)."""
        self.require_kernel(what)
        if not self.is_tile_value(value):
            return self.atomic_fill(kind, dst, value, order, what)
        vbuf, voff, vshape = self._atomic_tile(value, what)
        if isinstance(dst, Buffer):
            buf, offsets, extents = dst, [IndexExpr(0)] * dst.ndim, list(dst.shape)
        elif isinstance(dst, BufferRef):
            buf = dst.buffer
            offsets, extents = dst.offsets_extents()
        else:
            raise self.error(f"{what} expects a buffer destination, got {_describe(dst)}")
        if any(e is not None for e in extents):
            dims = [d for d, e in enumerate(extents) if e is not None and e != 1]
            if [extents[d] for d in dims] != [e for e in vshape if e != 1]:
                raise self.error(f"{what}: the destination region of {buf.name!r} has extents "
                                 f"{[e for e in extents if e is not None]}, the value has "
                                 f"shape {vshape}")
        else:
            dims = [d for d in range(buf.ndim - len(vshape), buf.ndim)]
            if len(dims) != len(vshape) or (dims and dims[0] < 0):
                raise self.error(f"{what}: a value of shape {vshape} does not fit the "
                                 f"destination {buf.name!r} of rank {buf.ndim}")
            dims = [d for d, e in zip(dims, vshape) if e != 1]
        inner = [k for k, e in enumerate(vshape) if e != 1]
        with self.parallel(list(vshape)) as ivs:
            idx = list(offsets)
            for d, k in zip(dims, inner):
                idx[d] = offsets[d].add(ivs[k])
            elem = BufferRef(vbuf, tuple(o.add(i) for o, i in zip(voff, ivs))).load()
            self.atomic_element(kind, BufferRef(buf, tuple(idx)), elem, order, False, what)

    def _atomic_tile(self, value, what: str):
        """(buffer, offsets, shape) of a tile value: a buffer or a region."""
        if isinstance(value, Buffer):
            return value, [IndexExpr(0)] * value.ndim, value.static_shape(what)
        if isinstance(value, BufferRef):
            offsets, extents = value.offsets_extents()
            return value.buffer, offsets, [1 if e is None else e for e in extents]
        raise self.error(f"{what}: the value must be a tile (a buffer or a region), got "
                         f"{_describe(value)}")

    def atomic_vector_add(self, dst, value, lanes: int, what: str, return_prev: bool = False):
        """TileLang's AtomicAddx2/x4: `lanes` consecutive elements along the
        last dimension from `dst` (an element or a region of `lanes`) get
        the `lanes` values from `value`, each element atomically; with
        `return_prev`, the elements' previous values as a vector."""
        self.require_kernel(what)

        def lane_refs(ref, side: str):
            """The `lanes` elements of `ref`: a region (or its first element)
            along the last dimension, or an index vector (T.Ramp) lane by lane."""
            if isinstance(ref, Buffer):
                ref = BufferRef(ref, (0,) * ref.ndim)
            if not isinstance(ref, BufferRef):
                raise self.error(f"{what}: the {side} must be a buffer element or region, got "
                                 f"{_describe(ref)}")
            vectors = [it for it in ref.items if isinstance(it, Vector)]
            if vectors:
                if any(len(v) != lanes for v in vectors):
                    raise self.error(f"{what}: the index vector of the {side} {ref!r} must "
                                     f"have {lanes} lanes")
                return [BufferRef(ref.buffer, tuple(it.lanes[k] if isinstance(it, Vector)
                                                    else it for it in ref.items))
                        for k in range(lanes)]
            offsets, extents = ref.offsets_extents()
            if any(e is not None for e in extents[:-1] if e != 1) or \
                    extents[-1] not in (None, lanes):
                raise self.error(f"{what}: the {side} {ref!r} must be {lanes} consecutive "
                                 "elements of the last dimension")
            return [BufferRef(ref.buffer, tuple(offsets[:-1]) + (offsets[-1].add(IndexExpr(k)),))
                    for k in range(lanes)]

        prev = []
        for d, v in zip(lane_refs(dst, "destination"), lane_refs(value, "value")):
            v = v.load()
            if return_prev:
                prev.append(self.atomic_element("add", d, v, None, True, what))
                continue
            buf, idx = self._element(d, what)
            _tile().AtomicAddOp(to_storage(v, buf.dtype), buf.value, idx)
        return Vector(prev) if return_prev else None


    # -- external device functions (T.import_source, T.call_extern) ------------------
    def import_source(self, source) -> None:
        """T.import_source(src): CUDA C++ the program's T.call_extern calls
        (compiled by NVRTC and linked into the kernel on CUDA targets)."""
        if source is None:
            return
        if not isinstance(source, str):
            raise self.error(f"T.import_source takes CUDA C++ source text, got "
                             f"{_describe(source)}")
        if source not in self.extern_sources:
            self.extern_sources.append(source)

    def call_extern(self, dtype, name: str, args, what: str = "T.call_extern"):
        """A call of the device function `name` of the program's CUDA source
        by the executing thread (tile.call_extern through a generated
        wrapper); its value as a `dtype` scalar, None for "handle"/"void"."""
        from . import extern_calls as extern
        from .roles import AccessPtr

        self.require_kernel(what)
        result = None
        if dtype is not None and str(dtype) not in ("handle", "void"):
            result = dt.as_dtype(dtype)
            extern.element_ctype(result, f"{what} result")
        params, operands, indices, counts, access = [], [], [], [], []
        for k, a in enumerate(args):
            if isinstance(a, BufferRef) and not any(isinstance(i, slice) for i in a.items) \
                    and not a.is_vector():
                a = a.load()  # `x[i]`: the element's value (TileLang's BufferLoad)
            if isinstance(a, (Buffer, BufferRef)) and not (isinstance(a, Buffer) and a.ndim == 0
                                                           and a.scope == "var"):
                a = self.access_ptr(a, "rw")
            if isinstance(a, AccessPtr):
                if self.parallel_depth:
                    raise self.error(f"{what} of {name!r} inside T.Parallel with a pointer "
                                     f"argument ({a.buffer.name!r}): the iterations run on "
                                     "different threads; pass element values, or call it from "
                                     "per-thread code (T.serial loops, T.get_thread_binding)")
                buf = a.buffer
                if buf.scope == "fragment":
                    raise self.error(f"{what}: fragment {buf.name!r} passed to {name!r}; an "
                                     "external function takes local, shared or global buffers "
                                     "(copy the fragment into a T.alloc_local first)")
                try:
                    ctype = extern.element_ctype(buf.dtype, f"{what} argument {k}")
                except Exception as e:  # noqa: BLE001 (a TileLangError naming the dtype)
                    raise self.error(str(e)) from None
                idx = buf.stored_index([to_index(i, f"{what} index") for i in a.indices])
                operands.append(buf.value)
                indices += [i.materialize() for i in idx]
                counts.append(len(idx))
                access.append({"r": 1, "w": 2, "rw": 3}[a.access_type])
                params.append(("ptr", ctype))
                continue
            s = self._value(a, f"{what} argument {k}")
            if s.dtype.kind == "index" or s.dtype == dt.int64 and isinstance(a, IndexExpr):
                s = to_scalar(s, dt.int32)
            try:
                extern.scalar_ctype(s.dtype, f"{what} argument {k}")
            except Exception as e:  # noqa: BLE001
                raise self.error(str(e)) from None
            operands.append(s.value)
            counts.append(0)
            access.append(0)
            params.append(("scalar", s.dtype.name))
        key = (name, result.name if result else None, tuple(params))
        if key not in self.extern_wrappers:
            self.extern_wrappers[key] = extern.wrapper(len(self.extern_wrappers), name,
                                                       key[1], params)
        wrapper_name = self.extern_wrappers[key][0]
        ir = _ir()
        op = _tile().CallExternOp(storage_ir_type(result) if result else None, wrapper_name,
                                  operands, indices, ir.DenseI64ArrayAttr.get(counts),
                                  ir.DenseI64ArrayAttr.get(access))
        op.operation.attributes["tile.function"] = ir.StringAttr.get(name)
        return from_storage(op.result, result) if result else None

    def extern_source_list(self):
        """The program's sources then the wrappers (tile.extern_sources)."""
        return self.extern_sources + [src for _, src in self.extern_wrappers.values()]
