"""Turing (`cuda:sm_75`, T4-class GPUs): f16 gemms on mma.sync m16n8k8
(each k16 step as two), bf16 / tf32 / int8 gemms on the CUDA cores (Turing
has no such tensor-core shapes of the fragment layouts used here),
pipelined loops without cp.async (copies staged in registers), 64 KB of
shared memory a block. What needs a newer chip is refused naming it.

The PTX for sm_75 (ptxas assembles it), the refusals, and (marked `gpu`)
the sm_75 kernels run on the machine's GPU as PTX the driver compiles for
it, against NumPy: no Turing GPU is needed for the instruction sequences to
be checked."""

import re

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.base.errors import CompilationError
from tilelang_mlir.kernels import gemm, gemm_sp
from support.devices import get, put

SM75 = "cuda:sm_75"
NOCACHE = {"tl.disable_cache": True}

# (input, accumulator): f16 runs on the tensor cores, the rest on CUDA cores.
DTYPES = [("float16", "float32"), ("float16", "float16"), ("bfloat16", "float32"),
          ("float32", "float32"), ("int8", "int32")]


def _gemm(M, N, K, dtype, acc, bm=64, bn=64, bk=32, stages=2, threads=128):
    return gemm.matmul(M, N, K, bm, bn, bk, num_stages=stages, threads=threads, dtype=dtype,
                       accum_dtype=acc, out_dtype=acc)


@pytest.mark.parametrize("dtype,acc", DTYPES)
def test_gemm_instructions(dtype, acc):
    ptx = tl.compile(_gemm(256, 256, 256, dtype, acc), out_idx=[2], target=SM75,
                     pass_configs=NOCACHE).get_kernel_source()
    assert ".target sm_75" in ptx
    assert "cp.async" not in ptx and "mbarrier" not in ptx
    mmas = set(re.findall(r"mma\.sync\.aligned\.(m\d+n\d+k\d+)", ptx))
    if dtype == "float16":
        assert mmas == {"m16n8k8"}, mmas
        assert "ldmatrix" in ptx
    else:
        assert mmas == set(), mmas


def test_ampere_instructions_are_refused_at_the_users_line():
    @T.prim_func
    def copy(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=8):
            s = T.alloc_shared((64,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(s[tx * 8], "w", 8), T.access_ptr(A[tx * 8], "r", 8), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                B[tx * 8 + i] = s[tx * 8 + i]

    with pytest.raises(CompilationError, match=r"test_sm75\.py:\d+:\d+: error: .*"
                       r"nvvm\.cp\.async\.shared\.global needs sm_80 or newer, but the kernel "
                       r"is compiled for sm_75"):
        tl.compile(copy, out_idx=[1], target=SM75, pass_configs=NOCACHE)
    with pytest.raises(CompilationError, match=r"sparse tensor cores \(mma\.sp\) of sm_80 or "
                                               r"newer; the kernel is compiled for sm_75"):
        tl.compile(gemm_sp.gemm_sp(128, 128, 128), target=SM75, pass_configs=NOCACHE)
    # 2 stages of 128 x 64 + 64 x 128 f16 tiles: 64 KB, and the swizzle's
    # alignment past it.
    with pytest.raises(CompilationError, match=r"more than the 64 KB a block can have on sm_75"):
        tl.compile(_gemm(256, 256, 256, "float16", "float32", bm=128, bn=128, bk=64),
                   out_idx=[2], target=SM75, pass_configs=NOCACHE)


def test_older_chips_are_refused():
    with pytest.raises(ValueError, match=r"sm_70 .*sm_75 or newer is needed"):
        tl.compile(_gemm(64, 64, 64, "float16", "float32"), target="cuda:sm_70")


def _runs_sm75_ptx():
    import torch

    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (7, 5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,acc", DTYPES)
@pytest.mark.parametrize("M,N,K,config", [
    (256, 192, 160, dict()),
    (200, 136, 96, dict(bm=64, bn=32, bk=32, stages=3, threads=64)),  # partial tiles
])
def test_gemm_on_gpu(rng, dtype, acc, M, N, K, config):
    assert _runs_sm75_ptx()
    _check_gemm(rng, dtype, acc, M, N, K, config, SM75, "cuda")


def test_gemm_reference_on_cpu(rng):
    """The check of test_gemm_on_gpu, on the CPU target (its NumPy side)."""
    for dtype, acc in DTYPES:
        _check_gemm(rng, dtype, acc, 72, 40, 64, dict(bm=32, bn=32, bk=32, threads=64),
                    "cpu", "cpu")


def _check_gemm(rng, dtype, acc, M, N, K, config, target, device):
    if dtype == "int8":
        a = rng.integers(-8, 8, (M, K)).astype(np.int8)
        b = rng.integers(-8, 8, (K, N)).astype(np.int8)
        want = a.astype(np.int32) @ b.astype(np.int32)
    else:
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        want = a @ b
        if dtype != "float32":
            import ml_dtypes

            np_type = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
            a, b = a.astype(np_type), b.astype(np_type)
            want = a.astype(np.float32) @ b.astype(np.float32)
    kernel = tl.compile(_gemm(M, N, K, dtype, acc, **config), out_idx=[2], target=target)
    c = np.asarray(get(kernel(put(a, device), put(b, device)))).astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(c, want)
    else:
        tol = {"float16": 3e-2 if acc == "float16" else 2e-3}.get(dtype, 2e-3)
        np.testing.assert_allclose(c, want, rtol=tol, atol=tol * np.sqrt(K))


def _attention_block(S, D):
    """One block of attention without the softmax: O = (Q K^T) V with the
    f16 product P fed from registers to the second gemm (the fragment-A
    path of flash attention), and a row max of the scores in bf16."""

    @T.prim_func
    def main(Q: T.Tensor((S, D), "float16"), K: T.Tensor((S, D), "float16"),
             V: T.Tensor((S, D), "float16"), O: T.Tensor((S, D), "float32"),
             M: T.Tensor((S,), "bfloat16")):
        with T.Kernel(1, threads=128):
            qs = T.alloc_shared((S, D), "float16")
            ks = T.alloc_shared((S, D), "float16")
            vs = T.alloc_shared((S, D), "float16")
            s = T.alloc_fragment((S, S), "float32")
            p = T.alloc_fragment((S, S), "float16")
            o = T.alloc_fragment((S, D), "float32")
            m = T.alloc_fragment((S,), "float32")
            T.copy(Q, qs)
            T.copy(K, ks)
            T.copy(V, vs)
            T.gemm(qs, ks, s, transpose_B=True, clear_accum=True,
                   policy=T.GemmWarpPolicy.FullRow)
            T.reduce_max(s, m, dim=1)
            for i, j in T.Parallel(S, S):
                p[i, j] = s[i, j] * 0.125
            T.gemm(p, vs, o, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(o, O)
            for i in T.Parallel(S):
                M[i] = m[i]

    return main


@pytest.mark.gpu
def test_attention_block_on_gpu(rng):
    assert _runs_sm75_ptx()
    _check_attention_block(rng, SM75, "cuda")


def test_attention_block_on_cpu(rng):
    _check_attention_block(rng, "cpu", "cpu")
    ptx = tl.compile(_attention_block(64, 64), out_idx=[3, 4], target=SM75,
                     pass_configs=NOCACHE).get_kernel_source()
    assert set(re.findall(r"mma\.sync\.aligned\.(m\d+n\d+k\d+)", ptx)) == {"m16n8k8"}


def _check_attention_block(rng, target, device):
    import ml_dtypes

    S, D = 64, 64
    q, k, v = (rng.standard_normal((S, D)).astype(np.float16) for _ in range(3))
    kernel = tl.compile(_attention_block(S, D), out_idx=[3, 4], target=target)
    if target == SM75:
        assert set(re.findall(r"mma\.sync\.aligned\.(m\d+n\d+k\d+)",
                              kernel.get_kernel_source())) == {"m16n8k8"}
    o, m = (get(x) for x in kernel(*(put(x, device) for x in (q, k, v))))
    scores = q.astype(np.float32) @ k.astype(np.float32).T
    p = (scores * 0.125).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(o, p @ v.astype(np.float32), rtol=2e-3, atol=2e-2)
    want_m = scores.max(axis=1).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(np.asarray(m).astype(np.float32), want_m, rtol=1e-2, atol=1e-2)


def test_turing_is_a_target_of_its_own():
    """`cuda:sm_75` is its own chip: the GPU of compute capability 7.5
    compiles for it, with Turing's 64 KB of shared memory a block."""
    from tilelang_mlir.base import chips

    assert chips.nvidia_chip_for_capability(7, 5) == "sm_75"
    assert chips.chip("sm_75").max_shared_bytes == 64 * 1024
