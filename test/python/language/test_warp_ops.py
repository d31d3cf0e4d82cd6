"""TileLang's SIMT style and warp-level primitives: per-thread stores
(`B[tx] = ...`), lanes and warps, shuffles, votes, matches, warp reductions,
election, block votes. The GPU results are checked against PyTorch on random
inputs (marked gpu); every target's code generation is checked by compiling
for sm_80, sm_90a (ptxas) and gfx942; the CPU target refuses what it cannot
run with a clear error."""

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.base.errors import CompilationError

GPU_TARGETS = ["cuda:sm_80", "cuda:sm_90a", "rocm:gfx942"]


def compile_error(fn, target):
    with pytest.raises((TileLangError, CompilationError)) as info:
        tl.compile(fn, target=target)
    return str(info.value)


def cuda(x):
    return torch.as_tensor(x).cuda()


# -- programs ------------------------------------------------------------------


def per_thread_store(n=256):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            B[tx] = A[tx] * 2.0 + 1.0

    return main


def shuffles(width, delta, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((128,), dtype), Out: T.Tensor((4, 128), dtype)):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            v = A[tx]
            Out[0, tx] = T.shfl_sync(v, delta, width)
            Out[1, tx] = T.shfl_xor(v, delta, width)
            Out[2, tx] = T.shfl_up(v, delta, width)
            Out[3, tx] = T.shfl_down(v, delta, width)

    return main


def shuffle_reference(a, width, delta):
    """CUDA's __shfl_*_sync over warps of 32 lanes in segments of `width`."""
    n = a.shape[0]
    out = np.empty((4, n), a.dtype)
    for t in range(n):
        lane, base = t % 32, t - t % 32
        start = lane - lane % width
        out[0, t] = a[base + start + delta % width]
        j = lane ^ delta
        out[1, t] = a[base + j] if j < start + width else a[t]
        j = lane - delta
        out[2, t] = a[base + j] if j >= start else a[t]
        j = lane + delta
        out[3, t] = a[base + j] if j < start + width else a[t]
    return out


def votes():
    @T.prim_func
    def main(P: T.Tensor((128,), "int32"), Out: T.Tensor((6, 128), "int64")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            p = P[tx]
            Out[0, tx] = T.any_sync(p)
            Out[1, tx] = T.all_sync(p)
            Out[2, tx] = T.ballot_sync(p)
            Out[3, tx] = T.ballot(p != 0)
            Out[4, tx] = T.activemask()
            Out[5, tx] = T.syncthreads_count(p)

    return main


def lanes(warp_size=None):
    @T.prim_func
    def main(Out: T.Tensor((5, 192), "int32")):
        with T.Kernel(1, threads=192):
            tx = T.get_thread_binding()
            Out[0, tx] = T.get_lane_idx(warp_size)
            Out[1, tx] = T.get_warp_idx(warp_size)
            Out[2, tx] = T.get_warp_idx_sync(warp_size)
            Out[3, tx] = T.get_warp_group_idx()
            Out[4, tx] = T.shuffle_elect(64)

    return main


def warp_reduce(kind, dtype):
    fn = getattr(T, f"warp_reduce_{kind}")

    @T.prim_func
    def main(A: T.Tensor((128,), dtype), B: T.Tensor((128,), dtype)):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            v = T.alloc_local((1,), dtype)
            v[0] = A[tx]
            B[tx] = fn(v[0])

    return main


def matches():
    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), Out: T.Tensor((2, 64), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            Out[0, tx] = T.match_any_sync(A[tx])
            Out[1, tx] = T.match_all_sync(A[tx] // 1000)

    return main


# -- code generation (no GPU needed) -------------------------------------------


@pytest.mark.parametrize("target", GPU_TARGETS)
@pytest.mark.parametrize("program", [per_thread_store, lambda: shuffles(16, 3),
                                     lambda: shuffles(32, 5, "float16"),
                                     lambda: shuffles(8, 1, "int64"),
                                     lambda: lanes(), lambda: warp_reduce("sum", "float32"),
                                     lambda: warp_reduce("bitor", "int32")],
                         ids=["store", "shfl", "shfl16", "shfl64", "lanes", "reduce",
                              "reduce_or"])
def test_compiles_for_every_gpu(program, target):
    assert tl.compile(program(), target=target).get_kernel_source()


def test_per_thread_stores_are_every_threads():
    """B[tx] = ... stores in every thread (TileLang's SIMT style): no guard
    on the thread index before the store (it once stored from thread 0 only)."""
    ptx = tl.compile(per_thread_store(), target="cuda:sm_90a").get_kernel_source()
    body = ptx[ptx.index("{"):]
    assert "st.global" in body and "bra" not in body, body


def test_nvidia_instructions():
    ptx = tl.compile(shuffles(16, 3), target="cuda:sm_90a").get_kernel_source()
    for insn in ("shfl.sync.idx.b32", "shfl.sync.bfly.b32", "shfl.sync.up.b32",
                 "shfl.sync.down.b32"):
        assert insn in ptx, insn
    # segments of 16 lanes: c = ((32 - 16) << 8) | 31 = 4127 (up: 4096)
    assert "4127" in ptx and "4096" in ptx
    ptx = tl.compile(votes(), target="cuda:sm_80").get_kernel_source()
    for insn in ("vote.sync.any.pred", "vote.sync.all.pred", "vote.sync.ballot.b32",
                 "activemask.b32", "bar.red.popc"):
        assert insn in ptx, insn
    assert "match.any.sync.b32" in tl.compile(matches(), target="cuda:sm_80").get_kernel_source()
    assert "elect.sync" in tl.compile(lanes(), target="cuda:sm_90a").get_kernel_source()
    # sm_80 has no elect.sync: the lowest active lane.
    assert "elect.sync" not in tl.compile(lanes(), target="cuda:sm_80").get_kernel_source()


def test_amd_refuses_match_and_block_votes():
    assert "__match_any_sync" in compile_error(matches(), "rocm:gfx942")
    assert "not supported on ROCm" in compile_error(votes(), "rocm:gfx942")


# -- the CPU target ------------------------------------------------------------


@pytest.mark.parametrize("program", [lambda: shuffles(32, 1), lambda: warp_reduce("max", "float32"),
                                     matches])
def test_the_cpu_refuses_warp_operations(program):
    msg = compile_error(program(), "cpu")
    assert "compile for a GPU target" in msg


def test_block_votes_and_sync_warp_run_on_the_cpu(rng):
    """Every thread of a CPU block votes the same predicate: the count is
    the block's threads, and/or are the predicate."""
    @T.prim_func
    def main(P: T.Tensor((1,), "int32"), Out: T.Tensor((3,), "int32")):
        with T.Kernel(1, threads=96):
            T.sync_warp()
            Out[0] = T.syncthreads_count(P[0] > 0)
            Out[1] = T.syncthreads_and(P[0])
            Out[2] = T.syncthreads_or(P[0] * 0)

    kernel = tl.compile(main, target="cpu")
    for p in (0, int(rng.integers(1, 100))):
        out = np.zeros(3, np.int32)
        kernel(np.array([p], np.int32), out)
        np.testing.assert_array_equal(out, [96 * (p > 0), int(p != 0), 0])


# -- errors --------------------------------------------------------------------


def test_argument_errors_name_the_call():
    @T.prim_func
    def float_predicate(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.any_sync(A[tx])

    assert "T.any_sync requires an integer or boolean predicate" in \
        compile_error(float_predicate, "cuda:sm_90a")

    @T.prim_func
    def bad_width(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.shfl_xor(A[tx], 1, 12)

    assert "width must be a power of two in [1, 32], got 12" in \
        compile_error(bad_width, "cuda:sm_90a")

    @T.prim_func
    def float_bitor(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.warp_reduce_bitor(A[tx])

    assert "T.warp_reduce_bitor needs an integer value" in compile_error(float_bitor, "cuda:sm_90a")

    @T.prim_func
    def group(A: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            A[tx] = T.get_warp_group_idx(None, 2)

    assert "expects `warp_size`" in compile_error(group, "cuda:sm_90a")


def test_tile_operations_under_a_per_thread_condition_are_refused():
    """A tile op runs on all threads together: it cannot sit under a branch
    on a per-thread value (here a thread's own element)."""
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            s = T.alloc_shared((128,), "float32")
            if A[tx] > 0:
                T.copy(A, s)
            T.copy(s, B)

    msg = compile_error(main, "cuda:sm_90a")
    assert "a tile operation under a condition on the thread index that is not a role" in msg


def _own_buffers_under_a_condition():
    """Each thread fills and copies its own local buffer where its element
    of M is set (TileKernels' top-2 gate fills its registers under a
    per-token mask): no tile op of the block, no refusal."""
    @T.prim_func
    def main(A: T.Tensor((128, 4), "float32"), M: T.Tensor((128,), "int32"),
             B: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            loc = T.alloc_local((4,), "float32")
            T.fill(loc, -1.0)
            if M[tx] != 0:
                T.fill(loc, 2.0)
                T.copy(A[tx, 0:4], loc)
                for j in T.serial(4):
                    loc[j] = loc[j] * 3.0
            T.copy(loc, B[tx, 0:4])

    return main


def test_a_threads_own_buffers_under_a_per_thread_condition():
    # Accepted (it was refused), the fill and the copy kept under the branch
    # (not hoisted out of it) and no block barrier around them: each thread
    # works on its own registers alone.
    kernel = tl.compile(_own_buffers_under_a_condition(), target="cuda:sm_90a")
    lines = kernel.mlir("layout").splitlines()
    start = next(k for k, line in enumerate(lines) if "scf.if" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(k for k in range(start + 1, len(lines))
               if lines[k].strip() == "}" and len(lines[k]) - len(lines[k].lstrip()) == indent)
    branch = "\n".join(lines[start:end])
    assert "tile.fill" in branch and "tile.copy %arg0" in branch, branch
    ptx = kernel.get_source()
    assert "bar.sync" not in ptx and "barrier.sync" not in ptx


@pytest.mark.gpu
def test_a_threads_own_buffers_under_a_per_thread_condition_on_gpu():
    a = torch.randn(128, 4, device="cuda")
    m = (torch.arange(128, device="cuda") % 3 == 0).int()
    b = torch.zeros(128, 4, device="cuda")
    tl.compile(_own_buffers_under_a_condition(), target="cuda")(a, m, b)
    want = torch.where(m[:, None] != 0, a * 3.0, torch.full_like(a, -1.0))
    torch.testing.assert_close(b, want, rtol=0, atol=0)


# -- results on the GPU --------------------------------------------------------


@pytest.mark.gpu
def test_per_thread_store_on_gpu(rng):
    kernel = tl.compile(per_thread_store(), target="cuda")
    a = rng.standard_normal(256).astype(np.float32)
    b = torch.zeros(256, device="cuda")
    kernel(cuda(a), b)
    np.testing.assert_allclose(b.cpu().numpy(), a * 2 + 1, rtol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("width,delta", [(32, 1), (32, 5), (16, 3), (8, 7), (4, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int8"])
def test_shuffles_on_gpu(width, delta, dtype, rng):
    kernel = tl.compile(shuffles(width, delta, dtype), target="cuda")
    a = (rng.standard_normal(128) * 50).astype(dtype)
    out = torch.zeros((4, 128), dtype=getattr(torch, dtype), device="cuda")
    kernel(cuda(a), out)
    np.testing.assert_array_equal(out.cpu().numpy(), shuffle_reference(a, width, delta))


@pytest.mark.gpu
def test_votes_on_gpu(rng):
    kernel = tl.compile(votes(), target="cuda")
    p = (rng.random(128) < 0.3).astype(np.int32) * rng.integers(1, 9, 128).astype(np.int32)
    p[64:96] = 1  # warp 2 votes all true
    p[96:] = 0  # warp 3 all false
    out = torch.zeros((6, 128), dtype=torch.int64, device="cuda")
    kernel(cuda(p), out)
    got = out.cpu().numpy()
    for w in range(4):
        lanes = p[32 * w:32 * (w + 1)] != 0
        bits = sum(1 << i for i in range(32) if lanes[i])
        sl = slice(32 * w, 32 * (w + 1))
        assert (got[0, sl] == int(lanes.any())).all()
        assert (got[1, sl] == int(lanes.all())).all()
        assert (got[2, sl] == bits).all() and (got[3, sl] == bits).all()
        assert (got[4, sl] == 0xFFFFFFFF).all()
    assert (got[5] == int((p != 0).sum())).all()


@pytest.mark.gpu
def test_lanes_warps_and_election_on_gpu():
    kernel = tl.compile(lanes(), target="cuda")
    out = torch.zeros((5, 192), dtype=torch.int32, device="cuda")
    kernel(out)
    t = np.arange(192)
    got = out.cpu().numpy()
    np.testing.assert_array_equal(got[0], t % 32)
    np.testing.assert_array_equal(got[1], t // 32)
    np.testing.assert_array_equal(got[2], t // 32)
    np.testing.assert_array_equal(got[3], t // 128)
    # one lane (the lowest) of every second warp: groups of 64 threads
    np.testing.assert_array_equal(got[4], ((t % 64) == 0).astype(np.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("kind,dtype", [("sum", "float32"), ("sum", "int32"), ("max", "float32"),
                                        ("min", "float16"), ("max", "uint32"),
                                        ("bitand", "int32"), ("bitor", "int64"),
                                        ("sum", "int8")])
def test_warp_reductions_on_gpu(kind, dtype, rng):
    kernel = tl.compile(warp_reduce(kind, dtype), target="cuda")
    if dtype.startswith("float"):
        a = rng.standard_normal(128).astype(dtype)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(max(info.min, -1000), min(info.max, 1000), 128).astype(dtype)
    b = torch.zeros(128, dtype=getattr(torch, dtype), device="cuda")
    kernel(cuda(a), b)
    op = {"sum": np.sum, "max": np.max, "min": np.min,
          "bitand": np.bitwise_and.reduce, "bitor": np.bitwise_or.reduce}[kind]
    got = b.cpu().numpy()
    for w in range(4):
        seg = a[32 * w:32 * (w + 1)]
        ref = op(seg.astype(np.float64) if dtype.startswith("float") else seg)
        if kind == "sum" and dtype == "int8":
            ref = np.int8(np.int64(seg.astype(np.int64).sum()).astype(np.int8))
        np.testing.assert_allclose(got[32 * w:32 * (w + 1)].astype(np.float64),
                                   np.full(32, ref, np.float64),
                                   rtol=1e-5 if dtype == "float32" else 1e-2)
        assert (got[32 * w:32 * (w + 1)] == got[32 * w]).all()  # every lane agrees


@pytest.mark.gpu
def test_matches_on_gpu(rng):
    kernel = tl.compile(matches(), target="cuda")
    a = rng.integers(0, 4, 64).astype(np.int32)
    a[32:] = 1234  # the second warp agrees (a // 1000 == 1 in all of it)
    out = torch.zeros((2, 64), dtype=torch.int64, device="cuda")
    kernel(cuda(a), out)
    got = out.cpu().numpy()
    for t in range(64):
        w = t // 32
        seg = a[32 * w:32 * (w + 1)]
        assert got[0, t] == sum(1 << i for i in range(32) if seg[i] == a[t])
    assert (got[1, :32] == (0xFFFFFFFF if len(set(a[:32] // 1000)) == 1 else 0)).all()
    assert (got[1, 32:] == 0xFFFFFFFF).all()


# -- named barriers --------------------------------------------------------------


def handoff():
    """Warp 0 hands a value to warp 1 through named barriers (TileLang's
    T.named_barrier_arrive / T.sync_threads(id, count))."""
    @T.prim_func
    def main(inp: T.Tensor((1,), "int32"), out: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            slot = T.alloc_shared((1,), "int32")
            if tx < 32:
                if tx == 0:
                    slot[0] = inp[0] + 1
                T.named_barrier_arrive(10, 64)
                T.sync_threads(11, 64)
            else:
                T.sync_threads(10, 64)
                if tx == 32:
                    out[0] = slot[0]
                T.named_barrier_arrive(11, 64)

    return main


def test_named_barriers_with_run_time_ids():
    ptx = tl.compile(handoff(), target="cuda:sm_90a").get_kernel_source()
    assert "bar.arrive 10, 64" in ptx and "bar.sync \t10, 64" in ptx

    @T.prim_func
    def dynamic(A: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            T.sync_threads(T.int32(1))
            T.sync_threads(A[0], 128)
            A[tx] = tx

    ptx = tl.compile(dynamic, target="cuda:sm_80").get_kernel_source()
    assert "bar.sync \t1;" in ptx and "bar.sync \t%r" in ptx
    assert "named barrier" in compile_error(dynamic, "rocm:gfx942")


def test_named_barriers_on_the_cpu(rng):
    """One thread of control has nothing to wait for."""
    @T.prim_func
    def main(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            s = T.alloc_shared((8,), "float32")
            T.copy(A, s)
            T.sync_threads(2, 128)
            T.sync_threads(A[0] > 0, 128)
            T.named_barrier_arrive(3, 128)
            T.copy(s, B)

    a = rng.standard_normal(8).astype(np.float32)
    b = np.zeros(8, np.float32)
    tl.compile(main, target="cpu")(a, b)
    np.testing.assert_array_equal(b, a)


def test_run_time_barrier_ids_and_roles_are_refused():
    @T.prim_func
    def main(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx < 128:
                T.sync_threads()
            T.sync_threads(T.cast(A[0], "int32"), 256)

    assert "names its barrier at run time" in compile_error(main, "cuda:sm_90a")


@pytest.mark.gpu
def test_named_barrier_handoff_on_gpu(rng):
    kernel = tl.compile(handoff(), target="cuda")
    v = int(rng.integers(0, 1000))
    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    kernel(cuda(np.array([v], np.int32)), out)
    assert int(out[0]) == v + 1


# -- TVM's thread all-reduce (T.comm_reducer, T.tvm_thread_allreduce) ------------


def allreduce(threads, dtype, op, identity, two_d=False):
    """TileLang's SIMT GEMV and issue 2628: every thread gets the reduction
    of the values of the threads along threadIdx.x."""
    shape = (threads, 4) if two_d else (threads,)
    rows = 4 if two_d else 1

    @T.prim_func
    def main(A: T.Tensor((rows * threads,), dtype), C: T.Tensor((rows,), dtype)):
        with T.Kernel(1, threads=shape):
            tk = T.get_thread_binding(0)
            row = T.get_thread_binding(1) if two_d else 0
            v = T.alloc_local((1,), dtype)
            v[0] = A[row * threads + tk]
            r = T.alloc_local((1,), dtype)
            with T.attr(T.comm_reducer(op, [T.cast(identity, dtype)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, r[0], tk,
                                                  dtype="handle"))
            C[row] = r[0]

    return main


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_allreduce_compiles(target):
    for args in ((8, "int8", lambda x, y: x + y, 0), (32, "float32", lambda x, y: x * y, 1),
                 (128, "float32", lambda x, y: x + y, 0)):
        assert tl.compile(allreduce(*args), target=target).get_kernel_source()
    ptx = tl.compile(allreduce(16, "bfloat16", lambda x, y: x + y, 0, True),
                     target="cuda:sm_90a").get_kernel_source() if target == "cuda:sm_90a" else ""
    assert not ptx or ptx.count("shfl.sync.bfly") == 4  # log2(16) steps within the warp


def test_allreduce_errors():
    @T.prim_func
    def no_scope(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            r = T.alloc_local((1,), "float32")
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[tx], True, r[0], tx))

    assert "needs a reduction" in compile_error(no_scope, "cuda:sm_90a")

    @T.prim_func
    def not_a_thread(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            r = T.alloc_local((1,), "float32")
            with T.attr(T.comm_reducer(lambda x, y: x + y, [0.0]), "reduce_scope", 0):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), A[0], True, r[0], bx))

    assert "must be a thread index" in compile_error(not_a_thread, "cuda:sm_90a")
    assert "compile for a GPU target" in compile_error(allreduce(8, "int32", lambda x, y: x + y,
                                                                 0), "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("threads,dtype,kind", [(8, "int8", "sum"), (32, "float32", "sum"),
                                                (16, "bfloat16", "sum"), (8, "int32", "prod"),
                                                (128, "float32", "sum"), (256, "int32", "max")])
def test_allreduce_on_gpu(threads, dtype, kind, rng):
    op, ident = {"sum": (lambda x, y: x + y, 0), "prod": (lambda x, y: x * y, 1),
                 "max": (lambda x, y: T.max(x, y), -2 ** 31)}[kind]
    kernel = tl.compile(allreduce(threads, dtype, op, ident), target="cuda")
    if dtype.startswith("int"):
        a = rng.integers(-3 if kind == "prod" else -50, 4 if kind == "prod" else 50,
                         threads).astype(dtype)
    else:
        a = rng.integers(-8, 8, threads).astype(np.float32)  # exact in bfloat16 sums
    ta = torch.from_numpy(a).to(getattr(torch, dtype)).cuda()
    c = torch.zeros(1, dtype=ta.dtype, device="cuda")
    kernel(ta, c)
    ref = {"sum": ta.sum, "prod": ta.prod, "max": ta.max}[kind]().to(ta.dtype)
    torch.testing.assert_close(c[0], ref, rtol=1e-5, atol=1e-5)


# -- early exit (T.thread_return) ------------------------------------------------


def early_exit(n, threads=256):
    """Threads past `n` leave the kernel before the store (CUDA's `return`)."""
    @T.prim_func
    def main(A: T.Tensor((threads,), "float32"), B: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            if tx >= n:
                T.thread_return()
            B[tx] = A[tx] + 1.0

    return main


def test_thread_return_code_generation():
    for chip in ("sm_80", "sm_90a"):
        ptx = tl.compile(early_exit(100), target=f"cuda:{chip}").get_kernel_source()
        assert "exit;" in ptx
    amd = tl.compile(early_exit(100), target="rocm:gfx942").get_kernel_source()
    assert amd.count("s_endpgm") >= 2  # the exit and the kernel's end
    assert "compile for a GPU target" in compile_error(early_exit(100), "cpu")

    @T.prim_func
    def outside(A: T.Tensor((4,), "float32")):
        T.thread_return()

    with pytest.raises(TileLangError, match="T.thread_return"):
        tl.compile(outside, target="cuda:sm_90a")


def test_amd_roles_of_per_thread_code():
    """`if tx < n:` over per-thread code needs no barrier of its own, so
    ROCm (no named barriers) takes it; a role running tile operations is
    refused there."""
    @T.prim_func
    def guarded(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx < 100:
                B[tx] = T.shfl_xor(A[tx], 1)

    amd = tl.compile(guarded, target="rocm:gfx942").get_kernel_source()
    assert "ds_swizzle" in amd or "ds_bpermute" in amd

    @T.prim_func
    def tiled(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            if tx < 128:
                s = T.alloc_shared((64,), "float32")
                T.copy(A, s)
                T.copy(s, B)

    assert "named barriers" in compile_error(tiled, "rocm:gfx942")


@pytest.mark.gpu
def test_thread_return_on_gpu(rng):
    n = int(rng.integers(1, 256))
    a = rng.standard_normal(256).astype(np.float32)
    b = torch.full((256,), -5.0, device="cuda")
    tl.compile(early_exit(n), target="cuda")(cuda(a), b)
    got = b.cpu().numpy()
    np.testing.assert_array_equal(got[:n], a[:n] + 1.0)
    assert (got[n:] == -5.0).all()


# -- CUDA's element intrinsics: T.__ldg, T.__ffs ---------------------------------


def ffs_program(n, dtype):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), X: T.Tensor((n,), "float32"),
             B: T.Tensor((n,), "int32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(n, threads=32) as bx:
            B[bx] = T.__ffs(A[bx])
            Y[bx] = T.__ldg(X[bx]) + T.__ldg(X, (bx + 1) % n)

    return main


def ffs_reference(a):
    bits = a.dtype.itemsize * 8
    return np.array([((int(v) % (1 << bits)) & -(int(v) % (1 << bits))).bit_length()
                     for v in a], np.int32)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32"])
def test_ffs_and_ldg_on_the_cpu(dtype, rng):
    n = 64
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:4] = [0, 1, 8, info.max]
    a[4:8] <<= rng.integers(0, 20, 4).astype(dtype)
    x = rng.standard_normal(n).astype(np.float32)
    b = np.zeros(n, np.int32)
    y = np.zeros(n, np.float32)
    tl.compile(ffs_program(n, dtype), target="cpu")(a, x, b, y)
    np.testing.assert_array_equal(b, ffs_reference(a))
    np.testing.assert_allclose(y, x + np.roll(x, -1), rtol=1e-6)


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_ffs_and_ldg_compile(target):
    assert tl.compile(ffs_program(64, "int64"), target=target).get_kernel_source()


def test_ffs_of_constants_and_errors():
    assert [T.__ffs(v) for v in (0, 1, 8, 6, -1)] == [0, 1, 4, 2, 1]

    @T.prim_func
    def of_float(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=32):
            B[0] = T.__ffs(A[0, 0])

    @T.prim_func
    def no_index(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            B[0] = T.__ldg(A)

    @T.prim_func
    def flat_index(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            B[0] = T.__ldg(A, 3)

    @T.prim_func
    def of_slice(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            B[0] = T.__ldg(A[0, 0:2])

    for fn, message in ((of_float, "32- or 64-bit integer"), (no_index, "needs an index"),
                        (flat_index, "rank-2 buffer"), (of_slice, "element load")):
        with pytest.raises(TileLangError, match=message):
            tl.compile(fn, target="cpu")


@pytest.mark.gpu
def test_ffs_and_ldg_on_gpu(rng):
    n = 64
    a = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    a[0] = 0
    x = rng.standard_normal(n).astype(np.float32)
    b = torch.zeros(n, dtype=torch.int32, device="cuda")
    y = torch.zeros(n, device="cuda")
    tl.compile(ffs_program(n, "int32"), target="cuda")(cuda(a), cuda(x), b, y)
    np.testing.assert_array_equal(b.cpu().numpy(), ffs_reference(a))
    np.testing.assert_allclose(y.cpu().numpy(), x + np.roll(x, -1), rtol=1e-6)
