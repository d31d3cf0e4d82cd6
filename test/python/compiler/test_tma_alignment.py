"""TMA tensor copies need a 128-byte-aligned shared-memory address (the
destination of a load, the source of a store or bulk reduction); the
hardware faults with CUDA_ERROR_MISALIGNED_ADDRESS otherwise. The GPU
campaign's seed 44 hit it with a warp-specialized ring of four (1, 8)
float32 slots laid 32 bytes apart. Here: the rings of small tiles (several
sizes, element types and stage counts, tiles filled panel by panel among
them) read off the sm_90a PTX, every TMA shared operand proven a multiple
of 128 bytes; the same programs run against NumPy (the CPU target here,
the GPU where there is one); tiles of rank 3 whose panels a TMA box would
write across are not copied by TMA; and T.atomic_add(..., use_tma=True)
into a tensor whose rows TMA cannot address is an error at the user's
line, not a launch failure."""

import inspect
import re

import ml_dtypes
import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support.devices import get, put
from tilelang_mlir.frontend.errors import TileLangError

WS = {"tl.cluster_size": 1, "tl.disable_tma_store": True}

# ---------------------------------------------------------------------------
# Known alignment of PTX registers (a lower bound, in powers of two).
# ---------------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.:]*)\s+(.*?);\s*$")
_TOP = 20  # 2^20: as aligned as anything in shared memory


def _v2(n):
    n = abs(n)
    return _TOP if n == 0 else min(_TOP, (n & -n).bit_length() - 1)


def tma_shared_alignments(ptx):
    """log2 of the alignment of the shared-memory operand of every TMA
    tensor copy in `ptx` (loads: the destination; stores and reductions:
    the source), as far as the PTX proves it: a dataflow over the
    registers (mov, cvt, cvta, add, sub, or of disjoint bits, mul, shl,
    mad, and, selp; anything else unknown, a register its weakest
    definition). The dynamic shared memory base and the kernel's run-time
    alignment of it, d + ((1024 - d) & 1008), count as 1024-byte aligned."""
    defs = []
    for line in ptx.splitlines():
        m = _INSTR.match(line)
        if m:
            args = [a.strip() for a in m.group(2).split(",")]
            if args and args[0].startswith("%"):
                defs.append((m.group(1), args[0], args[1:]))
    dyn = {d for op, d, a in defs
           if op.startswith("mov") and a and a[0].startswith("__dynamic_shmem")}
    up = {d for op, d, a in defs if op.startswith("sub") and a == ["1024", *a[1:]] and
          len(a) == 2 and a[1] in dyn}
    mask = {d for op, d, a in defs if op.startswith("and") and len(a) == 2 and a[0] in up
            and a[1] == "1008"}
    based = {d for op, d, a in defs
             if op.startswith("add") and len(a) == 2 and set(a) & dyn and set(a) & mask}
    known, defined = {}, {d for _, d, _ in defs}

    def val(x):
        if x in dyn:
            return 10
        if x.startswith("%"):  # (special registers, %tid.x, ...: unknown)
            return known.get(x, _TOP) if x in defined else 0
        try:
            return _v2(int(x, 0))
        except ValueError:
            return 0

    changed = True
    while changed:
        changed = False
        for op, d, a in defs:
            base = op.split(".")[0]
            if d in based:
                v = 10
            elif base in ("mov", "cvt", "cvta") and len(a) == 1:
                v = val(a[0])
            elif base in ("add", "sub", "or") and len(a) == 2:
                v = min(val(a[0]), val(a[1]))
            elif base == "mul" and len(a) == 2:
                v = min(_TOP, val(a[0]) + val(a[1]))
            elif base == "shl" and len(a) == 2 and a[1].isdigit():
                v = min(_TOP, val(a[0]) + int(a[1]))
            elif base == "mad" and len(a) == 3:
                v = min(val(a[0]) + val(a[1]), val(a[2]), _TOP)
            elif base == "and" and len(a) == 2:
                v = max(val(a[0]), val(a[1]))
            elif base == "selp" and len(a) == 3:
                v = min(val(a[0]), val(a[1]))
            else:
                v = 0
            if v < known.get(d, _TOP):
                known[d] = v
                changed = True
    out = []
    for line in ptx.splitlines():
        m = re.match(r"\s*(?:@!?%p\d+\s+)?(cp\.(?:reduce\.)?async\.bulk\.tensor\S*)\s+(.*);",
                     line)
        if not m:
            continue
        operands = re.findall(r"\[([^\]]*)\]", m.group(2))
        shared = operands[0] if ".shared::cluster.global" in m.group(1) else operands[1]
        reg, _, off = shared.partition("+")
        a = val(reg.strip())
        out.append(min(a, _v2(int(off, 0))) if off else a)
    return out


def test_the_alignment_reader_sees_a_misaligned_offset():
    """The reader itself: a copy 32 bytes past the aligned base is 2^5."""
    ptx = """
	mov.b32 	%r29, __dynamic_shmem__0;
	sub.s32 	%r30, 1024, %r29;
	and.b32 	%r31, %r30, 1008;
	add.s32 	%r1, %r29, %r31;
	add.s32 	%r2, %r1, 1024;
	add.s32 	%r56, %r2, 32;
	mov.u32 	%r9, %tid.x;
	shl.b32 	%r7, %r9, 7;
	add.s32 	%r8, %r2, %r7;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd2, {%r54, %r54}], [%r1];
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r56], [%rd2, {%r54, %r54}], [%r1];
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r8], [%rd2, {%r54, %r54}], [%r1];
	cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd5, {%r1, %r1}], [%r2+64];
"""
    assert tma_shared_alignments(ptx) == [10, 5, 7, 6]


# ---------------------------------------------------------------------------
# Rings of small tiles.
# ---------------------------------------------------------------------------


def ring_sum(R, C, dtype, stages, steps):
    """Out = the sum of `steps` (R, C) tiles of X side by side, each copied
    into shared memory in a pipelined loop of `stages` stages (on sm_90a a
    warp-specialized ring of TMA destinations)."""

    @T.prim_func
    def main(X: T.Tensor((R, C * steps), dtype), Out: T.Tensor((R, C), "float32")):
        with T.Kernel(1, threads=128) as bx:
            xs = T.alloc_shared((R, C), dtype)
            xf = T.alloc_fragment((R, C), dtype)
            acc = T.alloc_fragment((R, C), "float32")
            T.clear(acc)
            for k in T.Pipelined(steps, num_stages=stages):
                T.copy(X[0, k * C], xs)
                T.copy(xs, xf)
                for i, j in T.Parallel(R, C):
                    acc[i, j] += xf[i, j]
            T.copy(acc, Out[0, 0])

    return main


# (rows, columns, dtype, stages, steps): slots of 16 to 96 bytes, and rows
# of 96 and 192 bytes, filled in 32- and 64-byte panels.
RINGS = [
    (1, 8, "float32", 4, 3),    # the campaign's program: 32-byte slots
    (1, 8, "float32", 4, 9),
    (1, 4, "float32", 3, 7),    # 16 bytes
    (2, 8, "float16", 3, 7),    # 32 bytes
    (1, 16, "bfloat16", 2, 5),
    (3, 8, "float32", 2, 6),    # 96 bytes
    (4, 32, "float32", 2, 5),   # 512 bytes: no padding
    (1, 24, "float32", 4, 9),   # 96-byte rows: three 32-byte panels
    (3, 48, "float16", 3, 7),   # 96-byte rows, 3 rows: panels 96 bytes apart
    (1, 48, "float32", 2, 4),   # 192-byte rows: three 64-byte panels
    (5, 8, "int32", 3, 4),
]


@pytest.mark.parametrize("R,C,dtype,stages,steps", RINGS)
def test_ws_ring_tma_destinations_are_128_byte_aligned(R, C, dtype, stages, steps):
    ptx = tl.compile(ring_sum(R, C, dtype, stages, steps), target="cuda:sm_90a",
                     pass_configs=WS).get_source()
    assert "mbarrier.try_wait" in ptx and "setmaxnreg" in ptx or "cp.async.bulk.tensor" in ptx
    aligns = tma_shared_alignments(ptx)
    assert aligns, "no TMA copy: the loop was not warp-specialized"
    assert min(aligns) >= 7, f"TMA shared operands aligned to 2^{aligns}"


def _inputs(rng, R, C, dtype, steps):
    if dtype == "int32":
        return rng.integers(-50, 50, (R, C * steps)).astype(dtype)
    # Quarters: exact in every element type here, every sum exact in float32.
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    return (np.round(rng.uniform(-4, 4, (R, C * steps)) * 4) / 4).astype(np_dtype)


@pytest.mark.parametrize("R,C,dtype,stages,steps", RINGS)
def test_ws_rings_of_small_tiles_run(target, rng, R, C, dtype, stages, steps):
    x = _inputs(rng, R, C, dtype, steps)
    kernel = tl.compile(ring_sum(R, C, dtype, stages, steps), target=target,
                        pass_configs=WS if target != "cpu" else {})
    out = put(np.full((R, C), np.nan, np.float32), target)
    kernel(put(x, target), out)
    want = x.astype(np.float64).reshape(R, steps, C).sum(axis=1)
    np.testing.assert_array_equal(np.asarray(get(out)).astype(np.float64), want)


# ---------------------------------------------------------------------------
# Tiles of rank 3 filled panel by panel.
# ---------------------------------------------------------------------------


def batched_sum(B, R, C, dtype, stages, steps):
    @T.prim_func
    def main(X: T.Tensor((B, R, C * steps), dtype), Out: T.Tensor((B, R, C), "float32")):
        with T.Kernel(1, threads=128) as bx:
            xs = T.alloc_shared((B, R, C), dtype)
            xf = T.alloc_fragment((B, R, C), dtype)
            acc = T.alloc_fragment((B, R, C), "float32")
            T.clear(acc)
            for k in T.Pipelined(steps, num_stages=stages):
                T.copy(X[0, 0, k * C], xs)
                T.copy(xs, xf)
                for b, i, j in T.Parallel(B, R, C):
                    acc[b, i, j] += xf[b, i, j]
            T.copy(acc, Out[0, 0, 0])

    return main


# (2, 4, 48) float16: 96-byte rows in three 32-byte panels, each panel
# holding one batch's rows: a (2, 4, 16) box would write batch 1 over the
# next panel. (2, 4, 64): 128-byte rows, no panels, TMA as before.
@pytest.mark.parametrize("B,R,C,tma", [(2, 4, 48, False), (1, 3, 48, False), (1, 4, 48, True),
                                       (2, 4, 64, True)])
def test_rank3_panelled_tiles_are_not_tma_boxes_across_batches(B, R, C, tma):
    ptx = tl.compile(batched_sum(B, R, C, "float16", 2, 3), target="cuda:sm_90a",
                     pass_configs=WS).get_source()
    aligns = tma_shared_alignments(ptx)
    assert bool(aligns) == tma
    assert all(a >= 7 for a in aligns)


@pytest.mark.parametrize("B,R,C", [(2, 4, 48), (1, 3, 48), (2, 4, 64)])
def test_rank3_tiles_run(target, rng, B, R, C):
    steps = 3
    x = (np.round(rng.uniform(-4, 4, (B, R, C * steps)) * 4) / 4).astype(np.float16)
    kernel = tl.compile(batched_sum(B, R, C, "float16", 2, steps), target=target,
                        pass_configs=WS if target != "cpu" else {})
    out = put(np.full((B, R, C), np.nan, np.float32), target)
    kernel(put(x, target), out)
    want = x.astype(np.float64).reshape(B, R, steps, C).sum(axis=2)
    np.testing.assert_array_equal(np.asarray(get(out)).astype(np.float64), want)


# ---------------------------------------------------------------------------
# T.atomic_add(..., use_tma=True).
# ---------------------------------------------------------------------------


def bulk_add(M, N, rows, cols, dtype="float32"):
    """Each block adds an (M, N) shared tile into Out (rows, cols)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((rows, cols), dtype)):
        with T.Kernel(2, threads=128) as bx:
            tile = T.alloc_shared((M, N), dtype)
            T.copy(A[0, 0], tile)
            T.atomic_add(Out[0, 0], tile, use_tma=True)

    return main


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


@pytest.mark.parametrize("cols,dtype", [(6, "float32"), (12, "float16"), (5, "float32")])
def test_use_tma_into_unaddressable_rows_is_an_error_at_the_line(cols, dtype):
    """Rows of 24, 24 and 20 bytes: TMA needs strides of 16-byte multiples."""
    program = bulk_add(4, 4 if dtype == "float32" else 8, 16, cols, dtype)
    with pytest.raises(TileLangError) as info:
        tl.compile(program, target="cuda:sm_90a")
    e, eb = info.value, np.dtype(dtype).itemsize
    msg = str(e)
    assert "use_tma=True" in msg and "argument #1" in msg, msg
    assert f"stride of {cols} elements ({cols * eb} bytes)" in msg, msg
    assert e.location.filename == __file__
    assert e.location.line == line_of(program.fn, "T.atomic_add(")


def test_use_tma_into_addressable_rows_stays_a_tma_reduction():
    """16-byte rows pass (and so do rows of one row: never stepped); sm_80
    has no TMA and adds element by element, whatever the rows."""
    for rows, cols in [(16, 4), (1, 6)]:
        ptx = tl.compile(bulk_add(1 if rows == 1 else 4, 4, rows, cols),
                         target="cuda:sm_90a").get_source()
        assert "cp.reduce.async.bulk.tensor" in ptx
        assert min(tma_shared_alignments(ptx)) >= 7
    ptx = tl.compile(bulk_add(4, 4, 16, 6), target="cuda:sm_80").get_source()
    assert "cp.reduce.async.bulk" not in ptx


@pytest.mark.parametrize("M,N,dtype", [(3, 48, "float32"), (1, 24, "float32"), (4, 48, "float32"),
                                       (3, 96, "float16")])
def test_use_tma_sources_are_128_byte_aligned(M, N, dtype):
    """A tile filled panel by panel whose panels are not 128 bytes apart
    ((3, 48) float32: 64-byte panels 192 bytes apart) adds element by
    element; one whose panels are keeps its bulk reductions."""
    ptx = tl.compile(bulk_add(M, N, 16, N, dtype), target="cuda:sm_90a").get_source()
    aligns = tma_shared_alignments(ptx)
    assert all(a >= 7 for a in aligns), aligns


@pytest.mark.parametrize("M,N,dtype", [(3, 48, "float32"), (4, 48, "float32"), (2, 8, "float32")])
def test_bulk_adds_of_small_tiles_run(target, rng, M, N, dtype):
    a = (np.round(rng.uniform(-4, 4, (M, N)) * 4) / 4).astype(dtype)
    kernel = tl.compile(bulk_add(M, N, 16, N, dtype), target=target)
    out0 = (np.round(rng.uniform(-4, 4, (16, N)) * 4) / 4).astype(dtype)
    out = put(out0.copy(), target)
    kernel(put(a, target), out)
    want = out0.astype(np.float64)
    want[:M] += 2 * a.astype(np.float64)  # two blocks
    np.testing.assert_array_equal(np.asarray(get(out)).astype(np.float64), want)
