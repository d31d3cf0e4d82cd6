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
with TileLang's meanings over this compiler. A module of a TileLang
release (or of TVM) that is out of scope (TVM's APIs, CUDA macro
generators, the carver's templates, ...) imports, and each of its names
raises "not supported by tilelang-mlir: <name> (<why>)" where it is used
(compat/refused_module.py: kernel libraries import every module eagerly);
a module path no release has fails at the import.

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

__all__ = ["install", "uninstall", "installed", "MODULES", "TVM_MODULES",
           "NotSupportedByTileLangMLIR"]

_HERE = __name__  # "tilelang_mlir.compat"

# TileLang module name -> the module of ours that serves it (a name at every
# place a release from 0.1.6 to 0.1.15 has put it).
MODULES = {
    "tilelang": f"{_HERE}.root",
    "tilelang.jit": f"{_HERE}.jit",
    "tilelang.jit.kernel": f"{_HERE}.jit",
    "tilelang.jit.param": f"{_HERE}.jit",
    "tilelang.jit.diagnostics": f"{_HERE}.jit_diagnostics",
    "tilelang.transform": f"{_HERE}.transform",
    "tilelang.transform.pass_config": f"{_HERE}.transform",
    "tilelang.profiler": f"{_HERE}.profiler",
    "tilelang.profiler.bench": f"{_HERE}.profiler",
    "tilelang.testing": f"{_HERE}.testing",
    "tilelang.autotuner": f"{_HERE}.autotuner",
    "tilelang.autotuner.tuner": f"{_HERE}.autotuner",
    "tilelang.autotuner.capture": f"{_HERE}.autotuner",
    "tilelang.autotuner.param": f"{_HERE}.autotuner",
    "tilelang.carver": f"{_HERE}.carver",
    "tilelang.carver.arch": f"{_HERE}.carver",
    "tilelang.carver.arch.arch_base": f"{_HERE}.carver",
    "tilelang.carver.arch.cuda": f"{_HERE}.carver",
    "tilelang.carver.arch.cdna": f"{_HERE}.carver",
    "tilelang.carver.arch.driver": f"{_HERE}.driver",
    "tilelang.carver.arch.driver.cuda_driver": f"{_HERE}.driver",
    "tilelang.carver.template": f"{_HERE}.carver_template",
    "tilelang.carver.template.matmul": f"{_HERE}.carver_template",
    "tilelang.carver.roller": f"{_HERE}.carver_rasterization",
    "tilelang.carver.roller.rasterization": f"{_HERE}.carver_rasterization",
    "tilelang.utils": f"{_HERE}.utils",
    "tilelang.utils.tensor": f"{_HERE}.utils",
    "tilelang.utils.deprecated": f"{_HERE}.utils",
    "tilelang.utils.device": f"{_HERE}.utils",
    "tilelang.utils.version": f"{_HERE}.utils",
    "tilelang.utils.target": f"{_HERE}.target",
    "tilelang.utils.sparse": f"{_HERE}.utils_sparse",
    "tilelang.backend": f"{_HERE}.backend_pkg",
    "tilelang.backend.target": f"{_HERE}.target",
    "tilelang.layout": f"{_HERE}.layout",
    "tilelang.layout.layout": f"{_HERE}.layout",
    "tilelang.layout.fragment": f"{_HERE}.layout",
    "tilelang.layout.swizzle": f"{_HERE}.layout",
    "tilelang.layout.swizzle_mode": f"{_HERE}.layout",
    "tilelang.layout.gemm_sp": f"{_HERE}.gemm_sp_layout",
    "tilelang.intrinsics": f"{_HERE}.intrinsics",
    "tilelang.intrinsics.utils": f"{_HERE}.intrinsics",
    "tilelang.intrinsics.mma_layout": f"{_HERE}.intrinsics",
    "tilelang.tools": f"{_HERE}.tools",
    "tilelang.tools.plot_layout": f"{_HERE}.tools",
    "tilelang.cache": f"{_HERE}.cache",
    "tilelang.math": f"{_HERE}.math",
    "tilelang.env": f"{_HERE}.env",
    "tilelang.tileop": f"{_HERE}.tileop",
    "tilelang.tileop.base": f"{_HERE}.tileop",
    "tilelang.language.fp8": f"{_HERE}.language_fp8",
    "tilelang.language.dtypes": f"{_HERE}.language_dtypes",
    "tilelang.cuda": f"{_HERE}.cuda_pkg",
    "tilelang.cuda.target": f"{_HERE}.target",
    "tilelang.cuda.intrinsics": f"{_HERE}.intrinsics",
    "tilelang.cuda.intrinsics.layout": f"{_HERE}.intrinsics",
    "tilelang.cuda.intrinsics.layout.mma_layout": f"{_HERE}.intrinsics",
    "tilelang.cuda.intrinsics.layout.utils": f"{_HERE}.intrinsics",
    "tilelang.cuda.intrinsics.sparse_layout": f"{_HERE}.sparse_layout",
    "tilelang.cpu": f"{_HERE}.cpu_pkg",
    "tilelang.rocm": f"{_HERE}.rocm_pkg",
    "tilelang.rocm.target": f"{_HERE}.target",
    "tilelang.contrib": f"{_HERE}.contrib",
    "tilelang.contrib.nvcc": f"{_HERE}.contrib_nvcc",
    "tilelang.tvm": f"{_HERE}.tvm_pkg",
}

# The few TVM names TileLang programs use (compat/tvm_pkg.py): `tilelang.tvm`
# always; `tvm` itself only where no real TVM can be imported (or forced).
TVM_MODULES = {
    "tvm": f"{_HERE}.tvm_pkg",
    "tvm.tir": f"{_HERE}.tvm_tir",
    "tvm.tirx": f"{_HERE}.tvm_tir",
    "tvm.tir.expr": f"{_HERE}.tvm_tir",
    "tvm.tirx.expr": f"{_HERE}.tvm_tir",
    "tvm.script": f"{_HERE}.tvm_script",
    "tvm.script.ir_builder": f"{_HERE}.tvm_script",
    "tvm.script.ir_builder.base": f"{_HERE}.tvm_script",
    "tvm.target": f"{_HERE}.target",
    "tvm.transform": f"{_HERE}.tvm_transform",
    "tvm.error": f"{_HERE}.tvm_error",
    "tvm.testing": f"{_HERE}.testing",
}

# The packages whose submodules are the T namespace (TileLang's dialects):
# a module path TileLang has had under them reads every name from it.
LANGUAGE_PACKAGES = ("tilelang.language", "tilelang.cuda.language", "tilelang.cpu.language",
                     "tilelang.rocm.language")


class NotSupportedByTileLangMLIR(ImportError):
    """A TileLang module this package does not provide."""


def _unsupported(name: str) -> NotSupportedByTileLangMLIR:
    from .refusals import message, module_reason, refusal

    parent, _, last = name.rpartition(".")
    in_language = any(parent == p or parent.startswith(p + ".") for p in LANGUAGE_PACKAGES)
    if in_language and name not in _known_modules():
        from .refusals import is_surface_name

        if parent in LANGUAGE_PACKAGES or is_surface_name("tilelang.language", last) or \
                module_reason(parent) is None:
            # `from tilelang.language import X` of a T name we lack: its reason.
            return NotSupportedByTileLangMLIR(message("tilelang.language", last), name=name)
        # A name of TileLang's frontend internals that is no T name
        # (`from tilelang.language.eager.ast import mutate`): the module's refusal.
        return NotSupportedByTileLangMLIR(refusal(name, module_reason(parent)), name=name)
    if name not in _known_modules() and parent in sys.modules:
        # `from tilelang.utils import is_shared`: the name's own reason.
        from .refusals import REFUSED

        for surface in (parent, parent.rpartition(".")[0]):
            if last in REFUSED.get(surface, {}):
                return NotSupportedByTileLangMLIR(message(surface, last), name=name)
    why = module_reason(name)
    if why is None:
        why = "no compatible module: tilelang_mlir.compat.MODULES lists those provided"
        return NotSupportedByTileLangMLIR(f"not supported by tilelang-mlir: {name} ({why})",
                                          name=name)
    return NotSupportedByTileLangMLIR(refusal(name, why), name=name)


def _extras() -> dict:
    """T names of TileLang that the compat route adds to the T namespace:
    the layout helpers of TileLang's tensor-core code, the TVM expression
    types programs check values against and the expression nodes they build
    (T.And, T.Max, T.FloorDiv, ...)."""
    from . import intrinsics, tvm_tir

    out = {n: getattr(intrinsics, n) for n in intrinsics.__all__}
    out.update(PrimExpr=tvm_tir.PrimExpr, IntImm=tvm_tir.IntImm, FloatImm=tvm_tir.FloatImm,
               Any=__import__("typing").Any)
    out.update({n: getattr(tvm_tir, n) for n in tvm_tir.EXPR_BUILDERS})
    out["SizeVar"] = tvm_tir.SizeVar
    return out


def _check_at_definition(program) -> None:
    """Builds `program` once as TileLang's `@T.prim_func` parses its body
    when it is decorated, and raises the errors TileLang raises there (those
    marked `at_definition`: an atomic load's memory order, T.dp4a's dtypes,
    a literal out of its dtype's range, ...). Any other failure is left for
    the compile, where it is raised again with TileLang's timing (a name
    bound after the decorator, a refusal of this compiler)."""
    from ..base.errors import TileLangError
    from ..frontend.context import make_context
    from ..language import state

    if state.active():  # decorated while another program is built: it checks
        return
    try:
        with make_context():
            program.emit()
    except TileLangError as e:
        if e.at_definition:
            raise e.with_traceback(None) from None
    except Exception:  # noqa: BLE001 (raised again by the compile)
        pass


def prim_func(fn=None):
    """TileLang's `@T.prim_func`: this package's decorator (lazy: the body is
    built at the compile), with the errors TileLang raises at the decorator
    raised there too (_check_at_definition)."""
    if fn is None:
        return prim_func
    from ..frontend.prim_func import PrimFunc
    from ..frontend.prim_func import prim_func as ours

    program = ours(fn)
    if isinstance(program, PrimFunc):
        _check_at_definition(program)
    return program


# T names whose TileLang meaning differs from this package's T name.
_OVERRIDES = {"prim_func": prim_func}


class _Namespace(types.ModuleType):
    """`tilelang.language` (and its submodules, and the dialect packages):
    every name is read from `tilelang_mlir.language` (so names added there
    later are seen); submodules bound on it never hide a T name (`T.copy`
    stays the operation when a program imports `tilelang.language.copy`)."""

    def __getattr__(self, name):
        import tilelang_mlir.language as T

        if name in _OVERRIDES:
            return _OVERRIDES[name]
        try:
            value = getattr(T, name)
        except AttributeError:
            value = None
        if isinstance(value, types.ModuleType):
            # A module of TileLang's by that name (tilelang.language.eager)
            # rather than this package's own module of the T namespace.
            sub = f"{self.__name__}.{name}"
            if sub in _known_modules():
                return importlib.import_module(sub)
        if value is not None:
            return value
        extras = _extras()
        if name in extras:
            return extras[name]
        if name == "__all__":  # `from tilelang.language.tir.ir import *`, name checks
            return [n for n in self.__dir__() if not n.startswith("_")]
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        from .refusals import message

        raise AttributeError(message("tilelang.language", name)) from None

    def __setattr__(self, name, value):
        import tilelang_mlir.language as T

        if isinstance(value, types.ModuleType) and hasattr(T, name) and \
                not isinstance(getattr(T, name), types.ModuleType):
            return  # a submodule import: T's own name (an operation) wins
        super().__setattr__(name, value)

    def __dir__(self):
        import tilelang_mlir.language as T

        return sorted(set(dir(T)) | set(self.__dict__) | set(_extras()))


def _language_module(name: str = "tilelang.language") -> types.ModuleType:
    import tilelang_mlir.language as T

    ns = _Namespace(name, T.__doc__)
    ns.__dict__["__path__"] = []  # a package: tilelang.language.fp8 ... exist
    return ns


def _known_modules() -> set:
    """Every module path of TileLang's releases (compat/surface.json)."""
    global _KNOWN
    if _KNOWN is None:
        from .surface import load

        try:
            _KNOWN = set(load()["modules"])
        except OSError:
            _KNOWN = set()
    return _KNOWN


_KNOWN = None
_SERVE_TVM = [False]


def _target(name: str) -> Optional[str]:
    """Which module of ours serves `name` ("" for a T namespace), or None."""
    if name in MODULES:
        return MODULES[name]
    if name in TVM_MODULES and (_SERVE_TVM[0] or name.startswith("tilelang.")):
        return TVM_MODULES[name]
    if name.startswith("tilelang.tvm."):
        sub = "tvm." + name[len("tilelang.tvm."):]
        return TVM_MODULES.get(sub)
    for pkg in LANGUAGE_PACKAGES:
        if name == pkg or (name.startswith(pkg + ".") and name in _known_modules()):
            return ""
    if name.startswith("tilelang.language."):
        sub = "tilelang_mlir.language." + name[len("tilelang.language."):]
        try:
            found = importlib.util.find_spec(sub)
        except ImportError:  # a parent of ours that is not a package
            found = None
        if found is not None:
            return sub
    return None


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None  # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module):
        name = module.__name__
        real = _language_module(name) if self.target == "" else \
            importlib.import_module(self.target)
        if self.target == "":
            real.__spec__ = module.__spec__
        if "__path__" not in real.__dict__:
            # A package to the import system, so that `tilelang.x.y` can be asked for.
            real.__path__ = []
        own = real.__dict__.get("__getattr__")
        if self.target and not getattr(own, "_compat", False):
            real.__getattr__ = _refusing(name, real, own)
            # TileLang's name, so that `from tilelang.x import missing` asks
            # the finder for `tilelang.x.missing`, whose error gives the
            # reason (its spec keeps this package's module name).
            real.__name__ = name
        sys.modules[name] = real


def _served_submodule(module, attr: str):
    """The module served as `<T>.<attr>` for a TileLang name T that `module`
    serves (`from tilelang.autotuner import param`), or None."""
    ours = module.__spec__.name if module.__spec__ is not None else module.__name__
    for tl_name, target in MODULES.items():
        if target == ours and f"{tl_name}.{attr}" in MODULES:
            return importlib.import_module(f"{tl_name}.{attr}")
    return None


def _refusing(surface: str, module, own=None):
    """A module `__getattr__`: a served submodule of that name, else the
    module's own `__getattr__` (`own`), else an error saying why the TileLang
    name is missing (compat/refusals.py)."""

    def __getattr__(attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        sub = _served_submodule(module, attr)
        if sub is not None:
            return sub
        if own is not None:
            return own(attr)
        from .refusals import message

        raise AttributeError(message(surface, attr))

    __getattr__._compat = True
    return __getattr__


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("tvm", "tilelang") or name.startswith(("tvm.", "tilelang.")):
            if name.split(".")[0] == "tvm" and not _SERVE_TVM[0]:
                return None
        else:
            return None
        ours = _target(name)
        if ours is None:
            error = _unsupported(name)
            why = _deferred_reason(name)
            if why is not None:
                return importlib.machinery.ModuleSpec(name, _RefusedLoader(why),
                                                      is_package=True)
            raise error
        return importlib.machinery.ModuleSpec(name, _Loader(ours), is_package=True)


def _deferred_reason(name: str) -> Optional[str]:
    """The refusal of an out-of-scope module that imports and refuses its
    names at their use (compat/refused_module.py), or None when the import
    itself fails."""
    from .refused_module import deferred
    from .refusals import module_reason

    if any(name == p or name.startswith(p + ".") for p in LANGUAGE_PACKAGES):
        return None
    why = module_reason(name)
    if why is None or not deferred(name, _known_modules(), TVM_MODULES):
        return None
    return why


class _RefusedLoader(importlib.abc.Loader):
    def __init__(self, why: str):
        self.why = why

    def create_module(self, spec):
        from .refused_module import RefusedModule, served_names

        return RefusedModule(spec.name, self.why, served_names(spec.name))

    def exec_module(self, module):
        pass


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
            where = spec.origin or ("a folder named 'tilelang' on sys.path: " + ", ".join(
                dict.fromkeys(spec.submodule_search_locations or [])))
            raise ImportError(f"a real TileLang is installed ({where}): "
                              "tilelang_mlir.compat.install() will not shadow it silently; "
                              "install(force=True) makes tilelang-mlir serve 'tilelang' in this "
                              "process")
    for name in [m for m in sys.modules if m == "tilelang" or m.startswith("tilelang.")]:
        del sys.modules[name]
    _SERVE_TVM[0] = _no_real_tvm(force)
    _tilelang_defaults(False)
    _FINDER = _Finder()
    sys.meta_path.insert(0, _FINDER)
    _serve_workers()
    _tilelang_defaults(True)


def _no_real_tvm(force: bool) -> bool:
    """Whether the compat route serves the top-level name `tvm`: where no
    real TVM can be imported, or when forced (then ours wins in this
    process, as for `tilelang`)."""
    if force:
        for name in [m for m in sys.modules if m == "tvm" or m.startswith("tvm.")]:
            del sys.modules[name]
        return True
    if "tvm" in sys.modules:
        return False
    try:
        return importlib.util.find_spec("tvm") is None
    except (ImportError, ValueError):
        return True


def _tilelang_defaults(on: bool) -> None:
    """TileLang's meanings where this package's own API chose differently
    (runtime.profiler.Profiler): `do_bench`'s warmup and rep are
    millisecond budgets, `assert_allclose` allows 1% mismatched
    elements by default, and the profiler's random inputs are TileLang's
    Auto supply (U(-1, 1) for 16/32-bit floats); outputs are torch tensors even for a call
    without one, several of them a list (runtime.args.TILELANG_OUTPUTS); an
    error at a line of the program also says `--> file:line:col`."""
    from ..base.errors import TileLangError
    from ..runtime import args
    from ..runtime.kernel import Kernel
    from ..runtime.profiler import Profiler, TensorSupplyType
    from .refusals import REFUSED, message

    Profiler.bench_units = "ms" if on else "calls"
    Profiler.default_supply_type = TensorSupplyType.Auto if on else None
    # TileLang's kernel and profiler members that are refused say why.
    for cls, surface in ((Kernel, "tilelang.JITKernel"), (Profiler, "tilelang.Profiler")):
        cls.refused_members = {n: message(surface, n) for n in REFUSED[surface]} if on else {}
    Profiler.default_mismatch_ratio = 0.01 if on else 0.0
    # Errors at a line of the program also name it as TileLang's do.
    TileLangError.arrow_line = on
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
    served = ("tilelang", "tvm") if _SERVE_TVM[0] else ("tilelang",)
    for name in [m for m in sys.modules if m.split(".")[0] in served]:
        del sys.modules[name]
    _SERVE_TVM[0] = False
    _tilelang_defaults(False)
