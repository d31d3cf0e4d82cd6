"""The semantic layer of the frontend: builds tile ops from frontend values.

The AST visitor (parser.py) handles control flow and scoping and calls into
this layer for everything that creates ops: allocations, tile operations,
loops and kernels (its parts are mixed in: copies.py, threads.py, roles.py,
reducers.py, random.py). Checks that need the user's intent (which side of
a copy gives the extent, whether an op is inside a kernel) live here and report
errors at the user's line; shape and type rules of single ops are left to the
dialect verifiers, whose messages are mapped back to the same line.
"""

from __future__ import annotations

import contextlib
from typing import Dict, List, Optional, Sequence, Tuple

from ..base import dtypes as dt
from ..base.dtypes import DType
from ..base.errors import SourceLocation, TileLangError, TileLangValueError, program_error
from ..base.signature import SymbolicDim
from ..language.values import (Buffer, BufferRef, IndexExpr, Scalar, _describe, constant, is_float8,
                               lane_vector, physical_shape, static_int, storage_ir_type, to_index, to_scalar,
                               to_storage, is_runtime, _unwrap_ref)
from ..language.values import row_major_index as _row_major_index
from ..language.values import row_major_position as _row_major_position
from ..language.values import reshape_index

from .copies import CopyBuilder, _logical_element, _static_dims
from .random import RandomBuilder
from .reducers import Reducer, ReducerBuilder
from .roles import RoleBuilder
from .threads import ThreadBuilder

SCOPES = ("shared", "fragment", "local", "var")

# How a host symbolic expression (SymExpr) computes on index values.
_INDEX_OPS = {
    "max": lambda a, b: to_index(a).minmax(to_index(b), "max"),
    "min": lambda a, b: to_index(a).minmax(to_index(b), "min"),
    "ceildiv": lambda a, b: to_index(a).add(to_index(b)).add(IndexExpr(-1)).floordiv(to_index(b)),
}


def _ir():
    from .. import ir

    return ir


def _tile():
    from ..dialects import tile

    return tile


def _computes_wide(dtype: DType) -> bool:
    """Whether tile operations compute on `dtype`'s elements in a wider type
    (float8 and narrower floats, packed 4-bit elements): see `_wide`."""
    return is_float8(dtype) or dtype.pack > 1


def _wide(dtype: DType) -> DType:
    """The type a reduction or scan of narrow `dtype` elements computes in."""
    return dt.float32 if dtype.is_float else dt.int32


class Builder(CopyBuilder, RoleBuilder, ThreadBuilder, ReducerBuilder, RandomBuilder):
    """Emits the tile IR of one function."""

    def __init__(self, filename: str):
        self.filename = filename
        self.location: Optional[SourceLocation] = None
        self.kernel_depth = 0
        self.kernel_threads: Optional[int] = None
        self.block_indices: Tuple[IndexExpr, ...] = ()
        self.grid_extents: Tuple = ()
        self.symbols: Dict[object, IndexExpr] = {}
        # The eager style's declarations (frontend/eager.py) while an eager
        # program is walked; T.const and T.empty fail where it is None.
        self.eager = None
        self._names: Dict[str, int] = {}
        # Values bound to names from elements (`x = A[i]`, TileLang's let):
        # id -> (value, element), for the operations that take the element
        # itself (TileLang's get_let_value: atomics, copies, fills, pointers).
        self._let_elements: Dict[int, tuple] = {}
        self._remapped: List[Buffer] = []  # global tensors with a T.Layout in this kernel
        self._safe_valued: List[Buffer] = []  # T.annotate_safe_value's tensors in this kernel
        self.kernel_op = None  # the tile.kernel being built
        self.pipelined_depth = 0  # T.Pipelined loops around the insertion point
        # The program's T.alloc_global workspaces, in order (PrimFunc.emit).
        self.workspaces: List[Buffer] = []
        # The T.Parallel loops being built, innermost last: (op, ivs, extents).
        self._parallel_stack: List[tuple] = []
        self._reducers: List[Reducer] = []  # T.alloc_reducer handles of this kernel
        self.rng = None  # the state of the latest T.rng_init (frontend/random.py)
        # memref.extract_strided_metadata of each strided tensor argument.
        self._strided_meta: Dict = {}
        # T.annotate_pass_configs / T.annotate_compile_flags of the program.
        self.function_pass_configs: Dict = {}
        self.function_compile_flags: List[str] = []
        # The condition under which the side of a T.if_then_else being
        # evaluated is taken (None outside one): its shared-memory reads
        # read element 0 where it does not hold (values.BufferRef.load).
        self.load_guard = None
        # > 0 while an annotation is evaluated: sizes stay host expressions.
        self.raw_symbols = 0
        # T.import_source's CUDA sources, and the wrapper of each signature
        # T.call_extern calls them with (compiler/extern.py).
        self.extern_sources: List[str] = []
        self.extern_wrappers: Dict[tuple, Tuple[str, str]] = {}

    @property
    def parallel_depth(self) -> int:
        """How many T.Parallel loops are around the current position."""
        return len(self._parallel_stack)

    # -- locations -----------------------------------------------------------
    def source_location(self) -> Optional[SourceLocation]:
        return self.location

    def error(self, message: str, notes: tuple = (), kind: Optional[type] = None,
              at_definition: bool = False) -> TileLangError:
        """An error at the current line; `kind`/`at_definition`: the Python
        exception type TileLang raises for it and whether it does so when
        the program is defined (base.errors.program_error)."""
        return program_error(message, self.location, notes, kind, at_definition)

    def ir_location(self, loc: SourceLocation):
        return _ir().Location.file(loc.filename, loc.line, loc.col)

    def unique_name(self, base: str) -> str:
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    # -- kernel ----------------------------------------------------------------
    def require_kernel(self, what: str) -> None:
        if self.kernel_depth == 0:
            raise self.error(f"{what} must be inside `with T.Kernel(...)`")

    @contextlib.contextmanager
    def kernel(self, grid: Sequence, threads, cluster=None) -> Tuple[IndexExpr, ...]:
        if self.kernel_depth:
            raise self.error("T.Kernel cannot be nested in another T.Kernel")
        if not 1 <= len(grid) <= 3:
            raise self.error(f"T.Kernel takes 1 to 3 grid extents, got {len(grid)}")
        if isinstance(threads, (list, tuple)):
            thread_extents = [static_int(t, "threads") for t in threads]
        else:
            thread_extents = [static_int(threads, "threads")]
        total = 1
        for t in thread_extents:
            if t <= 0:
                raise self.error(f"thread extents must be positive, got {t}")
            total *= t
        if total > 1024:
            raise self.error(f"a block has at most 1024 threads, got {total}")
        extents = []
        for i, g in enumerate(grid):
            e = to_index(g, f"grid extent {i}")
            if e.is_const() and e.const <= 0:
                raise self.error(f"grid extent {i} must be positive, got {e.const}")
            extents.append(e.materialize())
        op = _tile().kernel(extents, thread_extents)
        self.kernel_op = op
        self._thread_index = None
        if cluster is not None:
            self.set_cluster(cluster, grid)
        block = op.body.blocks[0]
        names = ("bx", "by", "bz")
        indices = tuple(IndexExpr.of(block.arguments[i], names[i]) for i in range(len(grid)))
        self.kernel_depth += 1
        self.kernel_threads = total
        self.block_indices = indices
        self.grid_extents = tuple(e.const if e.is_const() else e for e in
                                  (to_index(g) for g in grid))
        try:
            with _ir().InsertionPoint.at_block_terminator(block):
                yield indices
                self.check_reducers_finalized()
        finally:
            self.kernel_depth -= 1
            self.kernel_threads = None
            for buf in self._remapped:  # a T.Layout annotation holds in its kernel
                buf.remap = None
            self._remapped = []
            for buf in self._safe_valued:  # so does a safe value
                buf.safe_value = None
            self._safe_valued = []

    # -- arguments -----------------------------------------------------------
    @staticmethod
    def tensor_type(shape: Sequence, dtype: DType, strides: Optional[Sequence] = None):
        """The memref type of a tensor argument: dynamic where a size is
        symbolic; with `strides` (T.StridedTensor), a strided layout whose
        symbolic strides are dynamic."""
        ir = _ir()
        dtype = dt.as_dtype(dtype)
        dyn = ir.ShapedType.get_dynamic_size()
        dims = [d if isinstance(d, int) else dyn for d in physical_shape(shape, dtype)]
        if strides is None:
            return ir.MemRefType.get(dims, storage_ir_type(dtype))
        dyn_stride = ir.ShapedType.get_dynamic_stride_or_offset()
        physical = []
        for i, s in enumerate(strides):
            if not isinstance(s, int):
                physical.append(dyn_stride)
            elif i == len(strides) - 1 or dtype.pack == 1:
                physical.append(s)
            elif s % dtype.pack:
                raise TileLangError(f"stride {i} ({s}) of a {dtype} tensor must be a multiple "
                                    f"of {dtype.pack} (its elements are packed {dtype.pack} a "
                                    "byte)")
            else:
                physical.append(s // dtype.pack)
        if dtype.pack > 1 and physical and physical[-1] not in (1, dyn_stride):
            raise TileLangError(f"the last stride of a {dtype} tensor must be 1 (its elements "
                                f"are packed {dtype.pack} a byte), got {strides[-1]}")
        layout = ir.StridedLayoutAttr.get(0, physical)
        return ir.MemRefType.get(dims, storage_ir_type(dtype), layout)

    def bind_symbols(self, arg, shape: Sequence, strides: Optional[Sequence] = None,
                     pack: int = 1) -> None:
        """Binds the symbolic sizes that appear bare in `shape` (or
        `strides`) of tensor argument `arg` and are not bound yet: the size
        (memref.dim) or stride (memref.extract_strided_metadata) there
        (a packed 4-bit tensor's memref counts bytes: `pack` elements in
        the last dimension, and in the strides of the others)."""
        for i, d in enumerate(shape):
            if isinstance(d, SymbolicDim) and d not in self.symbols:
                value = self._arg_size(arg, i, len(shape), pack)
                self.symbols[d] = value
        for i, s in enumerate(strides or ()):
            if isinstance(s, SymbolicDim) and s not in self.symbols:
                self.symbols[s] = self._arg_stride(arg, i, len(strides), pack)

    @staticmethod
    def _arg_size(arg, i: int, rank: int, pack: int) -> IndexExpr:
        """Logical size `i` of tensor argument `arg`."""
        from ..dialects import memref

        size = IndexExpr.of(memref.DimOp(arg, constant(i, dt.index)).result)
        return size.scale(pack) if i == rank - 1 else size

    def _arg_stride(self, arg, i: int, rank: int, pack: int) -> IndexExpr:
        """Logical stride `i` of tensor argument `arg`."""
        from ..dialects import memref

        meta = self._strided_meta.get(arg)
        if meta is None:
            meta = self._strided_meta[arg] = memref.ExtractStridedMetadataOp(arg)
        stride = IndexExpr.of(meta.strides[i])
        return stride if i == rank - 1 else stride.scale(pack)

    def symbolic_value(self, expr, what: str = "a size"):
        """The index value of a host symbolic expression (SymExpr) in this
        program: its symbols must be bound by the tensor arguments (the
        eager style's probe, which walks the body before they exist, keeps
        the expression)."""
        if self.raw_symbols or (self.eager is not None and self.eager.probe):
            return expr
        if self.eager is not None and any(sym not in self.symbols
                                          for sym in expr.symbol_objects()):
            # The eager style computes with sizes before the annotations
            # that bind them (`shape = [seq_len * heads, D]`): the host
            # expression stays one until it is used.
            return expr

        def lookup(sym):
            if sym not in self.symbols:
                raise self.error(f"symbolic size {sym.name!r} (in {what} {expr.text()}) does "
                                 "not appear in the shape of any tensor argument")
            return self.symbols[sym]
        return expr.evaluate(lookup, _INDEX_OPS)

    def _solve_symbol(self, expr, size: IndexExpr, what: str) -> None:
        """Binds the one unbound symbol of affine expression `expr`, whose
        value is `size` (a tensor's size or stride)."""
        unknown = [s for s in expr.symbol_objects() if s not in self.symbols]
        if not unknown:
            return
        if len(unknown) > 1:
            raise self.error(f"{what} is {expr.text()}, which does not determine the symbolic "
                             f"sizes {', '.join(s.name for s in unknown)}: one of them must "
                             "appear alone as a size of some tensor")
        sym = unknown[0]

        def at(value):
            def lookup(s):
                return IndexExpr(value) if s is sym else self.symbols[s]
            return to_index(expr.evaluate(lookup, _INDEX_OPS))

        b = at(0)
        a = at(1).add(b, -1)
        if not a.is_const() or a.const == 0 or not at(2).add(b, -1).same(a.scale(2)):
            raise self.error(f"{what} is {expr.text()}: a symbolic size that appears only in "
                             "expressions must appear in one of the form a * n + b")
        self.symbols[sym] = size.add(b, -1).floordiv(a)

    def tensor_argument(self, arg, name: str, dtype: DType, shape: Sequence,
                        strides: Optional[Sequence] = None) -> Buffer:
        """The global Buffer of tensor argument `arg`: `shape` (and
        `strides`) hold ints, SymbolicDims and SymExprs; a symbol's value is
        read (memref.dim, or the strided metadata) from the first tensor
        that has it bare, or solved from an expression (`n * 4`)."""
        from ..base.signature import SymExpr

        pack = dt.as_dtype(dtype).pack
        self.bind_symbols(arg, shape, strides, pack)
        for i, d in enumerate(shape):
            if isinstance(d, SymExpr) and not isinstance(d, SymbolicDim):
                self._solve_symbol(d, self._arg_size(arg, i, len(shape), pack),
                                   f"dimension {i} of {name!r}")
        for i, s in enumerate(strides or ()):
            if isinstance(s, SymExpr) and not isinstance(s, SymbolicDim):
                self._solve_symbol(s, self._arg_stride(arg, i, len(strides), pack),
                                   f"stride {i} of {name!r}")
        dims = []
        for i, d in enumerate(shape):
            if isinstance(d, SymExpr):
                d = to_index(self.symbolic_value(d, f"dimension {i} of {name!r}"))
                if d.is_const():
                    d = d.const
            dims.append(d)
        buf = Buffer(arg, dims, dtype, "global", name)
        buf.strided = strides is not None
        return buf

    # -- allocation ----------------------------------------------------------
    def alloc(self, shape, dtype, scope: str, name: str = "", hoist: bool = False) -> Buffer:
        what = f"T.alloc_{scope}"
        self.require_kernel(what)
        if scope not in SCOPES:
            raise self.error(f"unknown scope {scope!r}; expected one of {SCOPES}")
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise self.error(f"{what}: shape must be a tuple of integers, got {_describe(shape)}")
        dims = [static_int(d, f"{what}: dimension {i} of the shape") for i, d in enumerate(shape)]
        if scope == "var":
            dims = []
        for i, d in enumerate(dims):
            if d <= 0:
                raise self.error(f"{what}: dimension {i} must be positive, got {d}")
        try:
            dtype = dt.as_dtype(dtype)
        except TypeError as e:
            raise self.error(f"{what}: {e}") from None
        tile = _tile()
        op_class = {"shared": tile.AllocSharedOp, "fragment": tile.AllocFragmentOp,
                    "local": tile.AllocLocalOp, "var": tile.AllocVarOp}[scope]
        if lane_vector(dtype) and scope in ("var", "local"):
            # A vector dtype's lanes as a last dimension of a thread's own
            # buffer (a var of one: a local buffer of its lanes).
            ty = tile.buffer_type(dims + [dtype.lanes], storage_ir_type(dtype), "local")
            op_class = tile.AllocLocalOp
        else:
            ty = tile.buffer_type(physical_shape(dims, dtype), storage_ir_type(dtype), scope)
        # At the top of the kernel: where asked (not in a loop that may not
        # allocate), and inside a T.Pipelined loop, whose statements are its
        # schedule's (TileLang's buffers are the kernel's wherever written).
        if hoist or self.pipelined_depth:
            with _ir().InsertionPoint.at_block_begin(self.kernel_op.body.blocks[0]):
                value = op_class(ty).result
        else:
            value = op_class(ty).result
        buf = Buffer(value, dims, dtype, scope, name or self.unique_name(scope))
        buf.unnamed = not name  # the program's name comes at its assignment
        return buf

    # -- regions ---------------------------------------------------------------
    def region_truth(self, x, op: str, what: str):
        """T.any_of (`op` "or") / T.all_of ("and") of the elements of a
        buffer or region, each taken as a bool: unrolled for small regions,
        else a loop over a boolean T.alloc_var."""
        from ..language.values import logical

        self.require_kernel(what)
        buf, offsets, extents = self._region(x, what)
        extents = [1 if e is None else e for e in extents]
        total = 1
        for e in extents:
            total *= e

        def element(ivs):
            index = tuple(o.add(to_index(i)) for o, i in zip(offsets, ivs))
            return to_scalar(buf[index].load(), dt.boolean)

        if total <= 64:
            import itertools

            result = None
            for ivs in itertools.product(*(range(e) for e in extents)):
                v = element(ivs)
                result = v if result is None else logical(op, result, v)
            return result
        acc = self.alloc((), dt.boolean, "var")
        acc[()].store(op == "and")
        with contextlib.ExitStack() as stack:
            ivs = [stack.enter_context(self.serial(0, e, 1)) for e in extents]
            acc[()].store(logical(op, acc[()].load(), element(ivs)))
        return acc[()].load()

    def bind_element(self, ref):
        """`x = A[i, j]`: the element's value read here, remembered as read
        from that element (see `element_of`)."""
        value = ref.load()
        self._let_elements[id(value)] = (value, ref)
        return value

    def element_of(self, x):
        """The element a value bound from one was read from (TileLang's
        get_let_value: `x = A[i]; T.atomic_add(x, 1)` updates A[i]); any
        other argument as it is."""
        hit = self._let_elements.get(id(x))
        return hit[1] if hit is not None and hit[0] is x else x

    def fill(self, buf, value, what: str = "T.fill") -> None:
        self.require_kernel("T.fill")
        buf = self.element_of(buf)
        if isinstance(buf, Reducer):
            self.reducer_fill(buf, value, what)
            return
        if isinstance(buf, BufferRef):
            self.no_reducer(buf, what)
            if buf.dynamic_region():  # x[a:b] of run-time bounds: element by element
                whole = buf.buffer
                bounds = buf.bounds()
                with self.parallel([e for _, e in bounds if e is not None] or [1]) as ivs:
                    it = iter(ivs)
                    index = tuple(o if e is None else o.add(next(it)) for o, e in bounds)
                    whole[index].store(value)
                return
            whole, offsets, extents = self._region(buf, what)
            extents = [1 if e is None else e for e in extents]
            dims = _static_dims(whole)
            if all(o.is_const() and o.const == 0 for o in offsets) and extents == dims:
                buf = whole
            else:  # a part of the buffer: element by element
                with self.parallel(extents) as ivs:
                    whole[tuple(o.add(i) for o, i in zip(offsets, ivs))].store(value)
                return
        if not isinstance(buf, Buffer):
            raise self.error(f"T.fill expects a buffer, got {_describe(buf)}")
        if buf.pack > 1 or buf.strided or buf.remap is not None or buf.bitview is not None \
                or buf.scope == "global":
            # Elements a tile.fill cannot write as they are (and global
            # tensors: tile.fill is for on-chip buffers on GPUs): one by
            # one (a packed buffer a whole byte per iteration).
            shape, unit = list(buf.static_shape("T.fill")), buf.pack
            with self.parallel(shape[:-1] + [shape[-1] // unit]) as ivs:
                for r in range(unit):
                    last = ivs[-1].scale(unit).add(IndexExpr(r))
                    buf[tuple(ivs[:-1]) + (last,)].store(value)
            return
        if any(isinstance(d, IndexExpr) and not d.is_const() for d in buf.shape):
            raise self.error(f"T.fill: buffer {buf.name!r} has a dynamic shape")
        self._direct(buf, "T.fill")
        _tile().FillOp(buf.value, to_storage(value, buf.dtype))

    def _direct(self, buf: Buffer, what: str) -> None:
        """Refuses a buffer whose elements are placed by a T.Layout or seen
        through a view, for an operation that takes the memref as it is."""
        if buf.remap is not None or buf.strided or buf.pack > 1 or buf.bitview is not None \
                or lane_vector(buf.dtype):
            raise self.error(f"not supported by tilelang-mlir: {what} on {buf.name!r}, a "
                             "tensor placed by a T.Layout, seen through a view, strided, "
                             "of packed 4-bit elements or of a vector dtype (loads and "
                             "stores are)")

    def _whole(self, x, what: str) -> Buffer:
        self.no_reducer(x, what)
        if isinstance(x, Buffer):
            self._direct(x, what)
            return x
        if isinstance(x, BufferRef):
            raise self.error(f"{what} takes whole buffers, got a region of {x.buffer.name!r}")
        raise self.error(f"{what} expects a buffer, got {_describe(x)}")

    @contextlib.contextmanager
    def _through_views(self):
        """For a tile operation that takes memrefs as they are: yields
        `whole(x, what, written=False)`, which gives a buffer seen through a
        T.reshape/T.view of an on-chip buffer as a fresh buffer of the view's
        shape holding its elements (copied element by element), and, for an
        operand the operation writes, copies them back after it."""
        back = []

        def whole(x, what: str, written: bool = False) -> Buffer:
            if not (isinstance(x, Buffer) and x.scope != "global"
                    and (x.remap is not None or x.bitview is not None)):
                return self._whole(x, what)
            shape = list(x.static_shape(what))
            copy = self.alloc(shape, x.dtype, x.scope, self.unique_name(f"{x.name}_copy"),
                              hoist=True)
            self._copy_elements(x, [IndexExpr(0)] * x.ndim, shape, copy,
                                [IndexExpr(0)] * x.ndim, shape)
            if written:
                back.append((copy, x, shape))
            return copy

        yield whole
        for copy, view, shape in back:
            self._copy_elements(copy, [IndexExpr(0)] * view.ndim, shape, view,
                                [IndexExpr(0)] * view.ndim, shape)

    def _tile_view(self, x, what: str) -> Buffer:
        """A whole buffer, or a region of a shared buffer (`A_shared[s, :, :]`:
        one stage of a multi-buffered tile) as a view (memref.subview) of its
        non-unit dimensions."""
        if not isinstance(x, BufferRef) or x.buffer.scope != "shared":
            return self._whole(x, what)
        buf = x.buffer
        offsets, extents = x.offsets_extents()
        sizes = [1 if e is None else e for e in extents]
        kept = [d for d, e in enumerate(sizes) if e != 1] or [len(sizes) - 1]
        shape = [int(n) for n in buf.shape]
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        for o, e, n in zip(offsets, sizes, shape):
            if o.is_const() and not 0 <= o.const <= n - e:
                raise self.error(f"{what}: the region of {buf.name!r} ({x!r}) is outside its "
                                 f"shape {tuple(shape)}")
        ir = _ir()
        from ..dialects import memref

        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        static_offsets = [o.const if o.is_const() else dynamic for o in offsets]
        offset = (sum(o * st for o, st in zip(static_offsets, strides))
                  if dynamic not in static_offsets else dynamic)
        layout = ir.StridedLayoutAttr.get(offset, [strides[d] for d in kept])
        ty = ir.MemRefType.get([sizes[d] for d in kept], storage_ir_type(buf.dtype), layout,
                               ir.MemRefType(buf.value.type).memory_space)
        view = memref.SubViewOp(ty, buf.value, [o.materialize() for o in offsets if not o.is_const()],
                                [], [], static_offsets, sizes, [1] * len(sizes)).result
        return Buffer(view, [sizes[d] for d in kept], buf.dtype, "shared", buf.name)

    def gemm(self, A, B, C, transpose_A=False, transpose_B=False, policy=None,
             clear_accum=False, k_pack=1, async_=False, require_wgmma=False) -> None:
        self.require_kernel("T.gemm")
        clear_accum = _unwrap_ref(clear_accum)
        if is_runtime(clear_accum):
            # clear_accum=(k == 0) of a loop's variable (TileLang takes any
            # condition): the accumulator is cleared where it holds, then
            # accumulated into
            from ..dialects import scf

            if_op = scf.IfOp(to_scalar(clear_accum, dt.boolean).value, [], has_else=False)
            with _ir().InsertionPoint(if_op.then_block):
                self.fill(C, 0, "T.gemm(clear_accum=...)")
                scf.YieldOp([])
            clear_accum = False
        if any(isinstance(x, (Buffer, BufferRef)) and _buffer_of(x).dtype.name in ("int4", "uint4")
               for x in (A, B)):
            return self._gemm_int4(A, B, C, transpose_A, transpose_B, policy, clear_accum)
        with self._through_views() as whole:
            a, b = (whole(x, f"T.gemm operand {n}") if isinstance(x, Buffer) else
                    self._tile_view(x, f"T.gemm operand {n}") for x, n in ((A, "A"), (B, "B")))
            c = whole(C, "T.gemm operand C", written=True)
            ir = _ir()
            kwargs = _gemm_attributes(transpose_A, transpose_B, clear_accum, policy)
            k_pack = static_int(k_pack, "k_pack")
            if k_pack != 1:
                kwargs["k_pack"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k_pack)
            if async_:
                kwargs["async_"] = True
            op = _tile().GemmOp(a.value, b.value, c.value, **kwargs)
            if require_wgmma:  # T.wgmma_gemm: wgmma or an error on wgmma targets
                op.operation.attributes["tile.require_wgmma"] = ir.UnitAttr.get()

    def _gemm_int4(self, A, B, C, transpose_A, transpose_B, policy, clear_accum) -> None:
        """T.gemm of packed int4 tiles (two a byte, even K index in the low
        nibble, as TileLang packs them): tile.gemm {int4} on their bytes."""
        a_buf, b_buf = _buffer_of(A), _buffer_of(B)
        if a_buf.dtype.name != "int4" or b_buf.dtype.name != "int4":
            raise self.error(f"not supported by tilelang-mlir: T.gemm of {a_buf.dtype} and "
                             f"{b_buf.dtype}: a 4-bit gemm takes int4 A and B (signed; uint4 "
                             "and mixes with other types are not built)")
        if transpose_A or not transpose_B:
            raise self.error("T.gemm of int4 tiles needs A as M x K and B as N x K "
                             "(transpose_B=True): the packed pairs run along K")
        operands = []
        for x, n in ((A, "A"), (B, "B")):
            if not isinstance(x, Buffer) or x.scope != "shared" or x.remap is not None or \
                    x.bitview is not None or x.strided:
                raise self.error(f"T.gemm of int4 tiles: operand {n} must be a whole shared "
                                 "buffer (T.alloc_shared)")
            operands.append(x)
        c = self._whole(C, "T.gemm operand C")
        if c.dtype.name != "int32":
            raise self.error(f"T.gemm of int4 tiles accumulates in int32, got C of {c.dtype}")
        kwargs = _gemm_attributes(False, True, clear_accum, policy)
        kwargs["int4"] = True
        _tile().GemmOp(operands[0].value, operands[1].value, c.value, **kwargs)

    def gemm_wait(self, pending) -> None:
        self.require_kernel("T.wait_wgmma")
        pending = static_int(pending, "pending")
        if pending < 0:
            raise self.error(f"T.wait_wgmma: pending must be non-negative, got {pending}")
        _tile().GemmWaitOp(_ir().IntegerAttr.get(_ir().IntegerType.get_signless(64), pending))

    def gemm_sp(self, A, E, B, C, transpose_B=False, policy=None, clear_accum=False) -> None:
        self.require_kernel("T.gemm_sp")
        a, e, b, c = (self._whole(x, f"T.gemm_sp operand {n}")
                      for x, n in ((A, "A"), (E, "E"), (B, "B"), (C, "C")))
        kwargs = _gemm_attributes(False, transpose_B, clear_accum, policy)
        _tile().GemmSpOp(a.value, e.value, b.value, c.value, **kwargs)

    def reduce(self, kind: str, src, dst, dim: int, clear: bool,
               nan_propagate: bool = False) -> None:
        """tile.reduce; as in TileLang, a shared (or global, or region)
        operand is staged through a fragment of its shape (T.copy in, and for
        the destination T.copy back, after a copy in when not `clear`); a
        reduction from a local buffer into a local buffer or var stays in
        each thread."""
        what = f"T.reduce_{kind}"
        self.require_kernel(what)
        s = self._reduce_side(src, f"{what} source")
        d = self._reduce_side(dst, f"{what} destination")
        dim = static_int(dim, "dim")
        if not -s.ndim <= dim < max(s.ndim, 1):
            raise self.error(f"{what}: dim {dim} is out of range for a source of rank {s.ndim}")
        if dim < 0:
            dim += s.ndim
        if kind in ("bitand", "bitor", "bitxor"):
            for side, buf in (("source", s), ("destination", d)):
                if not (buf.dtype.is_int or buf.dtype.is_bool):
                    raise self.error(f"{what} requires integer or bool buffers, got {side} "
                                     f"{buf.name!r} of dtype {buf.dtype}", kind=ValueError,
                                     at_definition=True)
        local = s.scope == "local" and d.scope in ("local", "var")
        # float8 and packed 4-bit elements are computed on in a wider type
        # (as TileLang's reduce converts each element to the destination's
        # type): such a source is staged in the destination's dtype (float32
        # or int32 if that is narrow too), such a destination in float32 or
        # int32, rounded once at the copy back.
        d_type = _wide(d.dtype) if _computes_wide(d.dtype) else d.dtype
        s_type = d_type if _computes_wide(s.dtype) else s.dtype
        scope = "local" if local else "fragment"

        def direct(buf, dtype):
            return buf.scope == scope and buf.dtype == dtype

        s_frag = s if direct(s, s_type) else self._staged(s, src, what, s_type, scope)
        d_frag = d if direct(d, d_type) or (local and d.dtype == d_type) else \
            self._staged(d, None, what, d_type, scope)
        if d_frag is not d and not clear:
            self.copy(dst, d_frag)
        ir = _ir()
        kwargs = {"clear": True} if clear else {}
        if nan_propagate and kind in ("max", "min", "absmax"):
            kwargs["nan_propagate"] = True
        for side, buf in (("src_element", s_frag), ("dst_element", d_frag)):
            logical = _logical_element(buf.dtype)
            if logical is not None:
                kwargs[side] = ir.TypeAttr.get(ir.Type.parse(logical))
        _tile().ReduceOp(s_frag.value, d_frag.value, ir.Attribute.parse(f"#tile.reduce<{kind}>"),
                         ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim), **kwargs)
        if d_frag is not d:
            self.copy(d_frag, dst)

    def _reduce_side(self, x, what: str) -> Buffer:
        """The whole buffer an operand of a reduction names, or for a region
        (`S[i, 0:64]`) or a buffer whose memref is not its elements as they
        are (a T.view / T.reshape, a T.Layout, strides, packed 4-bit) a
        stand-in of its shape (point indices as extent 1) and scope
        "region", which is always staged (T.copy reads and writes those)."""
        self.no_reducer(x, what)
        if isinstance(x, BufferRef):
            offsets, extents = x.offsets_extents()
            shape = [1 if e is None else int(e) for e in extents]
            return Buffer(None, shape, x.buffer.dtype, "region", x.buffer.name)
        if not isinstance(x, Buffer):
            raise self.error(f"{what} expects a buffer or a buffer region, got {_describe(x)}")
        if any(isinstance(n, IndexExpr) and not n.is_const() for n in x.shape):
            raise self.error(f"{what}: buffer {x.name!r} has a dynamic shape; reduce a "
                             "region of it with static extents")
        if x.remap is not None or x.bitview is not None or x.strided or x.pack > 1:
            return Buffer(None, list(x.static_shape(what)), x.dtype, "region", x.name)
        return x

    def _staged(self, side: Buffer, source, what: str, dtype=None,
                scope: str = "fragment") -> Buffer:
        """A fragment (or `scope` buffer) of `side`'s shape and of `dtype`
        (`side`'s by default), filled from `source` when given (converted)."""
        frag = self.alloc([int(n) for n in side.shape], dtype or side.dtype, scope,
                          self.unique_name(f"{side.name}_frag"))
        if source is not None:
            self.copy(source, frag, what=what)
        return frag

    def scan(self, kind: str, src, dst, dim: int, reverse: bool) -> None:
        """tile.cumsum of `kind` ("sum": T.cumsum, "max": T.cummax); regions
        (and operands in other scopes) are staged through fragments of their
        shape, as TileLang stages fragments through shared memory."""
        what = "T.cumsum" if kind == "sum" else "T.cummax"
        self.require_kernel(what)
        s = self._reduce_side(src, f"{what} source")
        d = self._reduce_side(dst if dst is not None else src, f"{what} destination")
        if list(s.shape) != list(d.shape):
            raise self.error(f"{what} dst shape {tuple(d.shape)} must match src shape "
                             f"{tuple(s.shape)}")
        dim = static_int(dim, "dim")
        if not -s.ndim <= dim < s.ndim:
            raise self.error(f"Dimension {dim} is out of bounds for buffer with shape "
                             f"{tuple(s.shape)}")
        if dim < 0:
            dim += s.ndim
        direct = ("fragment", "shared")
        # Packed 4-bit and float8 elements are scanned in float32 (int32):
        # staged, rounded once at the copy back.
        wide = None
        if _computes_wide(s.dtype) or _computes_wide(d.dtype):
            wide = _wide(d.dtype if d.dtype.is_float else s.dtype)
        s_tile = s if s.scope in direct and wide is None else self._staged(s, src, what, wide)
        d_tile = d if d.scope in direct and wide is None else (
            s_tile if dst is None or src is dst else self._staged(d, None, what, wide))
        ir = _ir()
        kwargs = {"reverse": True} if reverse else {}
        if kind != "sum":
            kwargs["kind"] = ir.Attribute.parse(f"#tile.reduce<{kind}>")
        logical = _logical_element(d_tile.dtype)
        if logical is not None:
            kwargs["element"] = ir.TypeAttr.get(ir.Type.parse(logical))
        _tile().CumSumOp(s_tile.value, d_tile.value,
                         ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim), **kwargs)
        if d_tile is not d:
            self.copy(d_tile, dst if dst is not None else src, what=what)

    def _flag(self, what: str, flag):
        """The buffer and index values of a flag element `F[i, ...]`."""
        self.require_kernel(what)
        if not isinstance(flag, BufferRef):
            raise self.error(f"{what} expects a flag element such as F[i] or F.peer(r)[i], "
                             f"got {_describe(flag)}")
        buf = flag.buffer
        if buf.scope != "global" or not buf.dtype.is_int:
            raise self.error(f"{what}: the flag {buf.name!r} must be an integer tensor in global "
                             f"memory, got {buf.dtype} in {buf.scope}")
        idx = buf.stored_index(flag._point_indices(what))
        return buf, [i.materialize() for i in idx]

    def signal(self, flag, value, op: str) -> None:
        buf, idx = self._flag("T.signal", flag)
        ir = _ir()
        _tile().SignalOp(to_storage(value, buf.dtype), buf.value, idx,
                         ir.Attribute.parse(f"#tile<signal {op}>"))

    def wait(self, flag, value, cmp: str, timeout_ms: int) -> None:
        buf, idx = self._flag("T.wait", flag)
        ir = _ir()
        _tile().WaitOp(to_storage(value, buf.dtype), buf.value, idx,
                       ir.Attribute.parse(f"#tile<wait {cmp}>"),
                       timeout_ms=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), timeout_ms))

    def atomic_add(self, dst, value, tma: bool = False) -> None:
        """`tma`: a shared tile into a global tensor as one bulk (TMA)
        reduction, where the tile's dimensions are the destination's
        trailing ones (else, as without it, element by element)."""
        self.require_kernel("T.atomic_add")
        scalar = not self.is_tile_value(value)
        if isinstance(dst, Buffer) and dst.ndim > 0 and scalar:
            # A whole buffer and a scalar: every element once (a tile add).
            return self.atomic_fill("add", dst, value, None, "T.atomic_add")
        if isinstance(dst, Buffer):
            buf, offsets = dst, [IndexExpr(0)] * dst.ndim
        elif isinstance(dst, BufferRef):
            buf = dst.buffer
            offsets, extents = dst.offsets_extents()
            if any(e is not None for e in extents):
                if scalar:  # a region and a scalar: every element once
                    return self.atomic_fill("add", dst, value, None, "T.atomic_add")
                # A region: its extents (the unit ones dropped) must be the
                # value tile's shape.
                if not isinstance(value, Buffer):
                    raise self.error("T.atomic_add: a sliced destination needs a tile value")
                sliced = [e for e in extents if e is not None and e != 1]
                if sliced != [d for d in value.shape if d != 1]:
                    raise self.error(f"T.atomic_add: the destination region of {buf.name!r} "
                                     f"has extents {[e for e in extents if e is not None]}, "
                                     f"the value {value.name!r} has shape {list(value.shape)}")
        else:
            raise self.error(f"T.atomic_add expects a buffer destination, got {_describe(dst)}")
        bulk = (tma and isinstance(value, Buffer) and value.scope == "shared"
                and buf.scope == "global" and buf.remap is None and value.dtype == buf.dtype
                and 1 <= value.ndim <= buf.ndim)
        if bulk and isinstance(dst, BufferRef) and any(e is not None for e in extents):
            trailing = list(range(buf.ndim - value.ndim, buf.ndim))
            bulk = [d for d, e in enumerate(extents) if e not in (None, 1)] == \
                [d for d in trailing if value.shape[d - trailing[0]] != 1]
        if bulk:
            _tile().AtomicAddOp(value.value, buf.value,
                                [o.materialize() for o in offsets], tma=True)
            return
        if isinstance(value, Buffer) and (value.scope != "fragment" or buf.remap is not None):
            # A shared, local (or global) tile, or a destination placed by a
            # T.Layout: one scalar atomic per element, in a T.Parallel over
            # the tile.
            if isinstance(dst, BufferRef) and any(e is not None for e in extents):
                dims = [d for d, e in enumerate(extents) if e is not None]
            else:
                dims = list(range(buf.ndim - value.ndim, buf.ndim))
            if len(dims) != value.ndim or dims[0] < 0:
                raise self.error(f"T.atomic_add: value {value.name!r} of rank {value.ndim} does "
                                 f"not match the destination region of {buf.name!r}")
            with self.parallel(list(value.shape)) as ivs:
                idx = list(offsets)
                for k, d in enumerate(dims):
                    idx[d] = offsets[d].add(ivs[k])
                elem = BufferRef(value, tuple(ivs)).load()
                _tile().AtomicAddOp(to_storage(elem, buf.dtype), buf.value,
                                    [o.materialize() for o in buf.stored_index(idx)])
            return
        if isinstance(value, Buffer):
            v = value.value
        else:
            v = to_storage(value, buf.dtype)
            offsets = buf.stored_index(offsets)
        _tile().AtomicAddOp(v, buf.value, [o.materialize() for o in offsets])

    # -- loops -------------------------------------------------------------------
    @contextlib.contextmanager
    def parallel(self, extents: Sequence, vector=None, loop_layout=None):
        self.require_kernel("T.Parallel")
        idx = [to_index(e, "T.Parallel extent") for e in extents]
        if not all(e.is_const() for e in idx):
            if loop_layout is not None:
                raise self.error("T.Parallel(..., loop_layout=...) over a run-time extent: the "
                                 "layout places a static loop's iterations")
            with self._parallel_dynamic(idx, vector) as ivs:
                yield ivs
            return
        ext = [static_int(e, "T.Parallel extent") for e in extents]
        for e in ext:
            if e <= 0:
                raise self.error(f"T.Parallel extents must be positive, got {e}")
        if vector is not None:
            vector = static_int(vector, "T.Parallel coalesced_width")
            if vector <= 0 or vector & (vector - 1):
                raise self.error("T.Parallel coalesced_width must be a positive power of two, "
                                 f"got {vector}")
        op = _tile().parallel(ext)
        if vector is not None:
            op.operation.attributes["vector"] = _ir().IntegerAttr.get(
                _ir().IntegerType.get_signless(64), vector)
        if loop_layout is not None:
            from ..language.layout import Fragment

            if not isinstance(loop_layout, Fragment):
                raise self.error(f"T.Parallel loop_layout must be a T.Fragment, got "
                                 f"{_describe(loop_layout)}")
            if list(loop_layout.shape) != list(ext):
                raise self.error(f"T.Parallel loop_layout: a T.Fragment of shape "
                                 f"{list(loop_layout.shape)} for a loop over {list(ext)}")
            op.operation.attributes["loop_layout"] = loop_layout.layout_attr(self.kernel_threads)
        block = op.body.blocks[0]
        ivs = tuple(IndexExpr.of(block.arguments[i], f"i{i}") for i in range(len(ext)))
        self._parallel_stack.append((op, ivs, ext))
        try:
            with _ir().InsertionPoint.at_block_terminator(block):
                yield ivs
        finally:
            self._parallel_stack.pop()

    @contextlib.contextmanager
    def _parallel_dynamic(self, extents: List[IndexExpr], vector=None):
        """T.Parallel over run-time extents: a dimension whose extent has a
        compile-time upper bound (`T.min(n, 128)`) runs over the bound; one
        without runs in chunks of the block's threads (the innermost such
        dimension; the others one index at a time) in a loop around the
        tile.parallel. Iterations past the extents are skipped."""
        from contextlib import ExitStack

        from ..dialects import scf
        from ..language.values import compare, logical

        static, offsets, guards = [], [], []
        unbounded = [d for d, e in enumerate(extents)
                     if not e.is_const() and _upper_bound(e) is None]
        with ExitStack() as stack:
            for d, e in enumerate(extents):
                if e.is_const():
                    static.append(e.const)
                    offsets.append(None)
                    continue
                if d in unbounded:
                    chunk = self.kernel_threads if d == unbounded[-1] else 1
                    trips = e.add(IndexExpr(chunk - 1)).floordiv(IndexExpr(chunk))
                    c = stack.enter_context(self.serial(0, trips, 1))
                    static.append(chunk)
                    offsets.append(c.mul(IndexExpr(chunk)))
                else:
                    bound = _upper_bound(e)
                    if bound <= 0:
                        static.append(1)
                    else:
                        static.append(bound)
                    offsets.append(None)
                guards.append((d, e))
            ivs = stack.enter_context(self.parallel(static, vector))
            ivs = tuple(iv if o is None else o.add(iv) for iv, o in zip(ivs, offsets))
            cond = None
            for d, e in guards:
                c = compare("<", ivs[d], e)
                cond = c if cond is None else logical("and", cond, c)
            if_op = scf.IfOp(to_scalar(cond, dt.boolean).value, [], has_else=False)
            with _ir().InsertionPoint(if_op.then_block):
                yield ivs
                scf.YieldOp([])

    @contextlib.contextmanager
    def pipelined(self, start, stop, num_stages, order=None, stage=None, group=None):
        self.require_kernel("T.Pipelined")
        lo, hi = to_index(start, "T.Pipelined start"), to_index(stop, "T.Pipelined stop")
        num_stages = static_int(num_stages, "num_stages")
        conv = lambda seq, what: None if seq is None else [static_int(x, what) for x in seq]
        op = _tile().pipelined(
            lo.materialize(), hi.materialize(), constant(1, dt.index), num_stages,
            order=conv(order, "order entry"), stage=conv(stage, "stage entry"),
            group=None if group is None else [conv(g, "group entry") for g in group])
        block = op.body.blocks[0]
        self.pipelined_depth += 1
        try:
            with _ir().InsertionPoint.at_block_terminator(block):
                yield IndexExpr.of(block.arguments[0], "k")
        finally:
            self.pipelined_depth -= 1

    @contextlib.contextmanager
    def serial(self, start, stop, step, annotation: Optional[str] = None):
        from ..dialects import scf

        lo = to_index(start, "loop start")
        hi = to_index(stop, "loop stop")
        st = to_index(step, "loop step")
        if st.is_const() and st.const == 0:
            raise self.error("loop step must not be zero")
        down = st.is_const() and st.const < 0
        if down:  # count down: k in [0, ceil((lo - hi) / -step)), i = lo + k * step
            span = lo.add(hi, -1).add(IndexExpr(-st.const - 1)).floordiv(IndexExpr(-st.const))
            trips = span.minmax(IndexExpr(0), "max")
            loop = scf.ForOp(constant(0, dt.index), trips.materialize(), constant(1, dt.index))
        else:
            loop = scf.ForOp(lo.materialize(), hi.materialize(), st.materialize())
        if annotation:
            loop.operation.attributes[annotation] = _ir().UnitAttr.get()
        with _ir().InsertionPoint(loop.body):
            iv = IndexExpr.of(loop.induction_variable, "i")
            yield lo.add(iv.scale(st.const)) if down else iv
            scf.YieldOp([])

    @contextlib.contextmanager
    def persistent(self, domain: Sequence, wave_size, index):
        """T.Persistent: a serial loop over the waves; in each, the tile
        `wave * wave_size + index` (skipped past the last tile), yielded as
        its row-major coordinates in `domain`."""
        from ..dialects import scf
        from ..language.values import compare

        self.require_kernel("T.Persistent")
        extents = [to_index(d, f"T.Persistent domain extent {i}") for i, d in enumerate(domain)]
        for i, e in enumerate(extents):
            if e.is_const() and e.const <= 0:
                raise self.error(f"T.Persistent domain extent {i} must be positive, got {e.const}")
        wave = to_index(wave_size, "T.Persistent wave_size")
        if not wave.is_const() or wave.const <= 0:
            raise self.error(f"T.Persistent wave_size must be a positive compile-time integer, "
                             f"got {wave}")
        index = to_index(index, "T.Persistent index")
        total = IndexExpr(1)
        for e in extents:
            total = total.mul(e)
        waves = total.add(IndexExpr(wave.const - 1)).floordiv(wave)
        with self.serial(0, waves, 1) as w:
            tile = w.mul(wave).add(index)
            inside = to_scalar(compare("<", tile, total), dt.boolean)
            if_op = scf.IfOp(inside.value, [], has_else=False)
            with _ir().InsertionPoint(if_op.then_block):
                yield tuple(_row_major_index(tile, extents))
                scf.YieldOp([])

    # -- annotations and debugging -----------------------------------------------
    def alloc_global(self, shape, dtype) -> Buffer:
        """The next workspace parameter of the program (PrimFunc.workspaces
        found each `X = T.alloc_global(...)` before emission)."""
        if self.kernel_depth:
            raise self.error("T.alloc_global allocates a workspace of the program: call it "
                             "outside `with T.Kernel(...)`")
        if self.eager is not None:  # the eager style: a hidden parameter made here
            if isinstance(shape, (int, IndexExpr)) or not isinstance(shape, (tuple, list)):
                shape = (shape,)
            try:
                dtype = dt.as_dtype(dtype)
            except TypeError as e:
                raise self.error(f"T.alloc_global: {e}") from None
            return self.eager.workspace(list(shape), dtype)
        queue = self.workspaces
        if not queue:
            raise self.error("T.alloc_global must be assigned to a name at the top level of "
                             "the program, outside T.Kernel: `X = T.alloc_global(shape, dtype)`")
        buf = queue.pop(0)
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        dims = [static_int(d, f"T.alloc_global: dimension {i} of the shape")
                for i, d in enumerate(shape)]
        if tuple(dims) != tuple(buf.shape) or dt.as_dtype(dtype) != buf.dtype:
            raise self.error(f"T.alloc_global {buf.name!r}: shape {dims} / {dt.as_dtype(dtype)} "
                             f"differ from {list(buf.shape)} / {buf.dtype} found before the "
                             "program ran (the shape must not depend on run-time values)")
        return buf

    def no_set_max_nreg(self) -> None:
        """Marks the kernel: a warp-specialized lowering keeps the block's
        register split (no setmaxnreg)."""
        self.require_kernel("T.no_set_max_nreg")
        self.kernel_op.operation.attributes["tile.no_set_max_nreg"] = _ir().UnitAttr.get()

    def use_swizzle(self, panel_size, order: str = "row", enable=True) -> None:
        self.require_kernel("T.use_swizzle")
        ir = _ir()
        # TileLang's orders: "row", "column" ("col" here too) and "mlx" (its
        # Metal-style panels; an order of visiting the tiles, each once: the
        # results are the row order's, which it runs as).
        order = {"column": "col", "mlx": "row"}.get(order, order)
        if order not in ("row", "col"):
            raise self.error(f"Unsupported swizzle order: {order!r} (TileLang's are 'row', "
                             "'column' and 'mlx')")
        panel = static_int(panel_size, "panel_size")
        if len(self.grid_extents) < 2:
            # TileLang's panel order over a one-dimensional grid (gridDim.y
            # == 1, one panel) maps every block to itself.
            return
        kwargs = {}
        if order != "row":
            kwargs["order"] = ir.Attribute.parse(f"#tile.raster<{order}>")
        if not enable:
            kwargs["enable"] = ir.BoolAttr.get(False)
        _tile().UseSwizzleOp(
            ir.IntegerAttr.get(ir.IntegerType.get_signless(64), panel), **kwargs)

    def annotate_safe_value(self, mapping) -> None:
        """T.annotate_safe_value({tensor: value}): an out-of-range element
        read of `tensor` gives `value` instead of zero, from here to the end
        of the kernel (element loads, and T.copy out of it)."""
        from ..language.values import storage_constant

        self.require_kernel("T.annotate_safe_value")
        if not isinstance(mapping, dict):
            raise self.error("T.annotate_safe_value expects a dict {tensor: value}, got "
                             f"{_describe(mapping)}")
        for buf, value in mapping.items():
            if not isinstance(buf, Buffer):
                raise self.error("T.annotate_safe_value keys must be tensors, got "
                                 f"{_describe(buf)}")
            if buf.scope != "global":
                raise self.error(f"T.annotate_safe_value: {buf.name!r} is a {buf.scope} buffer; "
                                 "safe values are what out-of-range reads of global tensors "
                                 "give (shared and local accesses are not checked)")
            if isinstance(value, IndexExpr) and value.is_const():
                value = value.const
            if not isinstance(value, (bool, int, float)):
                raise self.error(f"T.annotate_safe_value: the value for {buf.name!r} must be a "
                                 f"compile-time number, got {_describe(value)}")
            storage_constant(value, buf.dtype)  # representable in its type, or an error
            buf.safe_value = value
            if buf not in self._safe_valued:
                self._safe_valued.append(buf)

    def annotate_layout(self, mapping) -> None:
        self.require_kernel("T.annotate_layout")
        if not isinstance(mapping, dict):
            raise self.error("T.annotate_layout expects a dict {buffer: layout}")
        from ..language.layout import Fragment, Layout

        for buf, layout in mapping.items():
            if not isinstance(buf, Buffer):
                raise self.error(f"T.annotate_layout keys must be buffers, got {_describe(buf)}")
            if callable(layout) and not isinstance(layout, (Layout, Fragment)) and \
                    not hasattr(layout, "to_attr"):
                layout = Layout(buf.shape, layout)  # TileLang: a function is a T.Layout
            if isinstance(layout, Layout) and buf.scope == "shared":
                # Where each element of a shared buffer is stored: this
                # compiler places shared tiles itself and every access of
                # the language names logical elements, so a one-to-one
                # placement changes nothing; an aliasing one is refused (as
                # TileLang does).
                dims = _static_dims(buf)
                hit = layout.collision(dims) if None not in dims else None
                if hit is not None:
                    a, b, phys = hit
                    raise TileLangValueError(
                        f"T.annotate_layout on shared buffer `{buf.name}`: the layout must be "
                        f"injective, but logical indices {list(a)} and {list(b)} both map to "
                        f"physical coordinates {list(phys)}", self.location)
                continue
            if isinstance(layout, Layout):
                if buf.scope == "shared" and getattr(layout, "placement_only_in_shared", False):
                    # Where the elements lie in shared memory (CUTLASS's
                    # metadata placement): no value depends on it, and this
                    # compiler places shared buffers itself.
                    continue
                if buf.scope != "global":
                    raise self.error(
                        f"not supported by tilelang-mlir: a T.Layout on {buf.scope} buffer "
                        f"{buf.name!r} (T.Layout places the elements of global tensors; "
                        "fragments take a T.Fragment, shared buffers T.make_swizzled_layout)")
                self._remap_global(buf, layout)
                continue
            if isinstance(layout, Fragment) and buf.scope in ("local", "var"):
                # a thread's own buffer: every thread holds all of it, which
                # no thread mapping changes (TileLang lays out fragments only)
                continue
            if isinstance(layout, Fragment) and buf.scope != "fragment":
                raise self.error(f"a T.Fragment layout applies to fragments, {buf.name!r} is a "
                                 f"{buf.scope} buffer")
            if buf.scope == "global":
                raise self.error(f"T.annotate_layout on global tensor {buf.name!r} takes a "
                                 f"T.Layout, got {layout!r}")
            attr = layout.to_attr(buf) if hasattr(layout, "to_attr") else layout
            if isinstance(attr, str):
                attr = _ir().Attribute.parse(attr)
            owner = buf.value.owner
            if self.pipelined_depth and owner.name.startswith("tile.alloc_"):
                # A buffer of a T.Pipelined loop is allocated at the top of
                # the kernel (alloc): so is its layout, not one per step.
                with _ir().InsertionPoint.after(owner):
                    _tile().AnnotateLayoutOp(buf.value, attr)
            else:
                _tile().AnnotateLayoutOp(buf.value, attr)

    def _remap_global(self, buf: Buffer, layout) -> None:
        """Makes the kernel's accesses to global tensor `buf` go where
        `layout` places each element: the stored index, linearized in the
        layout's output shape, read back as an index of the tensor."""
        dims = _static_dims(buf)
        out = layout.output_shape(dims)
        if None not in dims:
            layout.check_bijective(dims)
        else:
            passed = sorted(s[1] for s in out if isinstance(s, tuple))
            dynamic = [i for i, d in enumerate(dims) if d is None]
            static_in = 1
            for i, d in enumerate(dims):
                if d is not None and i not in passed:
                    static_in *= d
            static_out = 1
            for s in out:
                if not isinstance(s, tuple):
                    static_out *= s
            if not set(dynamic) <= set(passed) or len(set(passed)) != len(passed) or \
                    static_in != static_out:
                raise self.error(f"T.Layout on {buf.name!r}: the layout must be a one-to-one map "
                                 "onto a shape of the same size (dimensions of run-time size may "
                                 "only be passed through)")
        out_ext = [buf.shape[s[1]] if isinstance(s, tuple) else s for s in out]

        def remap(indices):
            stored = [to_index(x, "T.Layout output") for x in layout.forward(indices)]
            return _row_major_index(_row_major_position(stored, out_ext), buf.shape)

        if buf.remap is None:
            self._remapped.append(buf)
        buf.remap = remap

    def view(self, src, shape, dtype=None, what: str = "T.reshape") -> Buffer:
        """A view of buffer `src` (a global tensor, a shared, fragment or
        local buffer) in another shape of the same size (row-major): an
        access to the view at index i goes to the element of `src` with the
        same row-major position. Tile operations that take the memref as it
        is (T.gemm, reductions) take a view through a copy of it
        (`materialized`)."""
        if not isinstance(src, Buffer):
            raise self.error(f"{what} takes a buffer, got {_describe(src)}")
        if dtype is not None and dt.as_dtype(dtype) != src.dtype:
            if src.dtype.lanes > 1 and dt.as_dtype(dtype) == src.dtype.element:
                return self._lane_view(src, shape, what)
            return self._bit_view(src, shape, dt.as_dtype(dtype), what)
        if src.scope == "var":
            raise self.error(f"{what} of T.alloc_var {src.name!r}: a scalar has no shape to "
                             "change")
        if shape is None:
            shape = src.shape
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        dims = [to_index(d, f"{what}: dimension {i} of the shape") for i, d in enumerate(shape)]
        new_shape = [d.const if d.is_const() else d for d in dims]
        if src.pack > 1 and not (dims and dims[-1].is_const() and dims[-1].const % src.pack == 0):
            # (An access to the view reaches src's element, whose byte and
            # nibble the packed load or store finds; a last dimension that
            # the packing divides keeps a byte's elements in one row.)
            raise self.error(f"not supported by tilelang-mlir: {what} of {src.name!r} (packed "
                             f"{src.dtype}, {src.pack} a byte) to shape {_fmt_shape(new_shape)}: "
                             f"the last dimension must be a multiple of {src.pack}")
        size, src_size = IndexExpr(1), IndexExpr(1)
        for d in dims:
            size = size.mul(d)
        for d in src.shape:
            src_size = src_size.mul(to_index(d))
        if size != src_size:  # TileLang asserts it when the program is defined
            raise self.error(f"{what}: shape {_fmt_shape(new_shape)} does not have the size of "
                             f"{src.name!r} ({_fmt_shape(src.shape)})", kind=AssertionError,
                             at_definition=True)
        view_dims = [d.const if d.is_const() else d for d in dims]  # symbolic: IndexExpr

        def remap(indices):
            return src.stored_index(reshape_index(indices, view_dims, src.shape))

        view = Buffer(src.value, new_shape, src.dtype, src.scope, f"{src.name}_view")
        view.remap = remap
        view.strided = src.strided
        return view

    def _lane_view(self, src: Buffer, shape, what: str) -> Buffer:
        """A buffer of a vector dtype (`T.alloc_local((n,), T.bfloat16x2)`)
        viewed as its lanes (`T.view(x, (2 * n,), T.bfloat16)`): element p
        is lane p % lanes of element p // lanes (deepseek-ai/TileKernels'
        packed amax)."""
        lanes = src.dtype.lanes
        if src.scope not in ("local", "var"):
            raise self.error(f"not supported by tilelang-mlir: {what} of {src.name!r} "
                             f"({src.scope}, {src.dtype}) as its lanes: views of vector "
                             "elements are of local buffers")
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        dims = [static_int(d, f"{what}: dimension {i} of the shape") for i, d in enumerate(shape)]
        src_dims = src.static_shape(what)
        count = 1
        for d in src_dims:
            count *= d
        size = 1
        for d in dims:
            size *= d
        if size != count * lanes:
            raise self.error(f"{what}: shape {_fmt_shape(dims)} does not hold the {count * lanes} "
                             f"lanes of {src.name!r} ({_fmt_shape(src.shape)} x {src.dtype})",
                             kind=AssertionError, at_definition=True)
        def remap(indices):  # storage: the element's indices, then its lane
            p = _row_major_position([to_index(i) for i in indices], dims)
            k = IndexExpr(lanes)
            element = _row_major_index(p.floordiv(k), src_dims) if src.scope == "local" else []
            return element + [p.mod(k)]

        view = Buffer(src.value, dims, src.dtype.element, "local", f"{src.name}_lanes")
        view.remap = remap
        return view

    def _bit_view(self, src: Buffer, shape, dtype: DType, what: str) -> Buffer:
        """A view of `src`'s bytes as elements of another `dtype` (TileLang's
        `T.view(X, shape, dtype)`): element p of the view (row-major) is the
        bits of src's elements p*k .. p*k+k-1 (a dtype k times as wide,
        the first in the low bits), or of 1/k of src's element p // k (a
        dtype k times narrower: such a view is read, not written)."""
        for d in (src.dtype, dtype):
            if d.lanes > 1 or d.pack > 1 or d.is_bool or d.kind in ("index", "handle") or \
                    not d.compute:
                raise self.error(f"not supported by tilelang-mlir: {what} between {src.dtype} "
                                 f"and {dtype} (views reinterpret whole bytes of scalar types)")
        if src.remap is not None or src.strided or src.bitview is not None:
            raise self.error(f"not supported by tilelang-mlir: {what} to {dtype} of "
                             f"{src.name!r}, which is itself a view or strided")
        src_dims = src.static_shape(what)
        if shape is None:
            shape = src_dims
        if isinstance(shape, (int, IndexExpr)):
            shape = (shape,)
        dims = [static_int(d, f"{what}: dimension {i} of the shape") for i, d in enumerate(shape)]
        size, src_size = 1, 1
        for d in dims:
            size *= d
        for d in src_dims:
            src_size *= d
        if size * dtype.bits != src_size * src.dtype.bits:
            raise self.error(f"{what}: {_fmt_shape(dims)} {dtype} elements ({size * dtype.bits} "
                             f"bits) do not cover {src.name!r} ({_fmt_shape(src_dims)} "
                             f"{src.dtype}, {src_size * src.dtype.bits} bits)")
        wide, narrow = max(dtype.bits, src.dtype.bits), min(dtype.bits, src.dtype.bits)
        if wide % narrow:
            raise self.error(f"not supported by tilelang-mlir: {what} between {src.dtype} and "
                             f"{dtype} (one width must be a multiple of the other)")
        view = Buffer(src.value, dims, dtype, src.scope, f"{src.name}_as_{dtype}")
        view.bitview = (src, dtype.bits // src.dtype.bits if dtype.bits >= src.dtype.bits
                        else -(src.dtype.bits // dtype.bits))
        return view

    def print(self, value, msg: str = "") -> None:
        self.require_kernel("T.print")
        ir = _ir()
        if isinstance(value, Buffer):
            self._direct(value, "T.print")
            v = value.value
        else:
            v = to_scalar(value).value
        kwargs = {"msg": ir.StringAttr.get(msg)} if msg else {}
        _tile().PrintOp(v, **kwargs)

    def device_assert(self, cond, msg: str = "") -> None:
        import linecache

        from ..language.values import is_runtime

        self.require_kernel("T.device_assert")
        if not isinstance(msg, str):
            raise self.error(f"T.device_assert takes a message string, got {_describe(msg)}")
        if not is_runtime(cond):
            if isinstance(cond, (bool, int, float)) and cond:
                return  # holds at compile time: nothing to check
            if not isinstance(cond, (bool, int, float)):
                raise self.error(f"T.device_assert takes a condition, got {_describe(cond)}")
        if not msg:
            # Like C's assert: the failing statement is the message.
            loc = self.location
            line = linecache.getline(loc.filename, loc.line).strip() if loc else ""
            msg = line or "T.device_assert failed"
        c = to_scalar(cond, dt.boolean)
        _tile().DeviceAssertOp(c.value, _ir().StringAttr.get(msg))


def _upper_bound(e: IndexExpr) -> Optional[int]:
    """A compile-time upper bound of index value `e` that its form shows
    (a constant, `min(x, c)`, a cast or select of such), or None."""
    if e.is_const():
        return e.const
    if len(e.terms) != 1:
        return None
    ((atom, coeff),) = e.terms.items()
    if coeff != 1:
        return None
    from ..language.values import OpAtom, ValueAtom

    bound = None
    if isinstance(atom, OpAtom) and atom.op == "min":
        sides = [b for b in (_upper_bound(atom.lhs), _upper_bound(atom.rhs)) if b is not None]
        bound = min(sides) if sides else None
    elif isinstance(atom, ValueAtom):
        bound = _value_upper_bound(atom.value, 8)
    return None if bound is None else bound + e.const


def _value_upper_bound(value, depth: int) -> Optional[int]:
    """An upper bound of an integer SSA value read off the ops that make it."""
    ir = _ir()
    if depth == 0 or isinstance(value.owner, ir.Block):
        return None
    op = value.owner
    name = op.name
    if name == "arith.constant":
        attr = op.attributes["value"]
        return int(ir.IntegerAttr(attr).value) if isinstance(attr, ir.IntegerAttr) else None
    if name in ("arith.index_cast", "arith.extsi", "arith.index_castui", "arith.extui"):
        return _value_upper_bound(op.operands[0], depth - 1)
    if name in ("arith.minsi", "arith.minui"):
        sides = [b for b in (_value_upper_bound(o, depth - 1) for o in op.operands)
                 if b is not None]
        return min(sides) if sides else None
    if name == "arith.select":
        sides = [_value_upper_bound(o, depth - 1) for o in op.operands[1:]]
        return None if None in sides else max(sides)
    return None


def _fmt_shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _buffer_of(x) -> Buffer:
    """The buffer of a buffer or of a region of one."""
    return x.buffer if isinstance(x, BufferRef) else x


def _gemm_attributes(transpose_A, transpose_B, clear_accum, policy) -> dict:
    """The attributes T.gemm and T.gemm_sp share, as keyword arguments of
    their ops (a default is left out)."""
    kwargs = {}
    if transpose_A:
        kwargs["transpose_a"] = True
    if transpose_B:
        kwargs["transpose_b"] = True
    if clear_accum:
        kwargs["clear_accum"] = True
    if policy is not None:
        kwargs["policy"] = _ir().Attribute.parse(f"#tile.policy<{_policy_name(policy)}>")
    return kwargs


def _policy_name(policy) -> str:
    name = getattr(policy, "value", policy)
    if isinstance(name, str):
        key = name.replace("_", "").lower()
        table = {"square": "square", "fullrow": "full_row", "fullcol": "full_col",
                 "replicate": "replicate"}
        if key in table:
            return table[key]
    raise TileLangError(f"unknown gemm warp policy {policy!r}; use T.GemmWarpPolicy."
                        "Square, FullRow, FullCol or Replicate")
