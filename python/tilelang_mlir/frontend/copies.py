"""Copies between buffers, mixed into the Builder (frontend/builder.py):
T.copy (and its TMA, asynchronous and element forms), T.transpose,
T.im2col, and the matching of the two regions of a copy by TileLang's rules
(point indices, an element position completed from the other side, a loop
over the more local side's region where the extents differ).
"""

from __future__ import annotations

import contextlib
from typing import List, Optional

from ..base import dtypes as dt
from ..base.dtypes import DType
from ..language.values import (Buffer, BufferRef, IndexExpr, _describe, static_int, to_index,
                               to_scalar)


def _ir():
    from .. import ir

    return ir


def _tile():
    from ..dialects import tile

    return tile


class CopyBuilder:
    """Mixed into the Builder."""

    def _region(self, x, what: str):
        """(buffer, offsets, extents-or-None) of a buffer or subscript."""
        x = self.element_of(x)
        self.no_reducer(x, what)
        if isinstance(x, Buffer):
            return x, [IndexExpr(0)] * x.ndim, list(x.static_shape(what))
        if isinstance(x, BufferRef):
            offsets, extents = x.offsets_extents()
            return x.buffer, offsets, extents
        raise self.error(f"{what} expects a buffer or a buffer region, got {_describe(x)}")

    @staticmethod
    def _point_extents(extents):
        """Slices with point indices (X[0, 0:8]): a point picks one index
        (extent 1); all points (an element position) stay None."""
        if None in extents and any(e is not None for e in extents):
            return [1 if e is None else e for e in extents]
        return extents

    @classmethod
    def _full_extents(cls, sext, dext):
        """Both sides' extents of a copy, an element position's completed
        from the other side (None where they cannot be matched)."""
        s_full = cls._fill_extents(sext, dext) if None in sext else sext
        d_full = cls._fill_extents(dext, s_full) if None in dext else dext
        return s_full, d_full

    @staticmethod
    def _fill_extents(extents, other: List[int]) -> Optional[List[int]]:
        """Completes point extents (None) from the other side's extents,
        aligned to the trailing dimensions and padded with leading ones
        (TileLang's rule: `X[0, 2]` and an (8, 1) tile give [8, 1], a column).
        When the other side has more dimensions, its leading unit dimensions
        are dropped first, then all of its unit dimensions."""
        shape = list(other)
        while len(shape) > len(extents) and shape[0] == 1:
            shape = shape[1:]
        if len(shape) > len(extents):
            shape = [e for e in shape if e != 1]
            if len(shape) > len(extents):
                return None
        return [1] * (len(extents) - len(shape)) + shape

    @staticmethod
    def _region_mismatch(a: List[int], a_shape, b: List[int], b_shape) -> Optional[str]:
        """tile.copy's rule (CopyOp::verify), or None when the regions match:
        the same extents once unit dimensions are dropped, and in regions of
        one rank whose extents differ, no unit extent over a dimension of
        extent 1 (that one is a dimension of the tile: a 1x8 row does not
        fill an 8x1 column)."""
        if [e for e in a if e != 1] != [e for e in b if e != 1]:
            return "unit dimensions dropped, they still differ"
        if len(a) == len(b) and list(a) != list(b):
            for side, sizes, shape in (("source", a, a_shape), ("destination", b, b_shape)):
                for d, (e, n) in enumerate(zip(sizes, shape)):
                    if e == 1 and isinstance(n, int) and n == 1:
                        return (f"dimension {d} of the {side} is a dimension of extent 1 of "
                                "the tile, which a region of the same rank must match")
        return None

    def _tilelang_loop_extents(self, sbuf, soff, s_ext, dbuf, doff, d_ext):
        """TileLang's T.copy of regions whose extents differ (with the same
        number of non-unit dimensions): the copy loops over the region of
        the more local side (fragment or local, then shared, then global;
        the source's on a tie), which must not be smaller than the source's
        in any dimension. Returns both sides' extents set to it, or None
        when the rule does not apply."""
        s_nu = [i for i, e in enumerate(s_ext) if e != 1]
        d_nu = [i for i, e in enumerate(d_ext) if e != 1]
        if len(s_nu) != len(d_nu) or not all(isinstance(e, int) for e in s_ext + d_ext) or \
                [s_ext[i] for i in s_nu] == [d_ext[i] for i in d_nu]:
            return None

        def level(buf):
            return 2 if buf.scope in ("fragment", "local") else 1 if buf.scope == "shared" else 0

        base_is_src = level(sbuf) >= level(dbuf)
        new_s, new_d = list(s_ext), list(d_ext)
        for si, di in zip(s_nu, d_nu):
            e = s_ext[si] if base_is_src else d_ext[di]
            if e < s_ext[si]:
                raise self.error(
                    f"T.copy: the region of {dbuf.name!r} ({_fmt(d_ext)}) is smaller than the "
                    f"region of {sbuf.name!r} ({_fmt(s_ext)}) it copies: a copy runs over the "
                    f"region of the more local side ({dbuf.scope} {dbuf.name!r}), which must "
                    "cover the source's")
            new_s[si] = new_d[di] = e
        for buf, off, ext in ((sbuf, soff, new_s), (dbuf, doff, new_d)):
            if buf.scope == "global":
                continue  # (element accesses past the tensor's end are guarded)
            for d, (o, e, n) in enumerate(zip(off, ext, _static_dims(buf))):
                o = o.const if isinstance(o, IndexExpr) and o.is_const() else o
                if isinstance(o, int) and isinstance(n, int) and o + e > n:
                    raise self.error(
                        f"T.copy: the regions have extents {_fmt(s_ext)} and {_fmt(d_ext)}; "
                        f"a copy runs over {_fmt(ext)}, which goes past dimension {d} of "
                        f"{buf.scope} {buf.name!r} ({n})")
        return new_s, new_d

    def copy(self, src, dst, via=None, what: str = "T.copy", async_: bool = False,
             tma_attrs: Optional[dict] = None, loop_layout=None) -> None:
        """`via`: (barrier, index) on which the copy completes, a TMA load
        whose issuing thread announces its bytes (T.tma_copy); `tma_attrs`:
        more attributes of that TMA copy (tile.copy's multicast_mask,
        eviction). `async_`: the copy is issued asynchronously (cp.async)
        and lands at a later T.ptx_wait_group (T.async_copy). `loop_layout`:
        a T.Fragment over the copy's loop (the non-unit extents of the
        region); the copy is then TileLang's element-wise one, each element
        moved by the thread the layout names (a program may read what its
        thread copied without a barrier); asynchronous copies of this form
        are issued as loads and stores, complete for the thread at once."""
        self.require_kernel(what)
        if loop_layout is not None:
            from ..language.layout import Fragment

            if not isinstance(loop_layout, Fragment):
                raise self.error(f"{what} loop_layout must be a T.Fragment, got "
                                 f"{_describe(loop_layout)}")
        if self._copy_dynamic_region(src, dst, via, async_, what, loop_layout):
            return
        sbuf, soff, sext = self._region(src, f"{what} source")
        dbuf, doff, dext = self._region(dst, f"{what} destination")
        if async_ and (sbuf.scope != "global" or dbuf.scope != "shared"):
            raise self.error(f"{what} only supports global->shared/shared.dyn copies "
                             f"(cp.async reads global memory into shared memory), got "
                             f"{sbuf.scope} {sbuf.name!r} to {dbuf.scope} {dbuf.name!r}")
        if via is not None and (sbuf.scope != "global" or dbuf.scope != "shared"):
            raise self.error(f"{what} only supports global->shared/shared.dyn copies, got "
                             f"{sbuf.scope} {sbuf.name!r} to {dbuf.scope} {dbuf.name!r}")
        sext, dext = self._point_extents(sext), self._point_extents(dext)
        if None in sext and None in dext:
            if via is not None or sext.count(None) != len(sext) or \
                    dext.count(None) != len(dext):
                raise self.error("T.copy needs the extent of at least one side: pass a "
                                 "whole buffer or slices, not two element positions")
            # Two element positions (TileLang's element copy, inside a
            # T.Parallel): one load and one store, converted to the
            # destination's type, each bounds-safe as element accesses are.
            from ..language.values import cast

            dbuf[tuple(doff)].store(cast(sbuf[tuple(soff)].load(), dbuf.dtype))
            return
        s_full, d_full = self._full_extents(sext, dext)
        if s_full is None or d_full is None:
            point, other = (sbuf, dext) if s_full is None else (dbuf, s_full)
            raise self.error(
                f"T.copy cannot match the region of {sbuf.name!r} ({_fmt(sext)}) "
                f"with the region of {dbuf.name!r} ({_fmt(dext)}): the element position "
                f"in {point.name!r} has {point.ndim} dimensions, fewer than the "
                f"non-unit extents of the other side ({_fmt(other)})")
        why = self._region_mismatch(s_full, _static_dims(sbuf), d_full, _static_dims(dbuf))
        if why is not None and via is None and not async_:
            base = self._tilelang_loop_extents(sbuf, soff, s_full, dbuf, doff, d_full)
            if base is not None:
                (s_full, d_full), why = base, None
        if why is not None:
            raise self.error(
                f"T.copy: the region of {sbuf.name!r} has shape {_fmt(s_full)} but the "
                f"region of {dbuf.name!r} has shape {_fmt(d_full)} ({why})")
        padded = sbuf.scope == "global" and sbuf.safe_value not in (None, 0, False)
        if loop_layout is not None:
            self._copy_elements(sbuf, soff, s_full, dbuf, doff, d_full, loop_layout, what)
            return
        packed = _byte_regions(sbuf, soff, s_full, dbuf, doff, d_full)
        if packed is not None and not padded:
            # Packed 4-bit elements on both sides, whole bytes: a copy of the
            # bytes (tile.copy: vectorized, cp.async or TMA like any other).
            (soff, s_full), (doff, d_full) = packed
        elif sbuf.remap is not None or dbuf.remap is not None or sbuf.strided or dbuf.strided \
                or sbuf.pack > 1 or dbuf.pack > 1 or sbuf.bitview or dbuf.bitview \
                or (padded and via is None):
            if via is not None:
                raise self.error(f"{what}: the tensor {sbuf.name!r} has a T.Layout or strides; "
                                 "a TMA copy reads contiguous tensors in their own layout")
            self._copy_elements(sbuf, soff, s_full, dbuf, doff, d_full)
            return
        ir = _ir()
        kwargs = {}
        for side, buf in (("src_element", sbuf), ("dst_element", dbuf)):
            logical = None if packed is not None else _logical_element(buf.dtype)
            if logical is not None:
                kwargs[side] = ir.TypeAttr.get(ir.Type.parse(logical))
        if via is not None:
            kwargs.update(barrier=via[0], barrier_index=via[1], expect_tx=True)
            kwargs.update(tma_attrs or {})
        if async_:
            if sbuf.remap is not None:
                raise self.error(f"{what}: the tensor {sbuf.name!r} has a T.Layout; an "
                                 "asynchronous copy reads tensors in their own layout")
            kwargs["async_"] = True
        _tile().CopyOp(sbuf.value, [o.materialize() for o in soff],
                       dbuf.value, [o.materialize() for o in doff],
                       ir.DenseI64ArrayAttr.get(s_full), ir.DenseI64ArrayAttr.get(d_full),
                       **kwargs)

    def _copy_dynamic_region(self, src, dst, via, async_, what: str, loop_layout=None) -> bool:
        """A copy where a slice's extent is known only at run time
        (`x[b, s0:s1, :]`, ragged chunks): element by element (a T.Parallel
        loop) over the region of the more local side, as TileLang's copy
        with any extents; a region of run-time extent there leaves the other
        side's elements beyond it as they are. False where every extent is
        static."""
        if not any(isinstance(x, BufferRef) and x.dynamic_region() for x in (src, dst)):
            return False
        if via is not None or async_:
            raise self.error(f"{what}: a region whose extent is known only at run time is "
                             "copied element by element; a TMA or cp.async copy needs "
                             "compile-time extents")
        if loop_layout is not None:
            raise self.error(f"{what}(..., loop_layout=...): a region whose extent is known "
                             "only at run time; the layout places a static loop's iterations")

        def sides(x, role):
            if isinstance(x, Buffer):
                return x, [(IndexExpr(0), to_index(d)) for d in x.shape]
            if isinstance(x, BufferRef):
                if len(x.items) != x.buffer.ndim:
                    raise self.error(f"{what}: buffer {x.buffer.name!r} of rank "
                                     f"{x.buffer.ndim} indexed with {len(x.items)} indices")
                return x.buffer, x.bounds()
            raise self.error(f"{what} {role} must be a buffer or a region of one, got "
                             f"{_describe(x)}")

        sbuf, sb = sides(src, "source")
        dbuf, db = sides(dst, "destination")

        def unit(e):
            return e.is_const() and e.const == 1

        s_axes = [k for k, (_, e) in enumerate(sb) if e is not None]
        d_axes = [k for k, (_, e) in enumerate(db) if e is not None]
        if len(s_axes) != len(d_axes):  # unit extents pair with nothing
            s_axes = [k for k in s_axes if not unit(sb[k][1])]
            d_axes = [k for k in d_axes if not unit(db[k][1])]
        if len(s_axes) != len(d_axes):
            raise self.error(f"{what}: the region of {sbuf.name!r} has "
                             f"{len(s_axes)} sliced dimensions, the region of {dbuf.name!r} "
                             f"{len(d_axes)}")
        # TileLang's loop: over the region of the more local side (fragment
        # or local, then shared, then global; the source's on a tie); global
        # reads past the tensor are guarded as element accesses are.
        def level(buf):
            return 2 if buf.scope in ("fragment", "local", "var") else \
                1 if buf.scope.startswith("shared") else 0

        base_is_src = level(sbuf) >= level(dbuf)
        extents = [sb[ks][1] if base_is_src else db[kd][1] for ks, kd in zip(s_axes, d_axes)]
        from ..language.values import cast

        with self.parallel(extents or [1]) as ivs:
            sidx, didx = [o for o, _ in sb], [o for o, _ in db]
            for k, iv in zip(s_axes, ivs):
                sidx[k] = sidx[k].add(iv)
            for k, iv in zip(d_axes, ivs):
                didx[k] = didx[k].add(iv)
            dbuf[tuple(didx)].store(cast(sbuf[tuple(sidx)].load(), dbuf.dtype))
        return True

    def transpose(self, src, dst) -> None:
        """T.transpose: dst[..., j, i] = src[..., i, j] (a T.Parallel loop of
        loads and stores; TileLang's shared-memory transpose)."""
        self.require_kernel("T.transpose")
        sbuf, soff, sext = self._region(src, "T.transpose source")
        dbuf, doff, dext = self._region(dst, "T.transpose destination")
        swap = lambda e: list(e[:-2]) + [e[-1], e[-2]]  # noqa: E731
        if None in sext and None not in dext:
            sext = swap(dext)
        if None in dext and None not in sext:
            dext = swap(sext)
        if None in sext or None in dext:
            raise self.error("Cannot deduce extent for transpose: give a whole buffer or "
                             "slices on at least one side")
        if len(sext) < 2 or len(dext) < 2:
            raise self.error("Transpose requires at least 2D buffers.")
        if swap(sext) != list(dext):
            raise self.error(f"T.transpose: a source region of shape {tuple(sext)} transposes "
                             f"into shape {tuple(swap(sext))}, got {tuple(dext)}")
        with self.parallel(sext) as ivs:
            v = BufferRef(sbuf, tuple(o.add(i) for o, i in zip(soff, ivs))).load()
            BufferRef(dbuf, tuple(o.add(i) for o, i in zip(doff, swap(list(ivs))))).store(v)

    def _copy_elements(self, sbuf, soff, s_ext, dbuf, doff, d_ext, loop_layout=None,
                       what: str = "T.copy") -> None:
        """T.copy element by element (a T.Parallel loop of loads and stores),
        for a side whose elements a T.Layout places, or with the program's
        `loop_layout` over the loop: out-of-range reads give zero and
        out-of-range writes are dropped, as in tile.copy."""
        from ..dialects import scf
        from ..language.values import select

        extents = [e for e in s_ext if e != 1] or [1]
        if loop_layout is not None:
            if list(loop_layout.shape) != extents:
                raise self.error(f"{what} loop_layout: a T.Fragment of shape "
                                 f"{list(loop_layout.shape)} for a copy whose loop runs over "
                                 f"{extents} (the region's extents other than 1)")
            if dbuf.pack > 1:
                raise self.error(f"{what}(..., loop_layout=...) into {dbuf.name!r} "
                                 f"({dbuf.dtype}, packed {dbuf.pack} a byte): a layout of "
                                 "single elements would split bytes; copy without a layout")
        # A destination of packed elements is written a whole byte per
        # iteration (its `pack` elements in turn), so that no two threads
        # write the halves of one byte.
        unit = dbuf.pack
        if unit > 1:
            last = doff[-1]
            if d_ext[-1] == 1 or extents[-1] % unit or not _on_a_byte(last, unit):
                raise self.error(f"T.copy into {dbuf.name!r} ({dbuf.dtype}, packed {unit} a byte): "
                                 f"the region of its last dimension must start and end on a "
                                 f"byte (multiples of {unit}), got offset {last} and extent "
                                 f"{d_ext[-1]}")
        with self.parallel(extents[:-1] + [extents[-1] // unit],
                           loop_layout=loop_layout) as pivs:
            for r in range(unit):
                ivs = tuple(pivs[:-1]) + (pivs[-1].scale(unit).add(IndexExpr(r)),)

                def full(offsets, sizes):
                    it = iter(ivs)
                    return [o if e == 1 else o.add(next(it)) for o, e in zip(offsets, sizes)]

                src, dst = full(soff, s_ext), full(doff, d_ext)
                inside_dst = True if _region_inside(dbuf, doff, d_ext) else _in_bounds(dbuf, dst)
                if_op = None
                if inside_dst is not True:
                    if_op = scf.IfOp(to_scalar(inside_dst, dt.boolean).value, [], has_else=False)
                with _ir().InsertionPoint(if_op.then_block) if if_op else \
                        contextlib.nullcontext():
                    inside_src = True if _region_inside(sbuf, soff, s_ext) else \
                        _in_bounds(sbuf, src)
                    if inside_src is True:
                        value = sbuf[tuple(src)].load()
                    else:  # read a clamped position, then select the safe value for it
                        fill = sbuf.safe_value if sbuf.safe_value is not None else 0
                        value = select(inside_src, sbuf[tuple(_clamped(sbuf, src))].load(),
                                       float(fill) if sbuf.dtype.is_float else fill)
                    dbuf[tuple(dst)].store(value)
                    if if_op:
                        scf.YieldOp([])

    def im2col(self, img, col, nhw_step, c_step, kernel, stride, dilation, pad) -> None:
        """T.im2col: the (block_m, block_k) tile `(nhw_step, c_step)` of the
        im2col matrix of an NHWC image for a square `kernel`: row m is the
        output pixel (n, oh, ow), column k the tap (kh, kw, c); taps in the
        padding or past the image give zero."""
        from ..language.values import compare, select

        self.require_kernel("T.im2col")
        src = self._whole(img, "T.im2col image")
        if src.ndim != 4:
            raise self.error(f"T.im2col: the image must be NHWC (rank 4), {src.name!r} has "
                             f"rank {src.ndim}")
        dbuf, doff, dext = self._region(col, "T.im2col destination")
        if None in dext or len(dext) < 2:
            raise self.error("T.im2col: the destination is a buffer (or slices) of rank >= 2")
        if dbuf.dtype != src.dtype:
            raise self.error(f"T.im2col: the image is {src.dtype} but the destination is "
                             f"{dbuf.dtype}")
        kernel, stride, dilation, pad = (static_int(v, f"T.im2col {n}") for v, n in (
            (kernel, "kernel"), (stride, "stride"), (dilation, "dilation"), (pad, "pad")))
        if kernel <= 0 or stride <= 0 or dilation <= 0 or pad < 0:
            raise self.error(f"T.im2col: kernel, stride and dilation must be positive and pad "
                             f"non-negative, got {kernel}, {stride}, {dilation}, {pad}")
        H, W, C = (to_index(d) for d in src.shape[1:])
        out_h = (H + (2 * pad - (kernel - 1) * dilation - 1)).floordiv(
            IndexExpr(stride)).add(IndexExpr(1))
        out_w = (W + (2 * pad - (kernel - 1) * dilation - 1)).floordiv(
            IndexExpr(stride)).add(IndexExpr(1))
        out_hw = out_h.mul(out_w)
        block_m, block_k = dext[-2], dext[-1]
        with self.parallel([block_m, block_k]) as (i, j):
            m = to_index(nhw_step, "T.im2col nhw_step") * block_m + i
            k = to_index(c_step, "T.im2col c_step") * block_k + j
            h = (m % out_hw) // out_w * stride + k // (C * kernel) * dilation - pad
            w = m % out_w * stride + (k // C) % kernel * dilation - pad
            index = [m // out_hw, h, w, k % C]
            inside = _and(_in_bounds(src, index), compare("<", k, C * (kernel * kernel)))
            value = src[tuple(_clamped(src, index))].load()
            if inside is not True:
                value = select(inside, value, 0.0 if src.dtype.is_float else 0)
            dst = list(doff[:-2]) + [doff[-2].add(i), doff[-1].add(j)]
            dbuf[tuple(dst)].store(value)


def _static_dims(buf: Buffer) -> List[Optional[int]]:
    """The buffer's extents, None where dynamic."""
    out = []
    for d in buf.shape:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, IndexExpr) and d.is_const():
            out.append(d.const)
        else:
            out.append(None)
    return out


def _and(a, b):
    """`a and b` of conditions that are Python bools where known at compile
    time, runtime booleans otherwise (both are evaluated)."""
    from ..language.values import logical

    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return logical("and", a, b)


def _region_inside(buf: Buffer, offsets: List[IndexExpr], extents) -> bool:
    """Whether the region at constant `offsets` of constant `extents` lies
    inside `buf` (of a static shape): its elements need no bounds checks."""
    for o, e, d in zip(offsets, extents, buf.shape):
        d = to_index(d)
        if not (o.is_const() and isinstance(e, int) and d.is_const() and
                0 <= o.const and o.const + e <= d.const):
            return False
    return len(offsets) == len(buf.shape)


def _in_bounds(buf: Buffer, index: List[IndexExpr]):
    """True, or the runtime condition that `index` lies inside `buf`."""
    from ..language.values import compare

    cond = True
    for x, d in zip(index, buf.shape):
        for c in (compare(">=", x, 0), compare("<", x, d)):
            cond = _and(cond, c)
            if cond is False:
                return False
    return cond


def _clamped(buf: Buffer, index: List[IndexExpr]) -> List[IndexExpr]:
    return [x.minmax(IndexExpr(0), "max").minmax(to_index(d).add(IndexExpr(-1)), "min")
            for x, d in zip(index, buf.shape)]


def _logical_element(dtype: DType) -> Optional[str]:
    """The logical element type tile.copy records where the storage type
    cannot say it (unsigned bytes, booleans stored as bytes)."""
    if dtype.kind == "uint":
        return f"ui{dtype.bits}"
    if dtype.is_bool:
        return "i1"
    return None


def _fmt(extents) -> str:
    return "x".join("?" if e is None else str(e) for e in extents)


def _on_a_byte(offset: IndexExpr, unit: int) -> bool:
    """Whether a last-dimension offset of packed elements (`unit` a byte)
    falls on a byte boundary for every value of its terms."""
    return offset.const % unit == 0 and all(c % unit == 0 for c in offset.terms.values())


def _byte_regions(sbuf, soff, s_full, dbuf, doff, d_full):
    """For a copy between two buffers of the same packed 4-bit dtype (two
    elements a byte along the last dimension) whose regions start and end
    on whole bytes there, the regions in bytes ((offsets, extents) of each
    side); None otherwise."""
    unit = sbuf.pack
    if unit <= 1 or dbuf.pack != unit or sbuf.dtype.name != dbuf.dtype.name:
        return None
    for buf in (sbuf, dbuf):
        if buf.remap is not None or buf.strided or buf.bitview is not None:
            return None
    out = []
    for offs, ext in ((soff, s_full), (doff, d_full)):
        last = offs[-1]
        if ext[-1] % unit or not _on_a_byte(last, unit):
            return None
        byte_off = IndexExpr(last.const // unit, {a: c // unit for a, c in last.terms.items()})
        out.append((list(offs[:-1]) + [byte_off], list(ext[:-1]) + [ext[-1] // unit]))
    return out
