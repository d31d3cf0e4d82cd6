"""Every example: runs on the CPU at a small size (checking its own result),
and compiles to PTX that ptxas assembles for sm_80 and sm_90a with no
register spills (and for sm_75, Turing, where what it lacks is refused). The register report is printed at the end of the run.
Also the GEMM example's `--autotune` flag on the CPU and the sparse GEMM
example on a GPU. (The kernels themselves are tested through
`tilelang_mlir.kernels` in the test files of each family.)"""

import os
import re

import pytest
from support.examples import EXAMPLES, ROOT, example_id as _id, load as _load

import tilelang_mlir as tl
from tilelang_mlir.base.errors import CompilationError
from tilelang_mlir.compiler.cuda import resource_report

# Small problem sizes for the CPU runs (the defaults are GPU-sized).
CPU_ARGS = {"gemm.py": ["--size", "128"],
            "flash_attn.py": ["--batch", "1", "--heads", "4", "--groups", "2", "--seq", "200",
                              "--dim", "64", "--causal"],
            "flash_attn_bwd.py": ["--batch", "1", "--heads", "4", "--groups", "2", "--seq", "200",
                                  "--dim", "64", "--causal"],
            "gemv.py": ["--n", "96", "--k", "1536"],
            "dequant_gemm.py": ["--m", "5", "--n", "96", "--k", "256"],
            "flash_decode.py": ["--batch", "3", "--heads", "8", "--kv-heads", "2", "--dim", "64",
                                "--cache", "300", "--splits", "3", "--block-n", "64"],
            "flash_attn_varlen.py": ["--lens", "100,37,200,1", "--heads", "4", "--dim", "64",
                                     "--groups", "2", "--causal", "--block", "64", "32"],
            "mla_decode.py": ["--batch", "3", "--heads", "64", "--cache", "200", "--splits", "3"],
            "gemm_sp.py": ["--m", "128", "--n", "128", "--k", "256"],
            "tensor_parallel.py": ["--world", "3"]}
SMALL = ["--rows", "64", "--cols", "512"]

PTXAS_REPORT = []



def test_examples_exist():
    assert len(EXAMPLES) >= 4, EXAMPLES
    for path in EXAMPLES:
        module = _load(path)
        assert callable(getattr(module, "main", None)), f"{path} has no main()"
        assert module.programs(), f"{path} lists no programs"


@pytest.mark.parametrize("path", EXAMPLES, ids=_id)
def test_example_runs_on_cpu(path, capsys):
    module = _load(path)
    argv = ["--target", "cpu"] + CPU_ARGS.get(os.path.basename(path), SMALL)
    module.main(argv)  # raises SystemExit when its result is wrong
    out = capsys.readouterr().out
    assert "cpu" in out and "error" in out, out


def test_flash_decode_example_one_split_on_cpu(capsys):
    """One split: the split kernel writes O itself and there is no combine
    kernel to time (the default on an H100's 132 SMs; the example failed
    there while timing a combine that does not exist)."""
    path = next(p for p in EXAMPLES if p.endswith("flash_decode.py"))
    argv = ["--target", "cpu"] + CPU_ARGS["flash_decode.py"]
    argv[argv.index("--splits") + 1] = "1"
    _load(path).main(argv)
    assert "splits=1, relative error" in capsys.readouterr().out


def test_gemm_example_autotunes_on_cpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILELANG_MLIR_CACHE_DIR", str(tmp_path))
    _load(os.path.join(ROOT, "examples", "gemm", "gemm.py")).main(
        ["--target", "cpu", "--size", "128", "--autotune"])
    out = capsys.readouterr().out
    assert "autotuning included" in out and "OK" in out


# One kernel per test: in AOT-prepare mode (conftest.py) a test stops at its
# first launch, so a second main() in the same test would never be compiled.
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm_sp_example_on_gpu(dtype):
    err = _load(os.path.join(ROOT, "examples", "sparse", "gemm_sp.py")).main(
        ["--target", "cuda", "--m", "256", "--n", "256", "--k", "512", "--dtype", dtype])
    assert 0 <= err < 1e-2, err


# What Turing (sm_75) lacks, as the refusal of a program that needs it says.
TURING_REFUSALS = re.compile(r"more than the 64 KB a block can have on sm_75|"
                             r"sparse tensor cores \(mma\.sp\) of sm_80")


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
@pytest.mark.parametrize("path", EXAMPLES, ids=_id)
def test_example_assembles(path, arch):
    """sm_75: a program compiles or is refused naming what Turing lacks
    (shared memory past 64 KB, the sparse tensor cores); its spills are
    reported, not refused."""
    module = _load(path)
    for name, program, out_idx in module.programs():
        try:
            kernel = tl.compile(program, out_idx=out_idx, target=f"cuda:{arch}",
                                pass_configs={"tl.disable_cache": True})
        except CompilationError as e:
            if arch == "sm_75" and TURING_REFUSALS.search(str(e)):
                continue
            raise
        assert kernel.cubin[:4] == b"\x7fELF", f"{name}: ptxas gave no cubin"
        assert f".target {arch}" in kernel.get_source()
        report = resource_report(kernel.ptxas_info)
        PTXAS_REPORT.append((f"{_id(path)}:{name}", arch, report, kernel.shared_bytes))
        assert 0 < report["registers"] <= 255, (name, kernel.ptxas_info)
        # (The programs' tiles are tuned for sm_80 and sm_90a; on sm_75,
        # without cp.async, a pipelined copy stages its tile in registers:
        # the GEMM's 128 x 128 tile over 128 threads spills a few bytes
        # there, shown in the report, not refused.)
        if arch != "sm_75":
            assert report["spill_stores"] == 0 and report["spill_loads"] == 0, \
                f"{name} spills registers on {arch}:\n{kernel.ptxas_info}"
        # ptxas serializes every wgmma of a kernel that holds a call (a
        # device assertion or print): a silent slowdown. The one known
        # exception: the device assertions of the kernels that read, signal
        # or wait on peer GPUs' memory (docs/distributed.md).
        ir = kernel.mlir("tile-opt")
        if not any(f"tile.{op} " in ir for op in ("wait", "signal", "peer")):
            assert "C7510" not in kernel.ptxas_info, \
                f"{name}: ptxas serializes its wgmma on {arch}:\n{kernel.ptxas_info}"
