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

A failed assertion that reads the text this package returned for a
kernel's code or a program's script (`get_kernel_source()`,
`get_host_source()`, `.script()`: PTX, LLVM IR or MLIR where TileLang
returns CUDA C++ or TVMScript) stays a failure, and its report names the
rule it is out of scope by, "(out of scope: ...)", which the conformance
script counts (`source_text_assertion`)."""

from __future__ import annotations

import ast
import os
import random
import re
from typing import List, Optional

import pytest

# The texts of generated code and scripts handed to the running test.
_TEXTS: List[str] = []
SOURCE_TEXT_RULE = ("checks the text of TileLang's generated CUDA C++ or TVMScript; "
                    "tilelang-mlir generates PTX / LLVM IR and prints MLIR")


def _record_texts() -> None:
    """Wraps the methods that hand out generated text, to remember what
    they returned during the test."""
    import tilelang_mlir.language  # noqa: F401 - first: the frontend imports through it
    from tilelang_mlir.frontend import eager, prim_func
    from tilelang_mlir.runtime import kernel

    def wrap(cls, name):
        fn = getattr(cls, name, None)
        if fn is None or getattr(fn, "__tl_records__", False):
            return

        def recorded(self, *args, **kwargs):
            text = fn(self, *args, **kwargs)
            if isinstance(text, str):
                _TEXTS.append(text)
            return text

        recorded.__tl_records__ = True
        recorded.__wrapped__ = fn
        setattr(cls, name, recorded)

    for name in ("get_source", "get_kernel_source", "get_host_source"):
        wrap(kernel.Kernel, name)
    wrap(prim_func.PrimFunc, "script")
    for obj in vars(eager).values():
        if isinstance(obj, type) and "script" in vars(obj):
            wrap(obj, "script")


def _is_text(value) -> bool:
    """A generated text, or the list of its lines."""
    if isinstance(value, str):
        return len(value) > 40 and any(value is t or value == t for t in _TEXTS)
    if isinstance(value, (list, tuple)) and len(value) > 2 and \
            all(isinstance(v, str) for v in value):
        return any("\n".join(value) == t.rstrip("\n") or "\n".join(value) == t
                   for t in _TEXTS)
    return False


def _is_data(value) -> bool:
    kind = type(value)
    return kind.__module__.split(".")[0] in ("torch", "numpy") and \
        kind.__name__ in ("Tensor", "ndarray", "Parameter")


def source_text_assertion(excinfo) -> bool:
    """Whether `excinfo` is an AssertionError (or a StopIteration of a
    search through lines, or the ValueError of `text.index(...)` finding
    nothing) of a frame that holds a generated text (or its lines), in a
    statement that reads no tensor or array."""
    searched = excinfo.errisinstance(ValueError) and \
        str(excinfo.value) == "substring not found"
    if not _TEXTS or not (excinfo.errisinstance((AssertionError, StopIteration)) or searched) \
            or type(excinfo.value).__module__.startswith(("_pytest", "pytest")):
        return False
    entry = excinfo.traceback[-1]
    frame_locals = entry.frame.f_locals
    reads_text = _READS_TEXT.search(_statement_text(entry)) or \
        _calls_a_text_reader(entry)
    if not reads_text and not any(_is_text(v) for v in frame_locals.values()):
        return False
    names = _statement_names(entry)
    if names is None:
        return False
    return not any(_is_data(frame_locals.get(n)) for n in names)


# A statement that asks for the generated text itself.
_READS_TEXT = re.compile(r"\b(get_kernel_source|get_host_source|get_source|kernel_source)\b|"
                         r"\.script\(")


def _calls_a_text_reader(entry) -> bool:
    """Whether the statement calls a helper of the test's module that asks
    for the generated text (`_emitted_shapes(kernel, "wgmma_ss") == [...]`,
    a regex over get_kernel_source() in the helper)."""
    import inspect

    try:
        tree = ast.parse(str(entry.statement).strip())
    except Exception:  # noqa: BLE001 - no statement text: not recognized
        return False
    scope = dict(entry.frame.f_globals)
    scope.update(entry.frame.f_locals)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = scope.get(node.func.id)
            if inspect.isfunction(fn):
                try:
                    source = inspect.getsource(fn)
                except (OSError, TypeError):
                    continue
                if _READS_TEXT.search(source):
                    return True
    return False


def _statement_text(entry) -> str:
    try:
        return str(entry.statement)
    except Exception:  # noqa: BLE001 - no statement text
        return ""


def _statement_names(entry) -> Optional[set]:
    try:
        text = str(entry.statement).strip()
        tree = ast.parse(text)
    except Exception:  # noqa: BLE001 - no statement text: not recognized
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


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


_SERVED = []  # the (impl, emulate) this process serves, once set up


def _serve(impl: str, mode: str) -> None:
    """Serves `tilelang` from this package (impl "ours"), under the CPU or
    dry emulation where asked; once per process."""
    if _SERVED:
        return
    _SERVED.append((impl, mode))
    if impl != "ours":
        return
    from tilelang_mlir import compat

    compat.install(force=True)
    _record_texts()
    from tilelang_mlir.compat import emulate

    if mode == "cpu":
        emulate.cpu()
    elif mode == "dry":
        emulate.dry()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # Before the project's conftest files, which may import tilelang (or
    # name plugins that do: deepseek-ai/TileKernels' benchmark plugin).
    ns = early_config.known_args_namespace
    _serve(getattr(ns, "tl_impl", None) or "ours", getattr(ns, "tl_emulate", None) or "none")


def pytest_configure(config):
    os.environ.setdefault("PYTHONHASHSEED", "0")
    _serve(config.getoption("--tl-impl"), config.getoption("--tl-emulate"))
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


def pytest_runtest_setup(item):
    del _TEXTS[:]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.excinfo is None or item.config.getoption("--tl-impl") != "ours":
        return
    if call.when == "call" and source_text_assertion(call.excinfo):
        report = outcome.get_result()
        first = str(call.excinfo.value).splitlines()[0][:200] if str(call.excinfo.value) \
            else "AssertionError"
        report.longrepr = (f"E   AssertionError (out of scope: {SOURCE_TEXT_RULE}): {first}\n"
                           f"{report.longrepr}")
        return
    from tilelang_mlir.compat.emulate import DryStop

    if call.excinfo.errisinstance(DryStop):
        report = outcome.get_result()
        report.outcome = "skipped"
        report.longrepr = (str(item.fspath), item.location[1] or 0, "dry: compiled")
