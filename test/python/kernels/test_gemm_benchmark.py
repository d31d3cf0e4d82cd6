"""The GEMM library's autotuning space (tilelang_mlir.kernels.gemm) and the GEMM
benchmark (benchmarks/gemm.py): configs that do not compile are skipped with
a one-line reason, autotuning keeps a correct config (on the CPU here), and
the benchmark compiles its kernels without a GPU into the kernel cache, where
a run without the compiler finds them (the AOT flow of scripts/gpu_check.sh)."""

import importlib.util
import json
import os
import types

import pytest

from tilelang_mlir.kernels import gemm

from support import ROOT  # noqa: E402 (the repository root)


def _load(name, relpath):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load("gemm_benchmark_under_test", "benchmarks/gemm.py")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    return tmp_path


def _has_gpu():
    import torch

    return torch.cuda.is_available()


def test_configs_suit_hopper():
    assert 4 <= len(gemm.CONFIGS) <= 8
    for c in gemm.CONFIGS + gemm.FP8_CONFIGS:
        bits = 8 if c in gemm.FP8_CONFIGS else 16
        smem = c["num_stages"] * (c["block_M"] + c["block_N"]) * c["block_K"] * bits // 8
        assert smem <= 227 * 1024, gemm.describe(c)
        assert c["threads"] % 128 == 0, "whole warpgroups"
    assert {c.get("policy", gemm.Square) for c in gemm.CONFIGS} == {gemm.Square, gemm.FullRow}


def test_compile_configs_skips_what_does_not_compile(cache):
    too_big = dict(block_M=128, block_N=256, block_K=128, num_stages=3, threads=256)  # 288 KB
    lines = []
    kernels, failures = gemm.compile_configs(256, 256, 256, "float16", "cuda:sm_90a",
                                             [too_big, gemm.DEFAULT], log=lines.append)
    assert [c for c, _ in kernels] == [gemm.DEFAULT]
    assert [c for c, _ in failures] == [too_big]
    assert "shared memory" in failures[0][1] and "\n" not in failures[0][1]
    assert len(lines) == 1 and "skipped" in lines[0]


def test_autotune_on_cpu(cache):
    small = dict(block_M=64, block_N=64, block_K=32, num_stages=2, threads=128)
    lines = []
    config, kernel, ms = gemm.autotune(128, 128, 64, "float16", "cpu",
                                       configs=[small, gemm.DEFAULT], warmup=1, rep=2,
                                       log=lines.append)
    assert config in (small, gemm.DEFAULT) and kernel.target.kind == "cpu" and ms > 0
    assert len(lines) == 2 and all("error" in line for line in lines)


def test_benchmark_cases():
    def args(**kw):
        return types.SimpleNamespace(**{"quick": False, "shapes": None, "dtypes": None, **kw})

    full = bench.cases(args())
    assert len(full) == 11 and [c.dtype for c in full].count("float8_e4m3") == 1
    assert {(c.M, c.N, c.K) for c in full} == set(bench.SQUARE + bench.LLM)
    assert [c.label for c in bench.cases(args(quick=True))] == [
        "4096x4096x4096 float16", "4096x4096x4096 bfloat16",
        "8192x8192x8192 float16", "8192x8192x8192 bfloat16"]
    assert len(bench.cases(args(shapes="8192x1024x28672"))) == 2
    fp8 = bench.cases(args(shapes="8192", dtypes="fp8"))
    assert len(fp8) == 1 and fp8[0].program is gemm.matmul_nt and fp8[0].tol == 5e-2


@pytest.mark.skipif(_has_gpu(), reason="with a GPU the benchmark measures (not a unit test)")
def test_benchmark_prepares_then_runs_from_the_cache(cache, monkeypatch, capsys):
    monkeypatch.setenv("TILELANG_MLIR_CUDA_ARCH", "sm_90a")
    argv = ["--shapes", "4096", "--dtypes", "float16", "--no-autotune", "--jobs", "1"]
    bench.main(argv)
    out = capsys.readouterr().out
    assert "compiled 1 kernels for 1 case " in out and "compiled only" in out, out
    with open(cache / bench.SIDECAR) as f:
        assert json.load(f)["failures"] == {}
    monkeypatch.setenv("TILELANG_MLIR_OFFLINE", "1")  # as on the GPU machine
    bench.main(argv)
    assert "every kernel was found in the kernel cache" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not in the kernel cache"):
        bench.main(["--shapes", "4096", "--dtypes", "bfloat16", "--no-autotune", "--jobs", "1"])


def test_too_many_registers_is_explained():
    """Three consumer warpgroups of 64x256 fp32 accumulators plus the
    producer (512 threads) cannot get the registers wgmma needs: ptxas's
    refusal comes with what it means for the tile program."""
    import tilelang_mlir as tl

    program = gemm.matmul(2048, 2048, 2048, 192, 256, 64, num_stages=3, threads=384,
                          policy=gemm.FullRow)
    with pytest.raises(tl.CompilationError) as info:
        tl.compile(program, out_idx=[2], target="cuda:sm_90a",
                   pass_configs={"tl.disable_cache": True})
    text = str(info.value)
    assert "Insufficient registers (128)" in text
    assert "512 threads a block" in text and "each thread gets 128 at launch" in text
    assert "Use fewer threads or a smaller tile" in text
