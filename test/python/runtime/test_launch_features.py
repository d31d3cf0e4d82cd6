"""How kernels are launched and synchronize with the grid and the stream:
T.sync_grid (a cooperative launch), T.pdl_trigger / T.pdl_sync
(programmatic dependent launch), T.annotate_min_blocks_per_sm and
T.annotate_l2_hit_ratio (launch hints). Code generation and the launch
record are checked here; results on the GPU against PyTorch (marked gpu);
what a target cannot do is a clear error."""

import os
import tempfile

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import CompilationError, TileLangError

N, BLOCK = 1024, 64


def reverse_through_the_grid():
    """Every block writes its slice, the grid synchronizes, every block
    reads the mirrored slice another block wrote."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(N // BLOCK, threads=128) as bx:
            for i in T.Parallel(BLOCK):
                B[bx * BLOCK + i] = A[bx * BLOCK + i] * 2.0
            T.sync_grid()
            for i in T.Parallel(BLOCK):
                C[bx * BLOCK + i] = B[N - 1 - bx * BLOCK - i] + 1.0

    return main


def pdl_pipeline():
    """TileLang's two-kernel PDL program: the producer triggers, the
    consumer waits before it reads what the producer wrote."""
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(N // 256, threads=256) as bx:
            for i in T.Parallel(256):
                B[bx * 256 + i] = A[bx * 256 + i] + 1.0
            T.pdl_trigger()
        with T.Kernel(N // 256, threads=256) as bx2:
            T.pdl_sync()
            for i in T.Parallel(256):
                C[bx2 * 256 + i] = B[bx2 * 256 + i] * 2.0

    return main


def hinted():
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N // 128, threads=128) as bx:
            T.annotate_min_blocks_per_sm(3)
            T.annotate_l2_hit_ratio({A: 0.6})
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] - 1.0

    return main


def compile_error(fn, target):
    with pytest.raises((TileLangError, CompilationError)) as info:
        tl.compile(fn, target=target)
    return str(info.value)


# -- code generation and the launch record -------------------------------------------


def test_grid_sync_is_a_cooperative_launch():
    kernel = tl.compile(reverse_through_the_grid(), target="cuda:sm_80")
    assert kernel.launch_features == {"cooperative": True}
    ptx = kernel.get_kernel_source()
    for insn in ("%envreg1", "%envreg2", "atom.add.release.gpu.u32", "ld.acquire.gpu.u32",
                 "trap;"):
        assert insn in ptx, insn


def test_pdl_launch_and_instructions():
    kernel = tl.compile(pdl_pipeline(), target="cuda:sm_90a")
    first, second = kernel.artifact.parts
    assert "griddepcontrol.launch_dependents" in first.source
    assert "griddepcontrol.wait" in second.source
    # the waiting kernel is launched with programmatic stream serialization
    assert first.launch.feature("pdl") is None and second.launch.feature("pdl") is True


def test_launch_hints():
    kernel = tl.compile(hinted(), target="cuda:sm_90a")
    assert ".minnctapersm 3" in kernel.get_kernel_source()
    assert kernel.launch_features == {"l2_hit_ratio": ((0, pytest.approx(0.6)),)}
    tl.compile(hinted(), target="rocm:gfx942")  # hints only: nothing to refuse


def test_launch_features_survive_save_and_load():
    kernel = tl.compile(reverse_through_the_grid(), target="cuda:sm_90a")
    with tempfile.TemporaryDirectory() as d:
        kernel.save(os.path.join(d, "k"))
        loaded = tl.load(os.path.join(d, "k"))
    assert loaded.launch_features == {"cooperative": True}


# -- targets without them ----------------------------------------------------------------


def test_what_targets_cannot_do():
    assert "needs sm_90 or newer" in compile_error(pdl_pipeline(), "cuda:sm_80")
    assert "programmatic dependent launch" in compile_error(pdl_pipeline(), "rocm:gfx942")
    assert "cooperative launch" in compile_error(reverse_through_the_grid(), "rocm:gfx942")
    assert "blocks run one after another" in compile_error(reverse_through_the_grid(), "cpu")


def test_pdl_and_hints_on_the_cpu(rng):
    """Kernels run in program order on the CPU: the PDL wait is satisfied,
    the hints change nothing."""
    a = rng.standard_normal(N).astype(np.float32)
    b, c = np.zeros(N, np.float32), np.zeros(N, np.float32)
    tl.compile(pdl_pipeline(), target="cpu")(a, b, c)
    np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)
    tl.compile(hinted(), target="cpu")(a, b)
    np.testing.assert_allclose(b, a - 1, rtol=1e-6)


def test_errors():
    @T.prim_func
    def in_role(A: T.Tensor((N,), "float32")):
        with T.Kernel(4, threads=256):
            tx = T.get_thread_binding()
            if tx < 128:
                T.sync_grid()

    assert "cannot run in the role of threads [0, 128)" in compile_error(in_role, "cuda:sm_90a")

    @T.prim_func
    def bad_ratio(A: T.Tensor((N,), "float32")):
        with T.Kernel(4, threads=128):
            T.annotate_l2_hit_ratio({A: 1.5})

    assert "must be a number in [0, 1], got 1.5" in compile_error(bad_ratio, "cuda:sm_90a")

    @T.prim_func
    def shared_ratio(A: T.Tensor((N,), "float32")):
        with T.Kernel(4, threads=128):
            s = T.alloc_shared((64,), "float32")
            T.annotate_l2_hit_ratio({s: 0.5})

    assert "applies to global tensors" in compile_error(shared_ratio, "cuda:sm_90a")

    @T.prim_func
    def zero_blocks(A: T.Tensor((N,), "float32")):
        with T.Kernel(4, threads=128):
            T.annotate_min_blocks_per_sm(0)

    assert "must be a positive integer, got 0" in compile_error(zero_blocks, "cuda:sm_90a")


# -- the GPU -----------------------------------------------------------------------------


@pytest.mark.gpu
def test_grid_sync_on_gpu(rng):
    kernel = tl.compile(reverse_through_the_grid(), target="cuda")
    a = torch.from_numpy(rng.standard_normal(N).astype(np.float32)).cuda()
    b, c = torch.zeros(N, device="cuda"), torch.zeros(N, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c, (a * 2).flip(0) + 1)


@pytest.mark.gpu
def test_a_cooperative_grid_too_large_is_refused():
    """More blocks than the device holds at once cannot synchronize: the
    launch says so instead of hanging."""
    big = 1 << 20

    @T.prim_func
    def main(A: T.Tensor((big,), "float32")):
        with T.Kernel(big // 64, threads=1024) as bx:
            s = T.alloc_shared((40000,), "float32")
            T.fill(s, 1.0)
            T.sync_grid()
            for i in T.Parallel(64):
                A[bx * 64 + i] = s[i]

    kernel = tl.compile(main, target="cuda")
    with pytest.raises(ValueError, match="must be resident at once"):
        kernel(torch.zeros(big, device="cuda"))


@pytest.mark.gpu
def test_pdl_pipeline_on_gpu(rng):
    kernel = tl.compile(pdl_pipeline(), target="cuda")
    a = torch.from_numpy(rng.standard_normal(N).astype(np.float32)).cuda()
    b, c = torch.zeros(N, device="cuda"), torch.zeros(N, device="cuda")
    for _ in range(3):
        kernel(a, b, c)
    torch.testing.assert_close(c, (a + 1) * 2)


@pytest.mark.gpu
def test_hinted_kernel_on_gpu(rng):
    kernel = tl.compile(hinted(), target="cuda")
    a = torch.from_numpy(rng.standard_normal(N).astype(np.float32)).cuda()
    b = torch.zeros(N, device="cuda")
    kernel(a, b)
    torch.testing.assert_close(b, a - 1)


# -- thread block clusters -------------------------------------------------------------


def cluster_ranks(cs=4):
    @T.prim_func
    def main(A: T.Tensor((128,), "int32")):
        with T.ClusterKernel(128, cluster_dims=(cs, 1, 1)) as bx:
            T.cluster_arrive()
            T.cluster_wait()
            r = T.block_rank_in_cluster()
            if T.get_thread_binding() == 0:
                A[bx] = r
            T.cluster_sync()

    return main


def cluster_handoff(arrive=lambda bar, rank: T.mbarrier_arrive(bar, rank)):
    """Block 0 of each cluster of 4 waits until the 128 threads of every
    block of its cluster arrived on its barrier, then writes how many
    blocks did. `arrive`: T.mbarrier_arrive(bar, cta_id) or its lower-level
    name T.ptx_arrive_cluster_barrier."""
    @T.prim_func
    def main(A: T.Tensor((32,), "int32")):
        with T.Kernel(32, threads=128, cluster_dims=4) as bx:
            mbar = T.alloc_cluster_barrier([512])
            T.cluster_sync()
            arrive(mbar, 0)
            if T.block_rank_in_cluster() == 0:
                T.mbarrier_wait_parity(mbar, 0)
                if T.get_thread_binding() == 0:
                    A[bx // 4] = 4
            T.cluster_sync()

    return main


def cluster_gemm(M=256, N=256, K=128, bm=128, bn=128, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             C: T.Tensor((M, N), "float16")):
        with T.ClusterKernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128,
                             cluster_dims=(2, 1, 1)) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


ARRIVE_PTX = T.ptx_arrive_cluster_barrier


def test_cluster_code_generation():
    ptx = tl.compile(cluster_ranks(), target="cuda:sm_90a").get_kernel_source()
    for insn in (".reqnctapercluster 4, 1, 1", "barrier.cluster.arrive", "barrier.cluster.wait",
                 "%cluster_ctarank"):
        assert insn in ptx, insn
    ptx = tl.compile(cluster_handoff(), target="cuda:sm_90a").get_kernel_source()
    assert "mapa" in ptx and "shared::cluster" in ptx
    low = tl.compile(cluster_handoff(ARRIVE_PTX), target="cuda:sm_90a").get_kernel_source()
    assert low == ptx  # T.ptx_arrive_cluster_barrier is the same arrival
    # the program's clusters stay (the warp specializer does not choose its own)
    assert ".reqnctapercluster 2, 1, 1" in tl.compile(cluster_gemm(), target="cuda:sm_90a") \
        .get_kernel_source()


def test_clusters_where_there_are_none(rng):
    assert "does not have (NVIDIA sm_90 and newer)" in compile_error(cluster_ranks(), "cuda:sm_80")
    assert "thread block clusters" in compile_error(cluster_handoff(), "rocm:gfx942")
    assert "compile for a GPU target" in compile_error(cluster_handoff(), "cpu")
    # a clustered kernel without cluster operations means the same on the CPU
    kernel = tl.compile(cluster_gemm(), target="cpu")
    a = torch.from_numpy(rng.standard_normal((256, 128))).half()
    b = torch.from_numpy(rng.standard_normal((128, 256))).half()
    c = torch.zeros(256, 256, dtype=torch.float16)
    kernel(a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


def test_cluster_errors():
    @T.prim_func
    def ragged(A: T.Tensor((8,), "int32")):
        with T.Kernel(6, cluster_dims=4):
            T.cluster_sync()

    assert "is not a multiple of the cluster's (4)" in compile_error(ragged, "cuda:sm_90a")

    @T.prim_func
    def too_big(A: T.Tensor((8,), "int32")):
        with T.Kernel(32, cluster_dims=(4, 4)):
            T.cluster_sync()

    assert "clusters hold at most 8" in compile_error(too_big, "cuda:sm_90a")

    @T.prim_func
    def no_cluster(A: T.Tensor((8,), "int32")):
        with T.Kernel(8):
            T.cluster_sync()

    assert "runs without clusters" in compile_error(no_cluster, "cuda:sm_90a")

    @T.prim_func
    def not_a_barrier(A: T.Tensor((8,), "int32")):
        with T.Kernel(8, cluster_dims=2):
            s = T.alloc_shared((4,), "float32")
            T.ptx_arrive_cluster_barrier(s, 1)

    assert "T.ptx_arrive_cluster_barrier takes a barrier" in \
        compile_error(not_a_barrier, "cuda:sm_90a")
    assert "thread block clusters" in compile_error(cluster_handoff(ARRIVE_PTX), "rocm:gfx942")
    assert "compile for a GPU target" in compile_error(cluster_handoff(ARRIVE_PTX), "cpu")


@pytest.mark.gpu
def test_cluster_ranks_on_gpu():
    kernel = tl.compile(cluster_ranks(4), target="cuda")
    a = torch.full((128,), -1, dtype=torch.int32, device="cuda")
    kernel(a)
    torch.testing.assert_close(a, torch.arange(128, dtype=torch.int32, device="cuda") % 4)


@pytest.mark.gpu
@pytest.mark.parametrize("arrive", [None, ARRIVE_PTX])
def test_cluster_barrier_on_gpu(arrive):
    kernel = tl.compile(cluster_handoff(arrive) if arrive else cluster_handoff(), target="cuda")
    a = torch.zeros(32, dtype=torch.int32, device="cuda")
    kernel(a)
    assert (a[:8] == 4).all() and (a[8:] == 0).all()


@pytest.mark.gpu
def test_cluster_gemm_on_gpu(rng):
    kernel = tl.compile(cluster_gemm(), target="cuda")
    a = torch.from_numpy(rng.standard_normal((256, 128))).half().cuda()
    b = torch.from_numpy(rng.standard_normal((128, 256))).half().cuda()
    c = torch.zeros(256, 256, dtype=torch.float16, device="cuda")
    kernel(a, b, c)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)
