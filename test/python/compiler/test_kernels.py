"""Tile programs compiled for every target (the CPU, and an NVIDIA GPU where
one exists), checked against NumPy / PyTorch on fresh random inputs."""

import numpy as np
import pytest
import torch

from tilelang_mlir.kernels import programs as kernels
import tilelang_mlir as tl
from support.devices import get, put


def rel_error(out, ref) -> float:
    out = np.asarray(get(out), dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert np.all(np.isfinite(out)), "output has NaN/Inf (unwritten elements?)"
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def as_f64(t):
    return t.to(torch.float64).numpy() if isinstance(t, torch.Tensor) else t.astype(np.float64)


# tf32 tensor cores round float32 operands to 10 mantissa bits.
TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5}
GPU_TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 5e-3}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("shape", [(128, 128, 64), (100, 72, 45)], ids=["aligned", "ragged"])
def test_gemm(dtype, trans_A, trans_B, shape, target, rng):
    M, N, K = shape
    program = kernels.matmul(M, N, K, 64, 32, 32, trans_A=trans_A, trans_B=trans_B,
                             dtype=dtype, out_dtype="float32")
    kernel = tl.compile(program, out_idx=[2], target=target)
    a = torch.from_numpy(rng.standard_normal((K, M) if trans_A else (M, K))).to(getattr(torch, dtype))
    b = torch.from_numpy(rng.standard_normal((N, K) if trans_B else (K, N))).to(getattr(torch, dtype))
    c = kernel(put(a, target), put(b, target))
    assert isinstance(c, torch.Tensor) and c.shape == (M, N) and c.dtype == torch.float32
    a64, b64 = as_f64(a), as_f64(b)
    ref = (a64.T if trans_A else a64) @ (b64.T if trans_B else b64)
    tol = TOL[dtype] if target == "cpu" else GPU_TOL[dtype]
    assert rel_error(c, ref) < tol


def test_gemm_float16_output(target, rng):
    kernel = tl.compile(kernels.matmul(96, 64, 80, 32, 32, 16), out_idx=[2], target=target)
    a = rng.standard_normal((96, 80)).astype(np.float16)
    b = rng.standard_normal((80, 64)).astype(np.float16)
    c = kernel(put(a, target), put(b, target))
    assert get(c).dtype == np.float16
    assert rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-2


@pytest.mark.parametrize("stages", [2, 3])
def test_gemm_cp_async_reuse_slots(stages, target, rng):
    """tl.pipeline_reuse_slots on a ragged GEMM loaded by cp.async: one slot
    fewer per operand, each copy into the slot its step's gemm just read
    (after it and a barrier), rows and columns past the ends zero-filled."""
    M, N, K = 200, 136, 200
    configs = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True,
               "tl.pipeline_reuse_slots": True}
    kernel = tl.compile(kernels.matmul(M, N, K, 64, 64, 32, num_stages=stages), out_idx=[2],
                        target=target, pass_configs=configs)
    if target != "cpu":
        pipelined = kernel.mlir("pipelined")
        assert f"memref<{stages - 1}x64x32x" in pipelined, pipelined
        assert f"memref<{stages}x64x32x" not in pipelined, pipelined
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = kernel(put(a, target), put(b, target))
    assert rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-2


@pytest.mark.parametrize("stages,reuse", [(2, False), (3, False), (3, True)])
def test_gemm_cp_async_group_per_copy(stages, reuse, target, rng):
    """tl.pipeline_group_per_copy on the ragged cp.async GEMM: the A and B
    copies commit a group each, two a step, and the gemm, which reads both,
    waits until only the later steps' groups pend (2 (stages - 2) of them)."""
    M, N, K = 200, 136, 200
    configs = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True,
               "tl.pipeline_group_per_copy": True, "tl.pipeline_reuse_slots": reuse}
    kernel = tl.compile(kernels.matmul(M, N, K, 64, 64, 32, num_stages=stages), out_idx=[2],
                        target=target, pass_configs=configs)
    if target != "cpu":
        pipelined = kernel.mlir("pipelined")
        assert f"tile.async_wait {2 * (stages - 2)}\n" in pipelined, pipelined
        assert pipelined.count("tile.async_commit") > 2 * stages, pipelined
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = kernel(put(a, target), put(b, target))
    assert rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-2


@pytest.mark.parametrize("chip", [pytest.param("cuda", marks=pytest.mark.gpu), "cuda:sm_80"])
def test_gemm_sync_copies(chip, rng):
    """TileLang's tl.enable_async_copy=False: the ragged GEMM's pipelined
    loop keeps its three slots per operand, but its copies are plain loads
    and stores (no cp.async at all in the PTX); barriers order them."""
    M, N, K = 200, 136, 200
    configs = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True,
               "tl.enable_async_copy": False}
    kernel = tl.compile(kernels.matmul(M, N, K, 64, 64, 32, num_stages=3), out_idx=[2],
                        target=chip, pass_configs=configs)
    pipelined = kernel.mlir("pipelined")
    assert "memref<3x64x32x" in pipelined and "{async}" not in pipelined, pipelined
    assert "cp.async" not in kernel.get_kernel_source()
    if chip == "cuda":
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        c = kernel(put(a, chip), put(b, chip))
        assert rel_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-2


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm_4096_three_stages(dtype, target, rng):
    if target == "cpu":
        pytest.skip("4096^3 is a GPU-size problem (the CPU runs the 1024^3 demo)")
    n = 4096
    program = kernels.matmul(n, n, n, 128, 128, 32, dtype=dtype, num_stages=3)
    kernel = tl.compile(program, out_idx=[2], target=target)
    pipelined = kernel.mlir("pipelined")
    # Three slots per operand: cp.async groups (sm_80) or a TMA ring with a
    # producer warpgroup (sm_90a).
    assert "memref<3x128x32x" in pipelined and "memref<3x32x128x" in pipelined
    assert "tile.async_commit" in pipelined or "tile.warp_specialize" in pipelined
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(getattr(torch, dtype))
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(getattr(torch, dtype))
    c = kernel(put(a, target), put(b, target))
    ref = (a.cuda().float() @ b.cuda().float()).double().cpu().numpy()
    assert rel_error(c, ref) < 1e-2


@pytest.mark.gpu
def test_persistent_gemm_runs_on_any_grid(rng):
    """On sm_90a a GEMM with more tiles than multiprocessors is persistent,
    and its tile loop steps by the launched grid: the same kernel is correct
    on one block per multiprocessor and on 114, 6 and 2 blocks (fewer
    multiprocessors faked; clusters of 2)."""
    n = 2048
    kernel = tl.compile(kernels.matmul(n, n, n, 128, 128, 64, num_stages=3), out_idx=[2],
                        target="cuda")
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).half()
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).half()
    a, b = put(a, "cuda"), put(b, "cuda")
    ref = (a.float() @ b.float()).double().cpu().numpy()
    assert rel_error(kernel(a, b), ref) < 1e-2
    if kernel.target.arch != "sm_90a":
        pytest.skip("persistent kernels are sm_90a")
    executable = kernel._executable
    device = torch.cuda.current_device()
    real = executable.multiprocessors(device)
    assert real == torch.cuda.get_device_properties(device).multi_processor_count
    assert kernel.grid[0] == {"op": "min", "args": [{"const": 256}, {"sms": 2}]}
    try:
        for sms in (115, 7, 1):
            executable._sms[device] = sms
            assert rel_error(kernel(a, b), ref) < 1e-2, sms
    finally:
        executable._sms[device] = real


def test_elementwise_add(target, rng):
    M, N = 77, 130
    kernel = tl.compile(kernels.elementwise_add(M, N, 32, 64), out_idx=[2], target=target)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_array_equal(get(kernel(put(a, target), put(b, target))), a + b)


def test_softmax(target, rng):
    M, N = 70, 96
    kernel = tl.compile(kernels.softmax(M, N, 16), out_idx=[1], target=target)
    x = (rng.standard_normal((M, N)) * 4).astype(np.float32)
    y = kernel(put(x, target))
    ref = torch.softmax(torch.from_numpy(x).double(), dim=1).numpy()
    assert rel_error(y, ref) < (1e-5 if target == "cpu" else 1e-4)


def test_layer_norm(target, rng):
    M, N = 45, 64
    kernel = tl.compile(kernels.layer_norm(M, N, 16), out_idx=[3], target=target)
    x = (rng.standard_normal((M, N)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    y = kernel(put(x, target), put(w, target), put(b, target))
    ref = torch.nn.functional.layer_norm(torch.from_numpy(x).double(), (N,),
                                         torch.from_numpy(w).double(),
                                         torch.from_numpy(b).double(), eps=1e-5).numpy()
    assert rel_error(y, ref) < (1e-5 if target == "cpu" else 1e-4)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(reverse, target, rng):
    M, N = 40, 48
    kernel = tl.compile(kernels.cumsum(M, N, 16, reverse=reverse), out_idx=[1], target=target)
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = kernel(put(x, target))
    ref = np.flip(np.cumsum(np.flip(x, 1), axis=1), 1) if reverse else np.cumsum(x, axis=1)
    assert rel_error(y, ref) < 1e-5


def test_atomic_add_global_sum(target, rng):
    N = 1000
    kernel = tl.compile(kernels.global_sum(N, 128), target=target)
    x = rng.standard_normal(N).astype(np.float32)
    out = put(np.zeros(1, np.float32), target)
    assert kernel(put(x, target), out) is None
    np.testing.assert_allclose(get(out)[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-4)


def test_dynamic_rows_one_kernel_all_sizes(target, rng):
    kernel = tl.compile(kernels.dynamic_scale(16, 24), out_idx=[1], target=target)
    assert "memref<?x24xf32>" in kernel.mlir("tile")
    for m in (1, 16, 37, 200):
        x = rng.standard_normal((m, 24)).astype(np.float32)
        y = get(kernel(put(x, target)))
        assert y.shape == (m, 24)
        np.testing.assert_array_equal(y, 2 * x)


def test_torch_in_torch_out(target, rng):
    kernel = tl.compile(kernels.elementwise_add(33, 40, 16, 16), out_idx=[2], target=target)
    a = torch.randn(33, 40)
    b = torch.randn(33, 40)
    c = kernel(put(a, target), put(b, target))
    assert isinstance(c, torch.Tensor)
    torch.testing.assert_close(c.cpu(), a + b, rtol=0, atol=0)


@pytest.mark.gpu
def test_cuda_graph_capture_and_profiler(rng):
    """A launch captured in a CUDA graph replays on whatever the captured
    input holds at replay time; the profiler times graph replays."""
    kernel = tl.compile(kernels.softmax(256, 128, 4), out_idx=[1], target="cuda")
    x = put(rng.standard_normal((256, 128)).astype(np.float32), "cuda")
    y = kernel(x)  # loads the module before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = kernel(x)
    for _ in range(2):
        fresh = rng.standard_normal((256, 128)).astype(np.float32) * 3
        x.copy_(torch.from_numpy(fresh))
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        ref = np.exp(fresh - fresh.max(1, keepdims=True))
        assert rel_error(y, ref / ref.sum(1, keepdims=True)) < 1e-5
    profiler = kernel.get_profiler()
    times = profiler.do_bench(x, rep=5, cuda_graph=True, return_mode="all")
    assert len(times) == 5 and all(t > 0 for t in times)
    assert kernel.time(x) > 0
