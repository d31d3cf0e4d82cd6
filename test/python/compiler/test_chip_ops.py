"""Every operation of the explicit warp-specialization layer on every chip
of the table (issue 44): a compile for a CUDA chip through PTX and ptxas
either succeeds or is refused with a TileLangError naming what the chip
lacks; it never reaches an LLVM abort (mbarrier waits on sm_80-89 ended the
Python process in NVPTX instruction selection). Each chip compiles in a
process of its own, so that an abort fails its test instead of ending
pytest. The CPU and ROCm targets refuse what they cannot run with a message
that names the operation."""

import json
import re
import os
import subprocess
import sys

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from support import ROOT
from support.explicit_ops import PROGRAMS
from tilelang_mlir.base import chips
from tilelang_mlir.base.errors import TileLangError
from tilelang_mlir.language import roles

CUDA_CHIPS = [c.name for c in chips.CHIPS if c.vendor == "nvidia"]
# What every chip of the table from sm_80 runs; Turing (sm_75) has no
# mbarriers and no cp.async (AMPERE_ONLY), which are refused there naming the
# instruction and sm_80.
EVERYWHERE = {"barrier", "mbarrier", "fence_proxy_async", "named_barrier", "cp_async",
              "cp_async_tvm",
              "named_barrier_arrive",
              "cp_async_barrier_noinc", "wgmma_gemm", "ws_roles"}
AMPERE_ONLY = {"barrier", "mbarrier", "cp_async", "cp_async_tvm", "cp_async_barrier_noinc",
               "ws_roles"}


def _compile_in_child(chip: str):
    child = os.path.join(ROOT, "test", "python", "support", "explicit_ops.py")
    proc = subprocess.run([sys.executable, child, chip], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, (f"compiling for {chip} ended the process "
                                  f"(rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {row["program"]: row for row in rows}


@pytest.mark.parametrize("chip", CUDA_CHIPS)
def test_explicit_ops_compile_or_are_refused_on_every_cuda_chip(chip):
    info = chips.chip(chip)
    rows = _compile_in_child(chip)
    assert set(rows) == set(PROGRAMS)
    for name, row in rows.items():
        if row["result"] == "ok":
            continue
        assert row["result"] in ("CompilationError", "TileLangError"), row
        message = row["message"].splitlines()[0]
        # Names the op, what it needs and the chip.
        assert f"the kernel is compiled for {chip}" in message, row
        if info.arch < 80 and name in AMPERE_ONLY:
            assert re.search(r"nvvm\.(mbarrier|cp\.async)\S* needs sm_80 or newer", message), row
            continue
        assert "' op " in message and "which needs sm_90a" in message, row
    ok = {name for name, row in rows.items() if row["result"] == "ok"}
    assert EVERYWHERE - (AMPERE_ONLY if info.arch < 80 else set()) <= ok, rows
    if info.tma and info.setmaxnreg:
        assert ok == set(PROGRAMS), rows


def test_the_programs_cover_the_explicit_layer():
    used = set().union(*(names for _, names, *_ in PROGRAMS.values()))
    layer = {name for name in dir(roles) if not name.startswith("_")
             and callable(getattr(roles, name)) and getattr(T, name, None) is getattr(roles, name)}
    refused = {"mbarrier_expect_tx", "shuffle_elect"}  # "not supported" at the user's line
    # TileLang's register hints are T.set_max_nreg in the role they are written
    # in (test_explicit_ws.py compiles them).
    refused |= {"annotate_producer_reg_dealloc", "annotate_consumer_reg_alloc"}
    # Cluster kernels (sm_90 and newer) are compiled, refused and run by
    # test_launch_features.py.
    refused |= {"alloc_cluster_barrier", "ptx_arrive_cluster_barrier"}
    # TMA stores are copies that run on every target, the CPU's included
    # (test_tma_store.py runs them on the CPU and the GPU, compiles sm_80/sm_90a).
    refused |= {"tma_store_arrive", "tma_store_wait"}
    layer -= refused | {"WarpgroupRole", "builtin"}
    assert layer - used == set()
    assert {"wgmma_gemm", "wait_wgmma"} <= used


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_explicit_ops_on_the_cpu_and_rocm_name_the_op(name):
    factory = PROGRAMS[name][0]
    for target, needs in (("cpu", "GPU target"), ("rocm:gfx942", "ROCm")):
        if target.startswith("rocm"):
            pytest.importorskip("llvmlite.binding")
            pytest.importorskip("ziglang")
        try:
            tl.compile(factory(), target=target, pass_configs={"tl.disable_cache": True})
        except TileLangError as e:
            message = str(e).splitlines()[0]
            assert "' op " in message and needs in message, message
            assert "failed to legalize" not in message and "cannot lower this op" not in message
            assert "explicit_ops.py" in message  # at the user's line


# On the GPU: each program compiled for each chip of the table the GPU can
# run, as PTX the driver compiles for it (so that an H100 runs the sm_80
# code: the mbarrier waits before sm_90 poll test_wait), plus the native
# code, against NumPy.
def _runnable(chip):
    import torch

    major, minor = torch.cuda.get_device_capability()
    info = chips.chip(chip)
    return info.arch <= 10 * major + minor and (not info.wgmma or major == 9)


@pytest.mark.gpu
@pytest.mark.parametrize("chip", CUDA_CHIPS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_explicit_ops_run_on_the_gpu_for_every_chip(chip, name, rng):
    import torch

    from tilelang_mlir.runtime.loader import make_kernel

    if not _runnable(chip):
        pytest.skip(f"this GPU cannot run {chip} code")
    factory, _, inputs, reference = PROGRAMS[name]
    try:
        k = tl.compile(factory(), out_idx=[-1], target=f"cuda:{chip}",
                       pass_configs={"tl.disable_cache": True})
    except TileLangError as e:
        ampere = chips.chip(chip).arch < 80 and name in AMPERE_ONLY
        assert f"the kernel is compiled for {chip}" in str(e) and (name not in EVERYWHERE
                                                                   or ampere)
        return
    # (With the kernel's tensor maps and launch features: the TMA kernel made
    # without its map had the driver read its 128-byte CUtensorMap parameter
    # from an 8-byte slot, which ended the Python process.)
    jit = make_kernel(k.name, k.params, k.out_idx, k.target, cubin=k.ptx.encode() + b"\0",
                      entry=k.entry, block=k.block, grid=k.grid, shared_bytes=k.shared_bytes,
                      tensormaps=k.tensormaps, features=k.launch_features)
    arrays = [(rng.standard_normal(shape)).astype(dtype) for shape, dtype in inputs]
    want = reference(*arrays)
    # The compiled kernel runs too: its cubin where it is this GPU's chip, its
    # PTX (compiled by the driver) where the cubin is an earlier chip's.
    for kernel in (jit, k):
        got = kernel(*(torch.from_numpy(a).cuda() for a in arrays))
        torch.cuda.synchronize()
        np.testing.assert_allclose(got.cpu().float().numpy(), want.astype(np.float32),
                                   rtol=1e-2, atol=1e-2)
