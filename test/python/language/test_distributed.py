"""Symmetric buffers, peer views and signals (T.SymmetricTensor, X.peer(r),
T.signal, T.wait; tl.distributed): a world of one rank with plain tensors
(CPU, and a CUDA tensor on a GPU), several ranks simulated in one process
(threads, NumPy parts), the library's all-reduce, all-gather GEMM and GEMM
reduce-scatter against the sequential collectives, timeouts, and the
errors for what cannot work."""

import time

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels import distributed as kd
from support.devices import get, put

dist = tl.distributed
N = 256


def push_program(world=4, timeout_ms=2000):
    """Rank `rank` copies X into row `rank` of rank `peer`'s buffer, sets
    its flag there, and waits for rank `src`'s flag here."""

    @T.prim_func
    def push(X: T.Tensor((N,), "float32"), buf: T.SymmetricTensor((world, N), "float32"),
             flags: T.SymmetricTensor((world,), "int32"), rank: T.int32, peer: T.int32,
             src: T.int32):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((N,), "float32")
            T.copy(X, s)
            T.copy(s, buf.peer(peer)[rank, :])
            T.signal(flags.peer(peer)[rank], 7)
            T.wait(flags[src], 7, timeout_ms=timeout_ms)

    return push


def line_of(fn, text):
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


def test_a_plain_tensor_is_a_world_of_one_rank(target, rng):
    """World size 1 end to end: the kernel pushes into its own buffer and
    waits on its own flag."""
    kernel = tl.compile(push_program(), target=target)
    x = rng.random(N).astype(np.float32)
    buf, flags = np.zeros((4, N), np.float32), np.zeros(4, np.int32)
    if target == "cuda":
        x, buf, flags = (put(a, target) for a in (x, buf, flags))
        kernel(x, buf, flags, 0, 0, 0)
        x, buf, flags = (get(a) for a in (x, buf, flags))
    else:
        kernel(x, buf, flags, 0, 0, 0)
    np.testing.assert_array_equal(buf[0], x)
    assert not buf[1:].any()
    np.testing.assert_array_equal(flags, [7, 0, 0, 0])


def test_a_rank_outside_the_world_is_an_error(rng):
    kernel = tl.compile(push_program(), target="cpu")
    with pytest.raises(tl.DeviceAssertionError, match=r"X.peer\(rank\): rank outside the "
                                                      r"world \(the peer table\)"):
        kernel(rng.random(N).astype(np.float32), np.zeros((4, N), np.float32),
               np.zeros(4, np.int32), 0, 2, 0)


def test_a_saved_kernel_keeps_its_symmetric_parameters(tmp_path, rng):
    """The peer tables are hidden parameters of the saved signature too."""
    kernel = tl.compile(push_program(2), target="cpu")
    kernel.save(tmp_path / "push")
    loaded = tl.load(tmp_path / "push")
    assert [p.name for p in loaded.params if p.peers_of] == ["buf__peers", "flags__peers"]
    bufs = dist.simulate(2, (2, N), "float32")
    flags = dist.simulate(2, (2,), "int32")
    xs = [rng.random(N).astype(np.float32) for _ in range(2)]
    dist.run_ranks(2, lambda r: loaded(xs[r], bufs[r], flags[r], r, 1 - r, 1 - r))
    np.testing.assert_array_equal(bufs[1].local[0], xs[0])
    np.testing.assert_array_equal(bufs[0].local[1], xs[1])


@pytest.mark.parametrize("world", [2, 4])
def test_simulated_ranks_push_to_each_other(world, rng):
    """Rank r pushes into rank (r + 1) % world and waits for rank (r - 1)'s
    push into its own buffer."""
    kernel = tl.compile(push_program(world), target="cpu")
    bufs = dist.simulate(world, (world, N), "float32")
    flags = dist.simulate(world, (world,), "int32")
    xs = [rng.random(N).astype(np.float32) for _ in range(world)]
    dist.run_ranks(world, lambda r: kernel(xs[r], bufs[r], flags[r], r, (r + 1) % world,
                                              (r - 1) % world))
    for r in range(world):
        src = (r - 1) % world
        np.testing.assert_array_equal(bufs[r].part(r)[src], xs[src])
        others = [q for q in range(world) if q != src]
        assert not bufs[r].local[others].any()
        assert flags[r].local[src] == 7
    # A view's parts are the other ranks' local arrays.
    assert bufs[0].part(1) is bufs[1].local


@pytest.mark.parametrize("timeout_ms", [5000, (2**63 - 1) // 10**6])
def test_a_rank_starting_late_is_waited_for(timeout_ms, rng):
    """(also at the longest timeout, whose nanoseconds just fit int64)"""
    kernel = tl.compile(push_program(2, timeout_ms=timeout_ms), target="cpu")
    bufs = dist.simulate(2, (2, N), "float32")
    flags = dist.simulate(2, (2,), "int32")
    xs = [rng.random(N).astype(np.float32) for _ in range(2)]

    def rank(r):
        if r == 1:
            time.sleep(0.3)
        kernel(xs[r], bufs[r], flags[r], r, 1 - r, 1 - r)

    dist.run_ranks(2, rank)
    np.testing.assert_array_equal(bufs[0].local[1], xs[1])
    np.testing.assert_array_equal(bufs[1].local[0], xs[0])


def test_a_rank_that_never_signals_times_out_with_the_users_line(rng):
    program = push_program(2, timeout_ms=200)
    kernel = tl.compile(program, target="cpu")
    bufs = dist.simulate(2, (2, N), "float32")
    flags = dist.simulate(2, (2,), "int32")
    start = time.monotonic()
    with pytest.raises(tl.DeviceAssertionError) as info:  # rank 1 never runs
        kernel(rng.random(N).astype(np.float32), bufs[0], flags[0], 0, 1, 1)
    assert 0.2 <= time.monotonic() - start < 10
    e = info.value
    assert e.message.startswith("T.wait timed out after 200 ms: the flag never became == the "
                                "value")
    assert e.location.filename == __file__
    assert e.location.line == line_of(program.fn, "T.wait(")
    # Its own push still landed in rank 1's buffer.
    assert bufs[1].local[0].any() and flags[1].local[0] == 7


@pytest.mark.parametrize("world,dtype", [(2, "float32"), (4, "float16"), (3, "bfloat16")])
def test_allreduce_oneshot_matches_the_sum(world, dtype, rng):
    import torch

    n = 2500  # ragged: the last block is partial
    data, flag = kd.AllReduce.buffer_shapes(world, n, 1024)
    bufs, flags = dist.simulate(world, data, dtype), dist.simulate(world, flag, "int32")
    ars = [kd.AllReduce(bufs[r], flags[r], n, dtype, target="cpu") for r in range(world)]
    tdt = getattr(torch, dtype)
    for _ in range(3):  # epochs 1..3: both slots, flags never reset
        xs = [torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(tdt)
              for _ in range(world)]
        ys = dist.run_ranks(world, lambda r: ars[r](xs[r]))
        ref = sum(x.double() for x in xs)
        tol = 1e-6 if dtype == "float32" else (2e-2 if dtype == "bfloat16" else 4e-3)
        for y in ys:
            assert y.dtype == tdt
            err = ((y.double() - ref).norm() / ref.norm()).item()
            assert err < tol, err


@pytest.mark.parametrize("world", [2, 4])
def test_allgather_gemm_matches_gather_then_matmul(world, rng):
    M, N_, K = 64 * world, 96, 64
    gshape, fshape = kd.AllGatherGemm.buffer_shapes(world, M, K)
    gathered, flags = dist.simulate(world, gshape, "float16"), dist.simulate(world, fshape, "int32")
    ops = [kd.AllGatherGemm(gathered[r], flags[r], M, N_, K, target="cpu")
           for r in range(world)]
    rows = M // world
    for epoch in range(1, 4):  # both slots of the gathering buffer
        A = rng.standard_normal((M, K)).astype(np.float16)
        Bs = [rng.standard_normal((K, N_)).astype(np.float16) for _ in range(world)]
        Cs = dist.run_ranks(world, lambda r: ops[r](A[r * rows:(r + 1) * rows], Bs[r]))
        for r in range(world):
            ref = A.astype(np.float64) @ Bs[r].astype(np.float64)
            assert np.linalg.norm(Cs[r] - ref) / np.linalg.norm(ref) < 2e-3
            np.testing.assert_array_equal(gathered[r].local[epoch % 2], A)
            assert (flags[r].local == [epoch if q != r else 0 for q in range(world)]).all()


@pytest.mark.parametrize("world", [2, 4])
def test_gemm_reduce_scatter_matches_matmul_then_reduce_scatter(world, rng):
    M, N_, K = 64 * world, 80, 32
    pshape, fshape = kd.GemmReduceScatter.buffer_shapes(world, M, N_)
    parts, flags = dist.simulate(world, pshape, "float16"), dist.simulate(world, fshape, "int32")
    ops = [kd.GemmReduceScatter(parts[r], flags[r], M, N_, K, target="cpu")
           for r in range(world)]
    rows = M // world
    for _ in range(3):
        As = [rng.standard_normal((M, K)).astype(np.float16) for _ in range(world)]
        Bs = [rng.standard_normal((K, N_)).astype(np.float16) for _ in range(world)]
        outs = dist.run_ranks(world, lambda r: ops[r](As[r], Bs[r]))
        full = sum(a.astype(np.float64) @ b.astype(np.float64) for a, b in zip(As, Bs))
        for r in range(world):
            ref = full[r * rows:(r + 1) * rows]
            assert outs[r].shape == (rows, N_)
            assert np.linalg.norm(outs[r] - ref) / np.linalg.norm(ref) < 2e-3


@pytest.mark.parametrize("chip", ["cuda:sm_80", "cuda:sm_90a", "hip:gfx942"])
def test_library_kernels_compile_for_gpus(chip):
    """What a GPU runs: on NVIDIA a system fence and a release store before
    a flag update, acquire loads at system scope on %globaltimer in a wait
    (inline PTX: LLVM's atomics would stay at GPU scope)."""
    for program, signals, waits in ((kd.allreduce_oneshot(8, 4096), True, True),
                                    (kd.allgather_gemm(2, 256, 256, 128), False, True),
                                    (kd.gemm_push(2, 256, 256, 128), True, False),
                                    (kd.reduce_finish(2, 256, 256), False, True)):
        src = tl.compile(program, target=chip).get_source()
        if chip.startswith("cuda"):
            assert ("fence.acq_rel.sys" in src and "st.release.sys.global.b32" in src) == signals
            assert ("ld.acquire.sys.global.b32" in src and "%globaltimer" in src) == waits


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (also in AOT prepare)")
def test_symmetric_memory_through_torch_distributed_on_one_gpu():
    """World size 1 end to end on a GPU: buffers from PyTorch's symmetric
    memory over an NCCL group, our all-reduce, then NCCL on the same
    stream."""
    import torch
    import torch.distributed as tdist

    tdist.init_process_group("nccl", store=tdist.HashStore(), rank=0, world_size=1)
    try:
        n = 3000
        data, flag = kd.AllReduce.buffer_shapes(1, n, 1024)
        buf, flags = dist.empty(data, torch.float16), dist.empty(flag, torch.int32)
        flags.local.zero_()
        assert (buf.rank, buf.world_size) == (0, 1)
        assert buf.peers.tolist() == [buf.local.data_ptr()]
        ar = kd.AllReduce(buf, flags, n, "float16", target="cuda")
        for _ in range(3):
            x = torch.randn(n, device="cuda", dtype=torch.float16)
            y = ar(x)
            tdist.all_reduce(y)  # NCCL after our kernel, on torch's stream
            torch.testing.assert_close(y, x, rtol=0, atol=0)
    finally:
        tdist.destroy_process_group()


# --- errors ------------------------------------------------------------------------


def test_peer_of_a_plain_tensor_is_an_error():
    @T.prim_func
    def bad(X: T.Tensor((N,), "float32"), r: T.int32):
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((N,), "float32")
            T.copy(s, X.peer(r)[:])

    with pytest.raises(tl.TileLangError, match=r"'X' is not a symmetric buffer: X.peer\(rank\) "
                                               r"needs a T.SymmetricTensor") as info:
        tl.compile(bad, target="cpu")
    assert f"{__file__}:{line_of(bad.fn, 'X.peer(r)')}" in str(info.value)


def test_a_wait_nothing_can_signal_is_an_error():
    @T.prim_func
    def bad(F: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            T.wait(F[0], 1)

    with pytest.raises(tl.TileLangError, match="waits on a flag buffer that nothing in the "
                                               "kernel signals"):
        tl.compile(bad, target="cpu")


BAD = [
    (r"T.signal: op must be one of \('set', 'add'\)"),
    ("T.wait: cmp must be one of"),
    ("T.wait: timeout_ms must be an int from 1 to 9223372036854"),
    ("the flag 'G' must be an integer tensor in global memory"),
    ("T.signal expects a flag element such as F\\[i\\]"),
]


@pytest.mark.parametrize("which", range(len(BAD)))
def test_bad_signals_and_waits_are_refused(which):
    @T.prim_func
    def bad(F: T.SymmetricTensor((4,), "int32"), G: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            if which == 0:
                T.signal(F[0], 1, op="xor")
            elif which == 1:
                T.wait(F[0], 1, cmp="~")
            elif which == 2:
                T.wait(F[0], 1, timeout_ms=0)
            elif which == 3:
                T.signal(G[0], 1)
            else:
                T.signal(F, 1)

    with pytest.raises(tl.TileLangError, match=BAD[which]):
        tl.compile(bad, target="cpu")


@pytest.mark.parametrize("timeout", [(2**63 - 1) // 10**6 + 1, 2**63 - 1, 2**64 + 100])
def test_a_timeout_past_int64_nanoseconds_is_refused_at_the_users_line(timeout):
    """The poll counts int64 nanoseconds: a longer timeout overflowed and
    timed out at once (or, past int64, failed in the bindings)."""
    program = push_program(2, timeout_ms=timeout)
    with pytest.raises(tl.TileLangError) as info:
        tl.compile(program, target="cpu")
    assert "T.wait: timeout_ms must be an int from 1 to 9223372036854 (292 years" in str(info.value)
    assert info.value.location.line == line_of(program.fn, "T.wait(")


def test_a_signal_under_a_condition_on_the_thread_is_refused():
    """A signal synchronizes the block: threads that skip it would hang
    the others at its barrier."""
    @T.prim_func
    def bad(F: T.SymmetricTensor((4,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if tx % 2 == 0:
                T.signal(F[0], 1)

    with pytest.raises(tl.TileLangError, match="a tile operation under a condition on the "
                                               "thread index that is not a role"):
        tl.compile(bad, target="cuda:sm_90a")


@pytest.mark.parametrize("dtype", [np.int32, np.uint64])
def test_a_peer_table_of_another_dtype_is_refused(dtype):
    kernel = tl.compile(push_program(2), target="cpu")
    buf = dist.simulate(2, (2, N), "float32")[0]
    buf.peers = buf.peers.astype(dtype)
    flags = dist.simulate(2, (2,), "int32")[0]
    with pytest.raises(TypeError, match="peer table must be int64"):
        kernel(np.zeros(N, np.float32), buf, flags, 0, 0, 0)


def test_simulate_refuses_a_bad_world():
    with pytest.raises(tl.TileLangError, match="world must be a positive int"):
        dist.simulate(0, (4,), "float32")
