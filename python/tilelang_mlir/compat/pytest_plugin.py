"""A pytest plugin that runs TileLang's own tests through this package:

    pytest --noconftest -p tilelang_mlir.compat.pytest_plugin [--tl-emulate=cpu|dry] TESTS
    pytest --noconftest -p tilelang_mlir.compat.pytest_plugin --tl-impl=tilelang TESTS

It installs the `tilelang` module names before the tests are collected
(forcing, so that a TileLang checkout's own package never wins), seeds the
generators as TileLang's conftest does, skips the tests TileLang marks
`perf` (as TileLang's own runs do by default), and with --tl-emulate runs
CUDA programs on the CPU target or compiles them only (compat/emulate.py;
a dry test that reaches its first launch is reported as skipped with the
reason "dry: compiled"). scripts/tilelang_conformance.py drives it.
"""

from __future__ import annotations

import os
import random

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("tilelang-mlir")
    group.addoption("--tl-impl", choices=("ours", "tilelang"), default="ours",
                    help="serve `tilelang` from this package (ours) or leave an installed "
                         "TileLang in place (tilelang: its own results, the denominator)")
    group.addoption("--tl-emulate", choices=("none", "cpu", "dry"), default="none",
                    help="run CUDA programs on the CPU target (cpu) or only compile them (dry)")
    try:
        parser.addoption("--run-perf", action="store_true", default=False,
                         help="also run the tests TileLang marks perf")
    except ValueError:  # TileLang's conftest defined it
        pass


def pytest_configure(config):
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if config.getoption("--tl-impl") == "ours":
        from tilelang_mlir import compat

        compat.install(force=True)
        from tilelang_mlir.compat import emulate

        mode = config.getoption("--tl-emulate")
        if mode == "cpu":
            emulate.cpu()
        elif mode == "dry":
            emulate.dry()
    config.addinivalue_line("markers", "perf: benchmark and performance API tests")
    config.addinivalue_line("markers", "slow: long-running correctness sweeps")
    random.seed(0)
    try:
        import numpy as np

        np.random.seed(0)
    except ImportError:
        pass
    try:
        import torch

        torch.manual_seed(0)
    except ImportError:
        pass


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-perf", default=False):
        return
    skip = pytest.mark.skip(reason="performance test (TileLang skips these by default)")
    for item in items:
        if item.get_closest_marker("perf") is not None:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.excinfo is None or item.config.getoption("--tl-impl") != "ours":
        return
    from tilelang_mlir.compat.emulate import DryStop

    if call.excinfo.errisinstance(DryStop):
        report = outcome.get_result()
        report.outcome = "skipped"
        report.longrepr = (str(item.fspath), item.location[1] or 0, "dry: compiled")
