"""Running TileLang programs unchanged: the `tilelang` module names.

    python -m tilelang_mlir.compat prog.py [args...]

or, in a process of your own:

    import tilelang_mlir.compat
    tilelang_mlir.compat.install()
    import tilelang                      # this package, with TileLang's names
    import tilelang.language as T        # tilelang_mlir.language

`install()` puts a finder on `sys.meta_path` that serves the module names
TileLang programs import (`MODULES`): `tilelang` is `compat/root.py`,
`tilelang.language` the T namespace of this package (through a thin module
that reads every name from `tilelang_mlir.language`), and the other
submodules are the modules of this folder, each giving TileLang's names
with TileLang's meanings over this compiler. A submodule we do not provide
(TVM's APIs, CUDA macro generators, the carver's templates, ...) fails to
import with "not supported by tilelang-mlir: <name> (<why>)".

A real TileLang installation is never shadowed silently: `install()` refuses
when `tilelang` can be imported from elsewhere, unless `force=True`.

This is the top layer: it imports the package and its autotuner.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Optional

__all__ = ["install", "uninstall", "installed", "MODULES", "NotSupportedByTileLangMLIR"]

_HERE = __name__  # "tilelang_mlir.compat"

# TileLang module name -> the module of ours that serves it.
MODULES = {
    "tilelang": f"{_HERE}.root",
    "tilelang.jit": f"{_HERE}.jit",
    "tilelang.transform": f"{_HERE}.transform",
    "tilelang.transform.pass_config": f"{_HERE}.transform",
    "tilelang.profiler": f"{_HERE}.profiler",
    "tilelang.profiler.bench": f"{_HERE}.profiler",
    "tilelang.testing": f"{_HERE}.testing",
    "tilelang.autotuner": f"{_HERE}.autotuner",
    "tilelang.autotuner.tuner": f"{_HERE}.autotuner",
    "tilelang.autotuner.capture": f"{_HERE}.autotuner",
    "tilelang.carver": f"{_HERE}.carver",
    "tilelang.carver.arch": f"{_HERE}.carver",
    "tilelang.carver.arch.driver": f"{_HERE}.driver",
    "tilelang.utils": f"{_HERE}.utils",
    "tilelang.utils.tensor": f"{_HERE}.utils",
    "tilelang.layout": f"{_HERE}.layout",
    "tilelang.tools": f"{_HERE}.tools",
    "tilelang.cache": f"{_HERE}.cache",
    "tilelang.math": f"{_HERE}.math",
    "tilelang.env": f"{_HERE}.env",
    "tilelang.tileop": f"{_HERE}.tileop",
    "tilelang.tileop.base": f"{_HERE}.tileop",
    "tilelang.language.fp8": f"{_HERE}.language_fp8",
    "tilelang.language.dtypes": f"{_HERE}.language_dtypes",
    "tilelang.carver.template": f"{_HERE}.carver_template",
    "tilelang.carver.roller": f"{_HERE}.carver_rasterization",
    "tilelang.carver.roller.rasterization": f"{_HERE}.carver_rasterization",
    "tilelang.cuda": f"{_HERE}.cuda_pkg",
    "tilelang.cuda.intrinsics": f"{_HERE}.cuda_pkg",
    "tilelang.cuda.intrinsics.sparse_layout": f"{_HERE}.sparse_layout",
    "tilelang.contrib": f"{_HERE}.contrib",
    "tilelang.contrib.nvcc": f"{_HERE}.contrib_nvcc",
}

# Submodules we do not provide, by prefix, and why (the error's parenthesis).
UNSUPPORTED = {
    "tilelang.tvm": "TVM's APIs are out of scope: tilelang-mlir has no TVM",
    "tilelang.contrib": "TVM's contrib tools (hipcc, cutedsl, ...) are out of scope; "
                        "tilelang.contrib.nvcc has the compute-capability queries",
    "tilelang.carver.template": "only MatmulTemplate is provided (the other templates "
                                "generate TVM programs)",
    "tilelang.carver.roller": "only the rasterization plans are provided (the roller "
                              "searches TVM schedules)",
    "tilelang.cuda": "TileLang's CUDA intrinsic emitters generate TVM code; use T.gemm and "
                     "the layouts of tilelang_mlir.language",
    "tilelang.rocm": "TileLang's ROCm intrinsic emitters generate TVM code; use T.gemm",
    "tilelang.intrinsics": "TileLang's intrinsic emitters generate TVM code; use T.gemm",
    "tilelang.engine": "TileLang's lowering engine is TVM's; use tilelang.compile",
    "tilelang.ir": "TVM IR nodes are out of scope",
}


class NotSupportedByTileLangMLIR(ImportError):
    """A TileLang module this package does not provide."""


def _unsupported(name: str) -> NotSupportedByTileLangMLIR:
    why = next((w for prefix, w in UNSUPPORTED.items()
                if name == prefix or name.startswith(prefix + ".")), None)
    if why is None:
        why = "no compatible module: tilelang_mlir.compat.MODULES lists those provided"
    return NotSupportedByTileLangMLIR(f"not supported by tilelang-mlir: {name} ({why})",
                                      name=name)


class _Namespace(types.ModuleType):
    """`tilelang.language`: every name is read from `tilelang_mlir.language`
    (so names added there later are seen); submodules of
    `tilelang.language` bound on it never hide a T name (`T.copy` stays the
    operation when a program imports `tilelang.language.copy`)."""

    def __getattr__(self, name):
        import tilelang_mlir.language as T

        try:
            return getattr(T, name)
        except AttributeError:
            raise AttributeError(f"module 'tilelang.language' has no attribute {name!r} "
                                 f"(not supported by tilelang-mlir: T.{name})") from None

    def __setattr__(self, name, value):
        import tilelang_mlir.language as T

        if isinstance(value, types.ModuleType) and hasattr(T, name):
            return  # a submodule import: T's own name wins
        super().__setattr__(name, value)

    def __dir__(self):
        import tilelang_mlir.language as T

        return sorted(set(dir(T)) | set(self.__dict__))


def _language_module() -> types.ModuleType:
    import tilelang_mlir.language as T

    ns = _Namespace("tilelang.language", T.__doc__)
    ns.__dict__["__path__"] = []  # a package: tilelang.language.fp8 ... exist
    return ns


def _target(name: str) -> Optional[str]:
    """Which module of ours serves `name` ("" for tilelang.language), or None."""
    if name in MODULES:
        return MODULES[name]
    if name == "tilelang.language":
        return ""
    if name.startswith("tilelang.language."):
        sub = "tilelang_mlir.language." + name[len("tilelang.language."):]
        if importlib.util.find_spec(sub) is not None:
            return sub
    return None


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None  # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module):
        name = module.__name__
        real = _language_module() if self.target == "" else importlib.import_module(self.target)
        if not hasattr(real, "__path__"):
            # A package to the import system, so that `tilelang.x.y` can be asked for.
            real.__path__ = []
        sys.modules[name] = real


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "tilelang" and not name.startswith("tilelang."):
            return None
        ours = _target(name)
        if ours is None:
            raise _unsupported(name)
        return importlib.machinery.ModuleSpec(name, _Loader(ours), is_package=True)


_FINDER: Optional[_Finder] = None


def installed() -> bool:
    """Whether `install()` has registered the `tilelang` names here."""
    return _FINDER is not None and _FINDER in sys.meta_path


def install(force: bool = False) -> None:
    """Registers the module names `tilelang` and `tilelang.*` (see MODULES)
    in this process, so that TileLang programs import this package.

    Refuses (ImportError) when a real `tilelang` can be imported here,
    unless `force=True`, which makes ours win in this process. Calling it
    again does nothing."""
    global _FINDER
    if installed():
        return
    existing = sys.modules.get("tilelang")
    if existing is not None and not force:
        raise ImportError(f"a module 'tilelang' is already imported ({existing!r}): "
                          "tilelang_mlir.compat.install(force=True) replaces it in this process")
    if not force:
        try:
            spec = importlib.util.find_spec("tilelang")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            raise ImportError(f"a real TileLang is installed ({spec.origin}): "
                              "tilelang_mlir.compat.install() will not shadow it silently; "
                              "install(force=True) makes tilelang-mlir serve 'tilelang' in this "
                              "process")
    for name in [m for m in sys.modules if m == "tilelang" or m.startswith("tilelang.")]:
        del sys.modules[name]
    _tilelang_defaults(False)
    _FINDER = _Finder()
    sys.meta_path.insert(0, _FINDER)
    _serve_workers()
    _tilelang_defaults(True)


def _tilelang_defaults(on: bool) -> None:
    """TileLang's meanings where this package's own API chose differently
    (runtime.profiler.Profiler): `do_bench`'s warmup and rep are
    millisecond budgets, and `assert_allclose` allows 1% mismatched
    elements by default; outputs are torch tensors even for a call
    without one, several of them a list (runtime.args.TILELANG_OUTPUTS)."""
    from ..runtime import args
    from ..runtime.profiler import Profiler

    Profiler.bench_units = "ms" if on else "calls"
    Profiler.default_mismatch_ratio = 0.01 if on else 0.0
    # TileLang's kernels return torch tensors, also when no argument is one,
    # and a list of several.
    args.set_tilelang_outputs(on)


def _serve_workers() -> None:
    """The autotuner's compile workers (forkserver) import the main program
    again: their server installs the finder first (compat/_child.py) and
    no longer imports the program itself, which needs the finder."""
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        multiprocessing.set_forkserver_preload([f"{_HERE}._child"])


def uninstall() -> None:
    """Removes the finder and forgets the `tilelang` modules it served (and
    restores this package's profiler defaults)."""
    global _FINDER
    if _FINDER is not None and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    _FINDER = None
    for name in [m for m in sys.modules if m == "tilelang" or m.startswith("tilelang.")]:
        del sys.modules[name]
    _tilelang_defaults(False)
