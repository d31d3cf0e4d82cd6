"""Element access through packing and views: the nibble of a packed
4-bit buffer (`_load_packed` / `_store_packed`), an element of a view of
another dtype (`_load_bitview` / `_store_bitview`, see Buffer.bitview), and
the row-major index arithmetic of views and reshapes (`row_major_*`,
`reassociate`, `reshape_index`).

Split out of values.py, which imports this module at its end (after the
classes used here are defined) and re-exports its names: import values
first, or these names through it.
"""

from __future__ import annotations

from typing import List, Sequence

from ..base import dtypes as dt
from ..base.dtypes import DType
from . import state
from .values import (Buffer, BufferRef, IndexExpr, Scalar, _arith, _error, _ir, constant,
                     ir_type, to_index, to_scalar)


def _packed_position(buf: Buffer, idx: List[IndexExpr]):
    """(byte indices, bit shift) of element `idx` of a packed buffer."""
    pack, bits = buf.pack, buf.dtype.bits
    last = idx[-1]
    byte = list(idx[:-1]) + [last.floordiv(IndexExpr(pack))]
    shift = to_scalar(last.mod(IndexExpr(pack)).scale(bits), dt.int32)
    return [i.materialize() for i in byte], Scalar(
        _arith().TruncIOp(_ir().IntegerType.get_signless(8), shift.value).result, dt.int8)


def _load_packed(buf: Buffer, idx: List[IndexExpr]) -> "Scalar":
    """Element `idx` of a buffer of a 4-bit type: its nibble of the byte."""
    from ..dialects import memref

    arith, ir = _arith(), _ir()
    byte_idx, shift = _packed_position(buf, idx)
    byte = memref.LoadOp(buf.value, byte_idx).result
    bits = arith.ShRUIOp(byte, shift.value).result
    value = arith.TruncIOp(ir.IntegerType.get_signless(buf.dtype.bits), bits).result
    return Scalar(value, buf.dtype)


def _store_packed(buf: Buffer, idx: List[IndexExpr], value) -> None:
    """Writes element `idx` of a buffer of a 4-bit type: its nibble of the
    byte, the other nibble kept (a read-modify-write of the byte: threads
    that write the two halves of one byte at once race, as in TileLang)."""
    from ..dialects import memref

    b = state.current() if state.active() else None
    # A fragment's bytes are registers: the layout inference keeps the
    # halves of a byte on one thread, or refuses the loop. A local buffer is
    # each thread's own. Elsewhere a T.Parallel's iterations run on several
    # threads: the store is marked with the loop variable that steps the
    # element within its byte, and the layout inference checks that the
    # iterations writing one byte share a thread (tile.packed_store).
    mark = None
    if b is not None and b.parallel_depth and buf.scope not in ("fragment", "local"):
        mark = _packed_store_dim(b, buf, idx)
    arith, ir = _arith(), _ir()
    i8 = ir.IntegerType.get_signless(8)
    v = to_scalar(value, buf.dtype)
    byte_idx, shift = _packed_position(buf, idx)
    mask = constant((1 << buf.dtype.bits) - 1, dt.int8)
    nibble = arith.ShLIOp(arith.ExtUIOp(i8, v.value).result, shift.value).result
    keep = arith.XOrIOp(arith.ShLIOp(mask, shift.value).result, constant(-1, dt.int8)).result
    load = memref.LoadOp(buf.value, byte_idx)
    # (the read of a write: tile-check-uninitialized counts it as the write)
    load.operation.attributes["tile.partial_write"] = ir.UnitAttr.get()
    old = load.result
    new = arith.OrIOp(arith.AndIOp(old, keep).result, nibble).result
    store = memref.StoreOp(new, buf.value, byte_idx)
    if mark is not None:
        store.operation.attributes["tile.packed_store"] = _ir().DenseI64ArrayAttr.get(
            [mark, buf.pack])


def _mentions(expr: IndexExpr, atom) -> bool:
    """Whether index expression `expr` depends on `atom` (also inside its
    non-linear terms)."""
    from .values import OpAtom

    for a in expr.terms:
        if a == atom:
            return True
        if isinstance(a, OpAtom) and (_mentions(a.lhs, atom) or _mentions(a.rhs, atom)):
            return True
    return False


def _packed_store_dim(b, buf: Buffer, idx: List[IndexExpr]):
    """The variable of the innermost T.Parallel that steps a packed store's
    element within its byte, or None when every term of the last index
    steps whole bytes (each iteration writes bytes of its own, `2 * i + r`
    for r in range(2)). Otherwise the last index must be that variable
    (coefficient 1, its extent a multiple of the packing) plus whole bytes
    (the other terms and the constant multiples of the packing); raises
    for any other index: iterations on different threads would write the
    halves of one byte."""
    from .values import ValueAtom

    last = idx[-1]
    _, ivs, ext = b._parallel_stack[-1]
    pack = buf.pack
    own = {iv_atom: d for d, iv in enumerate(ivs) for iv_atom in iv.terms}
    odd = [(a, c) for a, c in last.terms.items() if c % pack]
    if not odd:
        return None
    # (The other indices must not depend on that variable: the two
    # iterations that differ in its low bit then write the two halves of
    # one byte, and no other iteration writes either.)
    ok = (last.const % pack == 0 and len(odd) == 1 and odd[0][1] == 1
          and isinstance(odd[0][0], ValueAtom) and odd[0][0] in own
          and ext[own[odd[0][0]]] % pack == 0
          and not any(_mentions(i, odd[0][0]) for i in idx[:-1]))
    if not ok:
        raise _error(f"a store into {buf.name!r} ({buf.dtype}, packed {pack} a byte) in a "
                     f"T.Parallel loop at last index {last}: iterations run on different "
                     f"threads, and two writing the halves of one byte race; index the last "
                     f"dimension by one T.Parallel variable whose extent is a multiple of "
                     f"{pack}, plus whole bytes (so that each thread can own whole bytes), "
                     f"or use T.copy")
    return own[odd[0][0]]


def row_major_position(indices: Sequence, extents: Sequence) -> IndexExpr:
    """The row-major position of `indices` in an array of `extents`."""
    linear = IndexExpr(0)
    for x, e in zip(indices, extents):
        linear = linear.mul(to_index(e)).add(to_index(x))
    return linear


def row_major_index(position: IndexExpr, extents: Sequence) -> List[IndexExpr]:
    """The index of row-major `position` in an array of `extents` (the first
    coordinate is not wrapped)."""
    out, stride = [], IndexExpr(1)
    for k in range(len(extents) - 1, -1, -1):
        q = position.floordiv(stride)
        out.append(q if k == 0 else q.mod(to_index(extents[k])))
        stride = stride.mul(to_index(extents[k]))
    return list(reversed(out))


def reassociate(view: Sequence[int], src: Sequence[int]):
    """Groups of consecutive dimensions of two static row-major shapes of one
    size that hold the same elements: [(view dims, src dims), ...], each
    pair one dimension split into several or several merged into one (the
    reassociation of an expand/collapse shape), or None when the shapes do
    not factor so (or are not static)."""
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
               for d in list(view) + list(src)):
        return None
    groups, i, j = [], 0, 0
    while i < len(view) and j < len(src):
        vi, sj, a, b = [i], [j], view[i], src[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b and i < len(view):
                a *= view[i]
                vi.append(i)
                i += 1
            elif b < a and j < len(src):
                b *= src[j]
                sj.append(j)
                j += 1
            else:
                return None
        if len(vi) > 1 and len(sj) > 1:
            return None
        groups.append((vi, sj))
    # trailing unit dimensions join the last group
    while i < len(view) and view[i] == 1 and groups:
        groups[-1][0].append(i)
        i += 1
    while j < len(src) and src[j] == 1 and groups:
        groups[-1][1].append(j)
        j += 1
    if i != len(view) or j != len(src):
        return None
    return groups


def reshape_index(indices: Sequence, view: Sequence, src: Sequence) -> List[IndexExpr]:
    """The index into `src` of element `indices` of a row-major view of shape
    `view`: per reassociation group, a sum of strided view indices (a split)
    or the digits of one view index (a merge), which stay affine in the loop
    variables; the row-major position otherwise."""
    groups = reassociate(view, src)
    if groups is None:
        return row_major_index(row_major_position(indices, view), src)
    out: List[IndexExpr] = [None] * len(src)
    for vi, sj in groups:
        if len(sj) == 1:  # view dims vi split src dim sj[0]
            out[sj[0]] = row_major_position([indices[k] for k in vi], [view[k] for k in vi])
        else:  # src dims sj merged into view dim vi[0] (the others are units)
            pos = row_major_position([indices[k] for k in vi], [view[k] for k in vi])
            for k, x in zip(sj, row_major_index(pos, [src[k] for k in sj])):
                out[k] = x
    return out


def _bits(v, dtype: DType):
    """The bits of SSA value `v` of `dtype` as an integer of its width."""
    if dtype.is_float:
        return _arith().BitcastOp(_ir().IntegerType.get_signless(dtype.bits), v).result
    return v


def _from_bits(v, dtype: DType):
    if dtype.is_float:
        return _arith().BitcastOp(ir_type(dtype), v).result
    return v


def _load_bitview(view: Buffer, idx: List[IndexExpr]) -> "Scalar":
    """Element `idx` of a view of another dtype (see Buffer.bitview)."""
    src, k = view.bitview
    arith, ir = _arith(), _ir()
    p = row_major_position(idx, view.shape)
    wide = ir.IntegerType.get_signless(view.dtype.bits)
    if k > 0:  # k source elements, the first in the low bits
        word = None
        for j in range(k):
            e = BufferRef(src, tuple(row_major_index(p.scale(k).add(IndexExpr(j)), src.shape))).load()
            part = arith.ExtUIOp(wide, _bits(e.value, src.dtype)).result if k > 1 else \
                _bits(e.value, src.dtype)
            if j:
                part = arith.ShLIOp(part, constant(j * src.dtype.bits,
                                                   dt.as_dtype(f"int{view.dtype.bits}"))).result
            word = part if word is None else arith.OrIOp(word, part).result
        return Scalar(_from_bits(word, view.dtype), view.dtype)
    k = -k  # a part of one source element
    e = BufferRef(src, tuple(row_major_index(p.floordiv(IndexExpr(k)), src.shape))).load()
    src_int = dt.as_dtype(f"int{src.dtype.bits}")
    shift = to_scalar(p.mod(IndexExpr(k)).scale(view.dtype.bits), src_int)
    bits = arith.ShRUIOp(_bits(e.value, src.dtype), shift.value).result
    return Scalar(_from_bits(arith.TruncIOp(wide, bits).result, view.dtype), view.dtype)


def _store_bitview(view: Buffer, idx: List[IndexExpr], value) -> None:
    src, k = view.bitview
    if k < 0:
        raise _error(f"not supported by tilelang-mlir: a store into {view.name!r}, a view of "
                     f"{src.name!r} as a narrower dtype (it would rewrite a part of each "
                     f"{src.dtype} element; threads writing the parts of one element race)")
    arith, ir = _arith(), _ir()
    p = row_major_position(idx, view.shape)
    word = _bits(to_scalar(value, view.dtype).value, view.dtype)
    narrow = ir.IntegerType.get_signless(src.dtype.bits)
    for j in range(k):
        part = word
        if j:
            part = arith.ShRUIOp(word, constant(j * src.dtype.bits,
                                                dt.as_dtype(f"int{view.dtype.bits}"))).result
        if k > 1:
            part = arith.TruncIOp(narrow, part).result
        BufferRef(src, tuple(row_major_index(p.scale(k).add(IndexExpr(j)), src.shape))).store(
            Scalar(_from_bits(part, src.dtype), src.dtype))
