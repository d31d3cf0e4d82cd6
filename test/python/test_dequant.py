"""Weight-only quantized GEMM and GEMV (examples/dequant) on the CPU: int4
and int8, float16 and bfloat16, group sizes, ragged shapes, against a
float64 reference on random inputs; the packing helpers; bad inputs."""

import importlib.util
import os

import numpy as np
import pytest
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import relative_error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(name):
    path = os.path.join(ROOT, "examples", "dequant", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"dequant_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dq = _load("dequant_gemm")
gv = _load("gemv")

# Small tiles: CPU compile and run times stay short; 64 elements per thread.
SMALL = dict(block_M=16, block_N=32, block_K=64, num_stages=2, threads=32)


def _seed():
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    torch.manual_seed(seed)


@pytest.mark.parametrize("bits,dtype,group,shape", [
    (4, "float16", 128, (16, 64, 256)),
    (4, "bfloat16", 64, (5, 50, 384)),     # ragged M and N, block_K == group
    (8, "float16", 64, (1, 33, 128)),      # decode, ragged N
    (8, "bfloat16", 128, (19, 64, 384)),   # M over one block
    (4, "float16", 256, (3, 40, 1024)),    # 4 tiles of K in each group
])
def test_dequant_gemm_matches_reference(bits, dtype, group, shape):
    _seed()
    M, N, K = shape
    kernel = tl.compile(dq.dequant_gemm(M, N, K, bits, group, dtype=dtype, **SMALL),
                        out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, bits, group, dtype)
    out = kernel(A, Wq, S)
    assert out.dtype == getattr(torch, dtype) and tuple(out.shape) == (M, N)
    err = relative_error(out.float().numpy(), dq.reference(A, Wq, S, bits, group).numpy())
    assert err < (4e-3 if dtype == "bfloat16" else 1e-3), err


@pytest.mark.parametrize("bits,dtype,group,N,K", [
    (4, "float16", 128, 64, 512), (4, "bfloat16", 64, 45, 256), (8, "float16", 32, 70, 192),
    (8, "bfloat16", 128, 16, 256)])
def test_dequant_gemv_matches_reference(bits, dtype, group, N, K):
    """The M = 1 kernel (no tensor cores), ragged N included."""
    _seed()
    kernel = tl.compile(dq.dequant_gemv(N, K, bits, group, block_N=8, block_K=32, threads=32,
                                        dtype=dtype), out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(1, N, K, bits, group, dtype)
    err = relative_error(kernel(A, Wq, S).float().numpy(),
                         dq.reference(A, Wq, S, bits, group).numpy())
    assert err < (4e-3 if dtype == "bfloat16" else 1e-3), err


def test_prefill_tiles_on_cpu():
    """The prefill configuration (128x128 tiles, 256 threads) computes the
    same thing, on a ragged M."""
    _seed()
    M, N, K = 130, 128, 256
    kernel = tl.compile(dq.program(M, N, K, 4, 128), out_idx=[3], target="cpu")
    A, Wq, S = dq.random_problem(M, N, K, 4, 128)
    err = relative_error(kernel(A, Wq, S).float().numpy(), dq.reference(A, Wq, S).numpy())
    assert err < 1e-3, err


@pytest.mark.parametrize("bits", [4, 8])
def test_quantize_round_trip(bits):
    _seed()
    w = torch.randn(8, 256).half()
    Wq, S = dq.quantize(w, bits, 64)
    assert Wq.dtype == (torch.uint8 if bits == 4 else torch.int8)
    assert tuple(Wq.shape) == (8, 256 * bits // 8) and tuple(S.shape) == (8, 4)
    q = dq.unpack(Wq, bits)
    assert q.min() >= (-8 if bits == 4 else -128) and q.max() <= (7 if bits == 4 else 127)
    back = dq.dequantize(Wq, S, bits, 64).float()
    step = S.float().repeat_interleave(64, dim=1)
    assert torch.all((back - w.float()).abs() <= 0.51 * step + 1e-3)
    # The documented nibble order: k in the low nibble, k + K/2 in the high
    # one, offset by 8.
    if bits == 4:
        assert int(Wq[0, 5]) == int(q[0, 5] + 8) | (int(q[0, 128 + 5] + 8) << 4)


@pytest.mark.parametrize("dtype,shape", [("float16", (64, 2048)), ("bfloat16", (37, 1000))])
def test_gemv_matches_reference(dtype, shape):
    _seed()
    N, K = shape
    kernel = tl.compile(gv.gemv(N, K, block_N=4, block_K=256, threads=32, dtype=dtype),
                        out_idx=[2], target="cpu")
    tdt = getattr(torch, dtype)
    w, x = torch.randn(N, K).to(tdt), torch.randn(K).to(tdt)
    err = relative_error(kernel(w, x).float().numpy(), gv.reference(w, x))
    assert err < (4e-3 if dtype == "bfloat16" else 1e-3), err


def test_gemv_loads_16_bytes():
    """coalesced_width=8 reaches the tile IR, and on the GPU layout inference
    gives each thread 8 consecutive elements of a row: W arrives in 16-byte
    loads (ptxas for sm_80; no GPU needed)."""
    kernel = tl.compile(gv.gemv(64, 2048), out_idx=[2], target="cpu")
    assert "vector = 8" in kernel.mlir("tile")
    ptx = tl.compile(gv.gemv(64, 2048), out_idx=[2], target="cuda:sm_80").get_source()
    loads = [line for line in ptx.splitlines() if "ld.global" in line]
    assert loads and all(".v4.b32" in line for line in loads), loads


def test_parallel_vector_must_be_power_of_two():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((64,), "float16")
            for i in T.Parallel(64, coalesced_width=6):
                a[i] = 0
            T.copy(a, A)

    with pytest.raises(Exception, match="coalesced_width must be a positive power of two"):
        tl.compile(bad, target="cpu")


@pytest.fixture(scope="module")
def int4_kernel():
    return tl.compile(dq.dequant_gemm(4, 32, 128, 4, 64, **SMALL), out_idx=[3], target="cpu")


def test_wrong_weight_dtype_is_named(int4_kernel):
    A = torch.randn(4, 128).half()
    Wq = torch.zeros(32, 64, dtype=torch.int32)
    S = torch.ones(32, 2).half()
    with pytest.raises(Exception, match=r"(?i)dtype|uint8"):
        int4_kernel(A, Wq, S)


def test_wrong_scale_shape_is_named(int4_kernel):
    A = torch.randn(4, 128).half()
    Wq = torch.zeros(32, 64, dtype=torch.uint8)
    S = torch.ones(32, 4).half()  # group 32 scales for a group-64 kernel
    with pytest.raises(Exception, match=r"(?i)shape|size|dimension"):
        int4_kernel(A, Wq, S)


def test_bad_problem_is_refused_before_compiling():
    with pytest.raises(ValueError, match="multiple of the group size"):
        dq.dequant_gemm(16, 32, 200, 4, 128)
    with pytest.raises(ValueError, match="each half of K"):
        dq.dequant_gemm(16, 32, 384, 4, 128)
    with pytest.raises(ValueError, match="must divide the group size"):
        dq.dequant_gemm(16, 32, 512, 4, 64, block_K=128)
    with pytest.raises(ValueError, match="one row"):
        dq.program(2, 32, 256, 4, 128, config=dq.GEMV[0])
    with pytest.raises(ValueError, match="bits must be 4 or 8"):
        dq.dequant_gemm(16, 32, 256, 3, 128)
    with pytest.raises(ValueError, match="multiple of the group size"):
        dq.quantize(torch.randn(4, 100), 4, 64)
    with pytest.raises(ValueError, match="2-D"):
        dq.quantize(torch.randn(4, 4, 64), 4, 64)


def test_reference_is_float64_of_dequantized_weights():
    """The helpers agree with a direct NumPy computation."""
    _seed()
    A, Wq, S = dq.random_problem(3, 8, 256, 4, 128)
    q = dq.unpack(Wq, 4).numpy().astype(np.float64)
    w = (q * np.repeat(S.float().numpy(), 128, axis=1)).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(dq.reference(A, Wq, S).numpy(),
                               A.double().numpy() @ w.T, rtol=1e-12, atol=1e-12)


def test_narrow_index_makes_shared_offsets_32_bit():
    """tl.narrow_index (CUDA) runs MLIR's integer range narrowing: the
    shared-memory offsets and swizzles of the dequant loop become 32-bit
    (each 64-bit logic op is two on the GPU); still no spills."""
    import re

    from tilelang_mlir.compiler.cuda import resource_report

    program = dq.program(16, 256, 1024, 4, config=dq.PORTABLE_DECODE)
    counts = []
    for narrow in (False, True):
        kernel = tl.compile(program, out_idx=[3], target="cuda:sm_90a",
                            pass_configs={"tl.narrow_index": narrow})
        counts.append(len(re.findall(r"^\s+(or|xor|shl|and|shr)\.b64", kernel.get_source(),
                                     re.M)))
        report = resource_report(kernel.ptxas_info)
        assert report["spill_stores"] == 0 and report["spill_loads"] == 0
    assert counts[1] * 5 < counts[0], counts
