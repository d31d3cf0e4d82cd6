"""Tile matrix multiplication."""

from __future__ import annotations

import enum

from ._builtin import builtin


class GemmWarpPolicy(enum.Enum):
    """How the warps of a block split a gemm's output tile."""

    Square = "square"
    FullRow = "full_row"
    FullCol = "full_col"
    # wgmma only: every warpgroup computes the whole tile (M % 64 == 0, N <= 256).
    Replicate = "replicate"


@builtin
def gemm(b, A, B, C, transpose_A: bool = False, transpose_B: bool = False,
         policy=GemmWarpPolicy.Square, clear_accum: bool = False, k_pack: int = 1,
         wg_wait: int = 0, mbar=None, annotations=None):
    """C += op(A) @ op(B), accumulated in C's dtype (C = op(A) @ op(B) with
    clear_accum=True). `k_pack` packs k for AMD's MFMA; `annotations` are
    TileLang's lowering hints, accepted; `mbar` (the barrier a Blackwell
    tcgen05 gemm completes on) is refused: no tcgen05 here.

    `wg_wait` (TileLang's meaning, wgmma targets): 0 waits for the gemm
    to finish; -1 only issues it (asynchronous: C, and A when it is a
    fragment, must not be touched until a `T.wait_wgmma` covers it, except
    by further asynchronous gemms into the same C, which complete in
    order; shared operands must not be overwritten either); n > 0 issues
    it and waits until at most n asynchronous gemms are in flight
    (`T.wait_wgmma(n)`). Targets without asynchronous gemms run every gemm
    synchronously."""
    from .values import static_int

    if mbar is not None:
        raise b.error("not supported by tilelang-mlir: T.gemm(..., mbar=...) (the barrier of "
                      "Blackwell's tcgen05 gemms, hardware this compiler does not target); "
                      "drop mbar: T.gemm waits for its result itself")
    wg_wait = static_int(wg_wait, "wg_wait")
    if wg_wait < -1:
        raise b.error(f"T.gemm: wg_wait must be -1, 0 or a count of gemms left in "
                      f"flight, got {wg_wait}")
    b.gemm(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B, policy=policy,
           clear_accum=clear_accum, k_pack=k_pack, async_=wg_wait != 0)
    if wg_wait > 0:
        b.gemm_wait(wg_wait)


@builtin
def wgmma_gemm(b, A, B, C, transpose_A: bool = False, transpose_B: bool = False,
               policy=GemmWarpPolicy.Square, clear_accum: bool = False, annotations=None):
    """T.gemm(..., wg_wait=-1) on wgmma (TileLang's name in explicitly
    specialized programs): issues the gemm and returns; a later
    `T.wait_wgmma(n)` waits for it. On sm_90a a gemm wgmma cannot run (a
    partial warpgroup, rows short of 64 per warpgroup, operands wgmma cannot
    read) is refused, as TileLang refuses it, where T.gemm would fall back
    to mma.sync; targets without wgmma run it as T.gemm."""
    if annotations:
        raise b.error("not supported by tilelang-mlir: T.wgmma_gemm(..., annotations=...)")
    b.gemm(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B, policy=policy,
           clear_accum=clear_accum, async_=True, require_wgmma=True)


@builtin
def wait_wgmma(b, pending: int = 0):
    """Waits until at most `pending` of this thread's asynchronous gemms
    (`T.gemm(..., wg_wait=-1)`) are still in flight (tile.gemm_wait); the
    accumulators and operands of all older ones are then free. A no-op
    where gemms run synchronously."""
    b.gemm_wait(pending)


@builtin
def warpgroup_wait(b, num_mma: int):
    """TileLang's name of wgmma.wait_group: T.wait_wgmma(num_mma)."""
    b.gemm_wait(num_mma)


@builtin
def warpgroup_fence_operand(b, buffer_or_ptr, offset=0, num_regs=None, dtype=None):
    """TileLang's fence of an asynchronous gemm's accumulator registers
    against NVCC moving their uses across the wgmma (an empty asm on each
    register). Here the accumulators are values of the wgmma instructions
    themselves, ordered against T.wait_wgmma by the compiler: nothing is
    emitted. The operand must be a fragment (or an element of one)."""
    from .values import Buffer, BufferRef

    buf = buffer_or_ptr.buffer if isinstance(buffer_or_ptr, BufferRef) else buffer_or_ptr
    if not isinstance(buf, Buffer) or buf.scope != "fragment":
        raise b.error("T.warpgroup_fence_operand takes the accumulator fragment of an "
                      f"asynchronous gemm, got {buffer_or_ptr!r}")


@builtin
def gemm_sp(b, A_sparse, E, B, C, *args, transpose_A: bool = False, transpose_E: bool = False,
            transpose_B: bool = False, policy=GemmWarpPolicy.Square, clear_accum: bool = False,
            k_pack: int = 1, wg_wait: int = 0, annotations=None):
    """2:4 structured-sparse C += A @ B: A_sparse (M x K/2) holds the kept
    values, E (M x K/b of b-bit integers, int16: M x K/16) the 2-bit
    positions of each kept pair in its group of four, row-major
    (`tilelang_mlir.sparse.compress` makes both from a dense 2:4 A). On
    CUDA, A_sparse, E and B are shared buffers and C a float32 fragment;
    it runs on wgmma.mma_async.sp (sm_90a) or mma.sp (sm_80), K a multiple
    of 32. `transpose_E=False` is TileLang's default layout of E (the only
    one here).

    The positional order is TileLang's since 0.1.10: (transpose_A,
    transpose_E, transpose_B, policy, clear_accum, k_pack, wg_wait,
    annotations). Releases up to 0.1.9 had (transpose_A, transpose_B,
    policy, clear_accum, k_pack, wg_wait); a call in that order (a
    GemmWarpPolicy third) is read in it."""
    from .values import static_int

    if len(args) >= 3 and isinstance(args[2], GemmWarpPolicy):
        names = ("transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait")
    else:
        names = ("transpose_A", "transpose_E", "transpose_B", "policy", "clear_accum", "k_pack",
                 "wg_wait", "annotations")
    if len(args) > len(names):
        raise b.error(f"T.gemm_sp takes at most {4 + len(names)} positional arguments, got "
                      f"{4 + len(args)}")
    given = dict(transpose_A=transpose_A, transpose_E=transpose_E, transpose_B=transpose_B,
                 policy=policy, clear_accum=clear_accum, k_pack=k_pack, wg_wait=wg_wait,
                 annotations=annotations)
    given.update(zip(names, args))
    if given["transpose_A"]:
        raise b.error("T.gemm_sp does not support transpose_A (nor does TileLang)")
    if given["transpose_E"]:
        raise b.error("not supported by tilelang-mlir: T.gemm_sp(..., transpose_E=True) (E is "
                      "read row-major, M x K/b)")
    if static_int(given["wg_wait"], "wg_wait") != 0:
        raise b.error("not supported by tilelang-mlir: T.gemm_sp(..., wg_wait=...): sparse "
                      "gemms run synchronously here; drop wg_wait")
    if static_int(given["k_pack"], "k_pack") < 1:
        raise b.error(f"T.gemm_sp: k_pack must be positive, got {given['k_pack']}")
    b.gemm_sp(A_sparse, E, B, C, transpose_B=given["transpose_B"], policy=given["policy"],
              clear_accum=given["clear_accum"])
