"""Shared pytest configuration: targets, the `gpu` marker, random seeds.

Tests that run kernels take the `target` fixture: "cpu", and "cuda" marked
`gpu`. Without a GPU the `gpu` tests are skipped, except in AOT-prepare mode
(TILELANG_MLIR_AOT_PREPARE=1, with TILELANG_MLIR_CUDA_ARCH and a cache dir):
then they compile their kernels into the kernel cache and stop at the
launch, so that a GPU machine without the compiler can run them from the
cache (TILELANG_MLIR_OFFLINE=1). See scripts/gpu_check.sh; scripts/gpu.sh
(`make gpu-test`) runs every `gpu` test on a GPU machine.
"""

import os

import numpy as np
import pytest


def _has_cuda_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


HAS_GPU = _has_cuda_gpu()
AOT_PREPARE = os.environ.get("TILELANG_MLIR_AOT_PREPARE", "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA GPU; skipped where none is present")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU or AOT_PREPARE:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    if AOT_PREPARE and outcome.excinfo is not None:
        from tilelang_mlir.runtime.cuda import NoCUDADevice

        # A test that compiles first and then makes its CUDA tensors stops
        # at torch's refusal instead (its kernels are in the cache by then).
        no_torch_cuda = any(m in str(outcome.excinfo[1]) for m in _TORCH_NO_CUDA)
        if issubclass(outcome.excinfo[0], NoCUDADevice) or no_torch_cuda:
            outcome.force_exception(pytest.skip.Exception("compiled for the GPU (AOT prepare)"))


_TORCH_NO_CUDA = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available",
                  "Found no NVIDIA driver")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def target(request):
    """The target a kernel test compiles for."""
    return request.param


@pytest.fixture
def rng():
    """A fresh random generator per test; the seed is printed on failure."""
    from tilelang_mlir.testing import random_seed

    return np.random.default_rng(random_seed())


def pytest_terminal_summary(terminalreporter):
    """The ptxas register report of the examples (test_examples.py)."""
    import sys

    module = sys.modules.get("test_examples")
    rows = getattr(module, "PTXAS_REPORT", None)
    if not rows:
        return
    terminalreporter.section("ptxas: examples")
    for name, arch, report, smem in rows:
        terminalreporter.write_line(
            f"{name:36} {arch:7} {report['registers']:4} registers  "
            f"{report['spill_stores']}/{report['spill_loads']} B spill store/load  {smem} B shared")
