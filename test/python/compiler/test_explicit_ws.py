"""The explicit warp-specialization layer (issue 20): thread roles written
as branches on the thread index or `with T.ws(i)`, user barriers with
per-thread arrivals, T.tma_copy, T.set_max_nreg, T.wgmma_gemm, and the
errors that keep such programs honest."""

import re

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import CompilationError
from tilelang_mlir.frontend.errors import TileLangError


def barrierpipe(M, N, K, block_M=128, block_N=128, block_K=64, stages=2):
    """TileLang's examples/warp_specialize barrierpipe GEMM, in the classic
    style: warpgroup 1 loads A and B tiles by TMA into `stages` slots,
    warpgroup 0 multiplies; full barriers mbars[s], empty mbars[stages + s],
    128 per-thread arrivals each."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((stages, block_M, block_K), "float16")
            B_shared = T.alloc_shared((stages, block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            mbars = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(C_local)
            for ko in range(T.ceildiv(K, block_K)):
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=mbars[ko % stages + stages],
                                           parity=((ko // stages) % 2) ^ 1)
                    T.tma_copy(A[by * block_M:(by + 1) * block_M, ko * block_K:(ko + 1) * block_K],
                               A_shared[ko % stages, :, :], barrier=mbars[ko % stages])
                    T.tma_copy(B[ko * block_K:(ko + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                               B_shared[ko % stages, :, :], barrier=mbars[ko % stages])
                    T.mbarrier_arrive(mbarrier=mbars[ko % stages])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=mbars[ko % stages],
                                           parity=(ko // stages) % 2)
                    T.gemm(A_shared[ko % stages, :, :], B_shared[ko % stages, :, :], C_local)
                    T.mbarrier_arrive(mbarrier=mbars[ko % stages + stages])
            with T.ws(0):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def three_roles(M, N, K, block_M=64, block_N=128, block_K=64, hints=False):
    """Roles as branches on the thread index (`if` / `elif` / `else`, as in
    TileLang's MLA decode): warpgroup 2 loads, warpgroups 0 and 1 each
    multiply one half of the N tile, with register budgets (with `hints`,
    given as TileLang's T.annotate_*_reg_* hints, as its minference
    example does)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=384) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_left = T.alloc_shared((block_K, block_N // 2), "float16")
            B_right = T.alloc_shared((block_K, block_N // 2), "float16")
            C_left = T.alloc_fragment((block_M, block_N // 2), "float32")
            C_right = T.alloc_fragment((block_M, block_N // 2), "float32")
            full = T.alloc_barrier(arrive_count=128)
            empty = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            if tx < 128:
                if hints:
                    T.annotate_consumer_reg_alloc(232)
                else:
                    T.set_max_nreg(232, 1)
                T.clear(C_left)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(full, ko % 2)
                    T.wgmma_gemm(A_shared, B_left, C_left)
                    T.wait_wgmma(0)
                    T.barrier_arrive(empty)
                T.copy(C_left, C[by * block_M, bx * block_N])
            elif tx >= 128 and tx < 256:
                T.set_max_nreg(232, 1)
                T.clear(C_right)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(full, ko % 2)
                    T.gemm(A_shared, B_right, C_right)
                    T.barrier_arrive(empty)
                T.copy(C_right, C[by * block_M, bx * block_N + block_N // 2])
            else:
                if hints:
                    T.annotate_producer_reg_dealloc(40)
                else:
                    T.set_max_nreg(40, 0)
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(empty, (ko % 2) ^ 1)
                    T.tma_copy(A[by * block_M, ko * block_K], A_shared, barrier=full)
                    T.tma_copy(B[ko * block_K, bx * block_N], B_left, barrier=full)
                    T.tma_copy(B[ko * block_K, bx * block_N + block_N // 2], B_right,
                               barrier=full)
                    T.barrier_arrive(full)

    return main


@T.macro
def _consume_two_stages(A_shared, B_shared, C_local, C, full, empty, steps, row, col):
    """The consumer warpgroup of the cp.async GEMMs: waits for a stage,
    multiplies it, frees it; then stores its tile at (row, col) of C."""
    T.clear(C_local)
    for ko in T.serial(steps):
        T.barrier_wait(full[ko % 2], (ko // 2) % 2)
        T.gemm(A_shared[ko % 2, :, :], B_shared[ko % 2, :, :], C_local)
        T.barrier_arrive(empty[ko % 2])
    T.copy(C_local, C[row, col])


def cp_async_gemm(M, N, K, block_M=64, block_N=64, block_K=64):
    """A producer warpgroup loads the A and B tiles of two stages with
    per-thread cp.async (16 bytes each) and arrives on a stage's full
    barrier as its copies land (TileLang's MLA decode producer); a consumer
    warpgroup multiplies and frees the stage."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((2, block_M, block_K), "float16")
            B_shared = T.alloc_shared((2, block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            full = T.alloc_barrier([128, 128])
            empty = T.alloc_barrier([128, 128])
            tx = T.get_thread_binding()
            if tx < 128:
                _consume_two_stages(A_shared, B_shared, C_local, C, full, empty,
                                    T.ceildiv(K, block_K), by * block_M, bx * block_N)
            else:
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(empty[ko % 2], ((ko // 2) % 2) ^ 1)
                    for r in T.serial(4):
                        row = r * 16 + (tx - 128) // 8
                        col = (tx - 128) % 8 * 8
                        T.ptx_cp_async(T.access_ptr(A_shared[ko % 2, row, col], "w", 8),
                                       T.access_ptr(A[by * block_M + row, ko * block_K + col], "r",
                                                    8), 8)
                        T.ptx_cp_async(T.access_ptr(B_shared[ko % 2, row, col], "w", 8),
                                       T.access_ptr(B[ko * block_K + row, bx * block_N + col], "r",
                                                    8), 8)
                    T.cp_async_barrier_noinc(full[ko % 2])

    return main


def cp_async_gather_gemm(M, N, K, block_M=64, block_N=64, block_K=64):
    """cp_async_gemm with the rows of A gathered through Idx (DeepSeek's
    sparse MLA producer): each thread copies its row only where the index is
    valid (a condition of the thread's own value), and arrives either way;
    the rows of an invalid index are left as they were (their C rows are
    not checked)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             Idx: T.Tensor((M,), "int32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((2, block_M, block_K), "float16")
            B_shared = T.alloc_shared((2, block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            full = T.alloc_barrier([128, 128])
            empty = T.alloc_barrier([128, 128])
            tx = T.get_thread_binding()
            if tx < 128:
                _consume_two_stages(A_shared, B_shared, C_local, C, full, empty,
                                    T.ceildiv(K, block_K), by * block_M, bx * block_N)
            else:
                for ko in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(empty[ko % 2], ((ko // 2) % 2) ^ 1)
                    for r in T.serial(4):
                        row = r * 16 + (tx - 128) // 8
                        col = (tx - 128) % 8 * 8
                        src = Idx[by * block_M + row]
                        if src >= 0:
                            T.ptx_cp_async(T.access_ptr(A_shared[ko % 2, row, col], "w", 8),
                                           T.access_ptr(A[src, ko * block_K + col], "r", 8), 8)
                        T.ptx_cp_async(T.access_ptr(B_shared[ko % 2, row, col], "w", 8),
                                       T.access_ptr(B[ko * block_K + row, bx * block_N + col], "r",
                                                    8), 8)
                    T.cp_async_barrier_noinc(full[ko % 2])

    return main


def roles_of(kernel):
    return re.findall(r"tile\.role threads\((\d+) to (\d+)\)", kernel.mlir("tile"))


def test_ws_scopes_become_roles_and_step_aside_the_schedulers():
    k = tl.compile(barrierpipe(256, 256, 256), out_idx=[2], target="cuda:sm_90a")
    tile_ir = k.mlir("tile")
    assert roles_of(k) == [("0", "128"), ("128", "256"), ("0", "128"), ("0", "128")]
    assert "tile.barrier_arrive" in tile_ir and "per_thread" in tile_ir
    assert "{expect_tx}" in tile_ir and "tile.alloc_barrier arrivals(128, 128, 128, 128)" in tile_ir
    ptx = k.get_source()
    # No producer warpgroup added: the block keeps its 256 threads.
    assert ".reqntid 256, 1, 1" in ptx or ".maxntid 256, 1, 1" in ptx
    assert ptx.count("mbarrier.init") == 4
    assert "mbarrier.expect_tx" in ptx and "cp.async.bulk.tensor" in ptx
    assert "wgmma.mma_async" in ptx


@pytest.mark.parametrize("hints", [False, True], ids=["set_max_nreg", "reg_hints"])
def test_if_elif_else_on_the_thread_index_give_three_roles(hints):
    k = tl.compile(three_roles(256, 256, 256, hints=hints), out_idx=[2], target="cuda:sm_90a")
    assert roles_of(k) == [("0", "128"), ("128", "256"), ("256", "384")]
    ptx = k.get_source()
    assert re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx) == [
        ("inc", "232"), ("inc", "232"), ("dec", "40")]
    # Both consumer warpgroups run their gemm as one warpgroup each: an
    # m64n64 wgmma (the 64x64 half tile), not the block's split.
    assert "wgmma.mma_async.sync.aligned.m64n64k16" in ptx


def test_per_thread_cp_async_arrives_when_its_copies_land():
    k = tl.compile(cp_async_gemm(128, 128, 256), out_idx=[2], target="cuda:sm_90a")
    assert "tile.cp_async" in k.mlir("tile") and "after_copies" in k.mlir("tile")
    ptx = k.get_source()
    assert ptx.count("cp.async.cg.shared.global") == 8  # 4 rows x (A, B) per thread
    assert "cp.async.mbarrier.arrive.noinc.shared" in ptx
    # The consumer reads what cp.async wrote through wgmma: a proxy fence
    # after its wait.
    assert "fence.proxy.async" in ptx and "wgmma.mma_async" in ptx


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_cp_async_under_a_condition_of_the_threads_own_value(arch):
    # T.ptx_cp_async is the executing thread's copy: a thread-varying `if`
    # around it is no role (TileLang's sparse MLA producer).
    k = tl.compile(cp_async_gather_gemm(128, 128, 256), out_idx=[3], target=arch)
    ptx = k.get_source()
    assert ptx.count("cp.async.cg.shared.global") == 8
    assert "cp.async.mbarrier.arrive.noinc.shared" in ptx


@pytest.mark.gpu
def test_cp_async_gather_gemm_computes_the_gathered_rows(rng):
    M, N, K = 256, 192, 320
    kernel = tl.compile(cp_async_gather_gemm(M, N, K), out_idx=[3], target="cuda")
    a = torch.from_numpy(rng.standard_normal((M, K))).half().cuda()
    b = torch.from_numpy(rng.standard_normal((K, N))).half().cuda()
    idx = torch.from_numpy(rng.permutation(M).astype(np.int32)).cuda()
    idx[torch.from_numpy(rng.random(M) < 0.25).cuda()] = -1
    c = kernel(a, b, idx)
    valid = idx >= 0
    ref = a[idx[valid].long()].float() @ b.float()
    torch.testing.assert_close(c[valid].float(), ref, rtol=1e-2, atol=1e-1)


@pytest.mark.gpu
@pytest.mark.parametrize("program", [barrierpipe, three_roles, cp_async_gemm])
def test_explicit_roles_compute_the_gemm(program, rng):
    M, N, K = 256, 384, 512
    kernel = tl.compile(program(M, N, K), out_idx=[2], target="cuda")
    a = torch.from_numpy(rng.standard_normal((M, K))).half().cuda()
    b = torch.from_numpy(rng.standard_normal((K, N))).half().cuda()
    c = kernel(a, b)
    ref = (a.float() @ b.float())
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-1)
    # Again: the barriers' phases start over in every block and launch.
    torch.testing.assert_close(kernel(a, b).float(), ref, rtol=1e-2, atol=1e-1)


def published_by_one_role(n):
    """TileOPs' persistent grouped GEMM's start: the first warpgroup
    computes a value into shared memory and every role reads it after its
    own T.sync_threads() (`if` / `elif` / `else` on the thread index).
    Y[b, i] = 3 * X[b] + i for the 256 threads of the two other roles."""

    @T.prim_func
    def main(X: T.Tensor((n,), "int32"), Y: T.Tensor((n, 256), "int32")):
        with T.Kernel(n, threads=384) as bx:
            s = T.alloc_shared((1,), "int32")
            tx = T.get_thread_binding()
            if tx < 128:
                if tx == 0:
                    s[0] = X[bx] * 3
                T.sync_threads()
            elif tx < 256:
                T.sync_threads()
                Y[bx, tx - 128] = s[0] + (tx - 128)
            else:
                T.sync_threads()
                Y[bx, tx - 128] = s[0] + (tx - 128)

    return main


_WHOLE_BLOCK = {"tl.disable_thread_storage_sync": True}


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_sync_threads_in_roles_is_the_roles_or_the_whole_blocks(arch):
    # TileLang: T.sync_threads() in a branch over a range of threads
    # synchronizes that range; under tl.disable_thread_storage_sync it
    # stays __syncthreads(), which the three branches reach together.
    role_wise = tl.compile(published_by_one_role(4), out_idx=[1], target=arch)
    assert "bar.sync \t0, 384" not in role_wise.get_source()
    assert len(re.findall(r"bar\.sync\s+[1-9]\d*, 128;", role_wise.get_source())) == 3
    block = tl.compile(published_by_one_role(4), out_idx=[1], target=arch,
                       pass_configs=_WHOLE_BLOCK)
    assert "tile.barrier {block}" in block.mlir("tile")
    ptx = block.get_source()
    assert len(re.findall(r"bar\.sync\s+0, 384;", ptx)) == 3
    assert not re.findall(r"bar\.sync\s+[1-9]\d*, 128;", ptx)


@pytest.mark.gpu
def test_a_value_published_by_one_role_reaches_the_others(rng):
    n = 2048
    kernel = tl.compile(published_by_one_role(n), out_idx=[1], target="cuda",
                        pass_configs=_WHOLE_BLOCK)
    x = torch.from_numpy(rng.integers(-1000, 1000, n).astype(np.int32)).cuda()
    for _ in range(3):
        y = kernel(x)
        ref = 3 * x[:, None] + torch.arange(256, device="cuda", dtype=torch.int32)
        assert torch.equal(y, ref)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


def compile_error(fn, target="cuda:sm_90a"):
    with pytest.raises((TileLangError, CompilationError)) as info:
        tl.compile(fn, target=target)
    return str(info.value)


def test_a_fragment_used_in_two_roles_is_an_error():
    @T.prim_func
    def main(C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            acc = T.alloc_fragment((64, 64), "float32")
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc)
            else:
                T.copy(acc, C)

    msg = compile_error(main)
    assert "uses a fragment in the role of threads [128, 256), but it lives in the registers " \
           "of the role of threads [0, 128)" in msg
    assert "test_explicit_ws.py" in msg


def test_a_tile_op_under_a_thread_condition_that_is_not_a_role_is_an_error():
    @T.prim_func
    def main(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((64,), "float32")
            tx = T.get_thread_binding()
            if tx % 32 == 0:
                T.clear(f)
            T.copy(f, C)

    assert "a tile operation under a condition on the thread index that is not a role" in \
        compile_error(main)


def test_roles_do_not_nest_and_split_ranges_are_refused():
    @T.prim_func
    def nested(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=384):
            tx = T.get_thread_binding()
            if tx < 256:
                with T.ws(0):
                    C[0] = 1.0

    assert "roles do not nest" in compile_error(nested)

    # T.ws of exactly the threads of the branch it is in is that role
    # (TileOPs' paged decode: `if tx >= 128: with T.ws(1):`)
    @T.prim_func
    def same(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx >= 128:
                with T.ws(1):
                    C[tx - 128] = 1.0

    assert tl.compile(same, target="cuda:sm_90a").get_kernel_source()

    @T.prim_func
    def split(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=384):
            tx = T.get_thread_binding()
            if tx >= 128 and tx < 256:
                C[0] = 1.0
            else:
                C[1] = 2.0

    assert "split the others ([0, 384)) in two" in compile_error(split)


def test_set_max_nreg_budgets_are_checked():
    @T.prim_func
    def outside(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            T.set_max_nreg(240, 1)

    assert "T.set_max_nreg sets the register budget of a role" in compile_error(outside)

    @T.prim_func
    def too_many(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=384):
            tx = T.get_thread_binding()
            if tx < 256:
                T.set_max_nreg(240, 1)
            else:
                T.set_max_nreg(240, 1)

    assert "add up to 92160 registers, more than the 65536" in compile_error(too_many)

    # An increase to fewer registers than the threads start with (240 in a
    # 256-thread block, which starts at 256: TileLang's consumer hint) is
    # dropped; the producer's decrease stays.
    @T.prim_func
    def below_entry(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx < 128:
                T.set_max_nreg(240, 1)
                C[tx % 64] = 1.0
            else:
                T.set_max_nreg(24, 0)

    ptx = tl.compile(below_entry, target="cuda:sm_90a").get_kernel_source()
    assert re.search(r"setmaxnreg.dec.sync.aligned.u32\s+24;", ptx) and "setmaxnreg.inc" not in ptx


def test_barrier_errors():
    @T.prim_func
    def never(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            if tx >= 128:
                T.tma_copy(A, s, barrier=bar)
            else:
                T.barrier_wait(bar, 0)
                T.copy(s, C)

    assert "waits on a barrier that nothing arrives on" in compile_error(never)

    @T.prim_func
    def count(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            bar = T.alloc_barrier(arrive_count=100)
            with T.ws(1):
                T.barrier_arrive(bar)
            with T.ws(0):
                T.barrier_wait(bar, 0)

    assert "expects 100 arrivals per phase" in compile_error(count)

    @T.prim_func
    def not_a_barrier(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((4,), "float32")
            T.barrier_arrive(s)

    assert "T.barrier_arrive takes a barrier from T.alloc_barrier" in compile_error(not_a_barrier)


@pytest.mark.parametrize("to_global, col, n, match", [
    (False, 0, 3, "T.ptx_cp_async copies 4, 8 or 16 bytes, got 3 elements of float16"),
    (True, 0, 8, "only supports global->shared/shared.dyn copies, got shared"),
    (False, 4, 8, "is not aligned to its 8 elements"),
])
def test_cp_async_errors(to_global, col, n, match):
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float16")
            if to_global:
                T.ptx_cp_async(T.access_ptr(A[0, col], "w"), T.access_ptr(s[0, 0], "r"), n)
            else:
                T.ptx_cp_async(T.access_ptr(s[0, col], "w"), T.access_ptr(A[0, 0], "r"), n)

    assert match in compile_error(main)


def test_roles_have_no_meaning_on_the_cpu():
    msg = compile_error(barrierpipe(128, 128, 128), target="cpu")
    assert "roles run concurrently and synchronize through barriers" in msg
    assert "compile for a GPU target" in msg


def test_register_hints_take_tilelangs_range():
    @T.prim_func
    def main(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            if T.get_thread_binding() >= 128:
                T.annotate_producer_reg_dealloc(16)

    assert "invalid register hint 16 (from 24 to 240)" in compile_error(main)


def test_mbarrier_expect_tx_is_refused_at_the_call_with_its_rule():
    # Its only use is with TMA loads a program issues itself (T.tma_load,
    # TileLang's C++ helpers), which are refused; compat/refusals.py lists
    # it, so the conformance plugin counts a test that stops here as out of
    # scope.
    from tilelang_mlir.compat import refusals

    @T.prim_func
    def main(C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(1)
            T.mbarrier_expect_tx(bar[0], 256)

    err = compile_error(main)
    assert "not supported by tilelang-mlir: T.mbarrier_expect_tx" in err
    assert "T.tma_copy announces its own bytes" in err
    assert "(out of scope: TVM's IR and pass APIs)" in err
    assert "mbarrier_expect_tx" in refusals.AT_CALL["tilelang.language"]
    assert refusals.rule(refusals.reason("tilelang.language", "mbarrier_expect_tx")) == \
        refusals.RULE_TVM


# -- T.mbarrier_arrive_expect_tx: every executing thread arrives and announces bytes --


def handoff_expect_tx(N=128, tx=0):
    """Warpgroup 1 writes a shared row and each of its 128 threads arrives
    on `bar` (arrive count 128) through T.mbarrier_arrive_expect_tx with
    `tx` bytes; warpgroup 0 waits on the phase and reads the row."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((N,), "float32")
            bar = T.alloc_barrier(128)
            tx_ = T.get_thread_binding()
            if tx_ >= 128:
                s[tx_ - 128] = A[tx_ - 128] * 2
                T.mbarrier_arrive_expect_tx(bar, tx)
            else:
                T.mbarrier_wait_parity(bar, 0)
                B[tx_] = s[127 - tx_] + 1

    return main


def test_arrive_expect_tx_code_generation():
    # every thread of the role arrives with the bytes (the lit test
    # convert-tile-to-nvvm-arrive-expect-tx.mlir checks there is no guard)
    ptx = tl.compile(handoff_expect_tx(tx=64), target="cuda:sm_90a").get_kernel_source()
    arrive = re.search(r"mbarrier\.arrive\.expect_tx\.shared(?:::cta)?\.b64\s+\S+\s+\[[^\]]+\],"
                       r"\s*(%r\d+);", ptx)
    assert arrive, ptx
    assert re.search(rf"mov\.b32\s+{re.escape(arrive.group(1))}, 64;", ptx)


def test_arrive_expect_tx_errors():
    with pytest.raises((TileLangError, CompilationError), match="byte count must be in"):
        tl.compile(handoff_expect_tx(tx=1 << 20), target="cuda:sm_90a")
    with pytest.raises((TileLangError, CompilationError), match="byte count"):
        @T.prim_func
        def runtime_tx(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=128):
                bar = T.alloc_barrier(128)
                T.mbarrier_arrive_expect_tx(bar, A[0])

        tl.compile(runtime_tx, target="cuda:sm_90a")
    @T.prim_func
    def whole_block(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(128)
            T.mbarrier_arrive_expect_tx(bar, 0)
            T.mbarrier_wait_parity(bar, 0)

    assert "announces transaction bytes, which needs sm_90a" in \
        compile_error(whole_block, target="cuda:sm_80")
    for target in ("rocm:gfx942", "cpu"):
        assert "uses a transaction barrier" in compile_error(whole_block, target=target)


@pytest.mark.gpu
def test_arrive_expect_tx_on_gpu(rng):
    kernel = tl.compile(handoff_expect_tx(), target="cuda")
    a = torch.from_numpy(rng.standard_normal(128).astype(np.float32)).cuda()
    b = torch.zeros(128, device="cuda")
    kernel(a, b)
    torch.testing.assert_close(b, (a * 2).flip(0) + 1)


def _async_scope(rows=64):
    """TVM's async_scope (TileLang's FlashMLA-style decode): each thread's
    vectorized element copies from global into shared memory are cp.async,
    landing on a barrier through T.cp_async_barrier_noinc; the row index
    comes from a per-thread table."""

    @T.prim_func
    def main(A: T.Tensor((rows, 64), "float16"), Idx: T.Tensor((rows,), "int32"),
             B: T.Tensor((rows, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, 64), "float16")
            row_local = T.alloc_local((1,), "int32")
            bar = T.alloc_barrier([128])
            tx = T.get_thread_binding()
            for r in T.serial(rows // 16):
                row = r * 16 + tx // 8
                row_local[0] = Idx[row]
                with T.attr("default", "async_scope", 1):
                    for v in T.vectorized(8):
                        S[row, tx % 8 * 8 + v] = A[row_local[0], tx % 8 * 8 + v]
            T.cp_async_barrier_noinc(bar[0])
            T.barrier_wait(bar[0], 0)
            for r in T.serial(rows // 16):
                row = r * 16 + tx // 8
                for v in T.vectorized(8):
                    B[row, tx % 8 * 8 + v] = S[row, tx % 8 * 8 + v]

    return main


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_async_scope_copies_are_cp_async(arch):
    ptx = tl.compile(_async_scope(), out_idx=[2], target=arch).get_kernel_source()
    assert len(re.findall(r"cp\.async\.c[ag]\.shared\.global", ptx)) == 4
    assert "cp.async.mbarrier.arrive.noinc" in ptx


@pytest.mark.gpu
def test_async_scope_on_gpu(rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    idx = rng.permutation(64).astype(np.int32)
    kernel = tl.compile(_async_scope(), out_idx=[2], target="cuda")
    b = kernel(torch.tensor(a, device="cuda"), torch.tensor(idx, device="cuda"))
    np.testing.assert_array_equal(b.cpu().numpy(), a[idx])


def test_async_scope_takes_consecutive_element_copies_only():
    @T.prim_func
    def strided(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            tx = T.get_thread_binding()
            with T.attr("default", "async_scope", 1):
                for v in T.vectorized(8):
                    S[tx % 64, v * 2] = A[tx % 64, v * 2]

    assert "the destination's last index must add the loop's variable 'v'" in \
        compile_error(strided)


def test_a_fragment_layout_on_a_local_buffer_changes_nothing(rng):
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_local((1,), "float32")
            T.annotate_layout({acc: T.Fragment(acc.shape, forward_thread_fn=lambda i: i)})
            for i in T.Parallel(128):
                acc[0] = A[i] * 3.0
                B[i] = acc[0]

    assert tl.compile(main, out_idx=[1], target="cuda:sm_90a").get_kernel_source()
    a = rng.standard_normal(128).astype(np.float32)
    b = tl.compile(main, out_idx=[1], target="cpu")(a)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)


def _predicated_cp_async(M=48, N=64, block_m=16, elems=8, valid=40):
    """TileOPs' AdaLN prefetch: a T.Parallel of per-thread cp.async written
    with TVM's T.tvm_access_ptr(T.type_annotation(dtype), X.data, offset,
    extent, mask) and a predicate: rows from `valid` on land as zeros
    (those past M too, past the tensor's end)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Y: T.Tensor((64, N), "float16")):
        with T.Kernel(64 // block_m, threads=128) as pid:
            S = T.alloc_shared((block_m, N), "float16")
            for i, j in T.Parallel(block_m, N // elems):
                row = pid * block_m + i
                col = j * elems
                T.ptx_cp_async(
                    T.tvm_access_ptr(T.type_annotation("float16"), S.data, i * N + col, elems, 2),
                    T.tvm_access_ptr(T.type_annotation("float16"), X.data, row * N + col, elems,
                                     1),
                    elems, predicate=row < valid)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            T.copy(S, Y[pid * block_m, 0])

    return main


@pytest.mark.parametrize("arch", ["cuda:sm_80", "cuda:sm_90a"])
def test_predicated_cp_async_through_tvm_access_ptr_compiles(arch):
    ptx = tl.compile(_predicated_cp_async(), out_idx=[1], target=arch).get_kernel_source()
    assert re.search(r"cp\.async\.cg\.shared\.global(\.L2::128B)? \[[^]]+\], \[[^]]+\], 16, %r",
                     ptx), "the predicate sets the source size"


@pytest.mark.gpu
def test_predicated_cp_async_on_gpu(rng):
    x = rng.standard_normal((48, 64)).astype(np.float16)
    y = tl.compile(_predicated_cp_async(), out_idx=[1], target="cuda")(
        torch.tensor(x, device="cuda")).cpu().numpy()
    np.testing.assert_array_equal(y[:40], x[:40])
    np.testing.assert_array_equal(y[40:], 0)


def test_wgmma_gemm_is_refused_where_no_warpgroup_grid_covers_the_tile():
    # T.wgmma_gemm asks for wgmma: a 32-row tile over one warpgroup has no
    # 64-row wgmma tiling, refused on sm_90a (TileLang's refusal and
    # message) where T.gemm falls back to mma.sync; sm_80 runs it as T.gemm
    def program(gemm, rows):
        @T.prim_func
        def main(A: T.Tensor((rows, 16), "float16"), B: T.Tensor((16, 64), "float16"),
                 D: T.Tensor((rows, 64), "float32")):
            with T.Kernel(1, threads=128):
                A_s = T.alloc_shared((rows, 16), "float16")
                B_s = T.alloc_shared((16, 64), "float16")
                C = T.alloc_fragment((rows, 64), "float32")
                T.copy(A, A_s)
                T.copy(B, B_s)
                gemm(A_s, B_s, C, clear_accum=True)
                T.wait_wgmma(0)
                T.copy(C, D)

        return main

    with pytest.raises(CompilationError, match=r"T\.wgmma_gemm\(\) requires Hopper WGMMA "
                                               r"lowering: no grid of whole warpgroups covers "
                                               r"this 32x64 tile over 128 threads"):
        tl.compile(program(T.wgmma_gemm, 32), target="cuda:sm_90a")
    sm90 = tl.compile(program(T.wgmma_gemm, 64), target="cuda:sm_90a")
    assert "wgmma.mma_async" in sm90.get_kernel_source()
    tl.compile(program(lambda *a, **k: T.gemm(*a, **k, wg_wait=-1), 32), target="cuda:sm_90a")
    tl.compile(program(T.wgmma_gemm, 32), target="cuda:sm_80")
