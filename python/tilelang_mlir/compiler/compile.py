"""`tl.compile` and `@tl.jit`: from a tile program to a callable kernel.

Compiled kernels are cached in memory and on disk, keyed by the program's
source, its closure values, the target, the pass configs and the compiler
build. The disk cache lives in $TILELANG_MLIR_CACHE_DIR (default
~/.cache/tilelang_mlir); TILELANG_MLIR_DISABLE_CACHE=1 turns it off. Its
entries are checked before use (runtime/cache.py): one that is not the
kernel of its key is deleted with a warning and compiled again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
import warnings
from collections import OrderedDict
from typing import Any, List, Optional, Sequence, Tuple, Union

from dataclasses import dataclass

from ..base.artifact import CompiledArtifact
from ..base.errors import SourceLocation, TileLangError, TileLangWarning
from ..base.signature import Param, is_input
from ..base.target import Target, parse_target
from ..frontend.prim_func import PrimFunc
from ..runtime import cache as _entries
from ..base.dtypes import DType
from ..runtime.kernel import Kernel
from ..runtime.launcher import JitBase
from .backend import Backend
from .pass_config import (PASS_CONFIGS, TILELANG_PASS_CONFIGS,  # noqa: F401
                          check_pass_configs, normalize)
from .pipeline import PipelineRunner, diagnostics_error, trace_dir, warn_program

# The kernels compiled in this process, most recently used last. Bounded:
# a process that compiles kernels without end (a fuzzer, a sweep) must not
# keep every one alive.
_MEMORY_CACHE: "OrderedDict[str, Kernel]" = OrderedDict()
_MEMORY_CACHE_SIZE = 256


def _remembered(key: str) -> Optional[Kernel]:
    """The kernel of `key` in the in-memory cache (call with _LOCK held)."""
    kernel = _MEMORY_CACHE.get(key)
    if kernel is not None:
        _MEMORY_CACHE.move_to_end(key)
    return kernel


def _remember(key: str, kernel: Kernel) -> Kernel:
    """Puts `kernel` in the in-memory cache, or returns the one another
    thread put there first; drops the least recently used beyond the bound
    (call with _LOCK held)."""
    kernel = _MEMORY_CACHE.setdefault(key, kernel)
    _MEMORY_CACHE.move_to_end(key)
    while len(_MEMORY_CACHE) > _MEMORY_CACHE_SIZE:
        _MEMORY_CACHE.popitem(last=False)
    return kernel
_LOCK = threading.Lock()


def offline() -> bool:
    """True where no compiler is available (or TILELANG_MLIR_OFFLINE=1):
    kernels then come from the disk cache only, as compiled elsewhere."""
    if os.environ.get("TILELANG_MLIR_OFFLINE", "") not in ("", "0"):
        return True
    try:
        from .._mlir_libs import _tile  # noqa: F401
    except ImportError:
        return True
    return False


def _compiler_id() -> str:
    """Identifies the compiler build: a rebuilt native library invalidates
    cached kernels. Offline, the id of the compiler that filled the cache
    (its COMPILER_ID file) is used."""
    if offline():
        d = _cache_dir()
        try:
            with open(os.path.join(d or "", "COMPILER_ID")) as f:
                return f.read().strip()
        except OSError:
            raise TileLangError(
                f"no compiler is available here and the kernel cache {d!r} holds no "
                "COMPILER_ID: compile the kernels on a machine with the compiler into "
                "this cache first (TILELANG_MLIR_CACHE_DIR)") from None
    from ..base.version import __version__
    from .._mlir_libs import _tile

    path = _tile.__file__
    libdir = os.path.dirname(path)
    parts = [__version__]
    for name in sorted(os.listdir(libdir)):
        if name.startswith("libTilePythonCAPI") or name.startswith("_tile"):
            parts.extend(_stat_part(os.path.join(libdir, name), name))
    here = os.path.dirname(os.path.dirname(__file__))
    for sub in ("base", "compiler", "frontend", "language"):
        for name in sorted(os.listdir(os.path.join(here, sub))):
            if name.endswith(".py") and not name.startswith("."):
                parts.extend(_stat_part(os.path.join(here, sub, name), f"{sub}/{name}"))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _stat_part(path: str, label: str) -> List[str]:
    """`label:size:mtime` of a file of the compiler, or nothing for an entry
    that cannot be stat'ed: editors leave broken symlinks (emacs lock files
    `.#name.py`) and files vanish while we list them; neither is code that
    runs."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [f"{label}:{st.st_size}:{int(st.st_mtime)}"]


def _cache_dir() -> Optional[str]:
    if os.environ.get("TILELANG_MLIR_DISABLE_CACHE", "") not in ("", "0"):
        return None
    return os.environ.get("TILELANG_MLIR_CACHE_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "tilelang_mlir"))


# Whether compiles use the kernel caches (memory and disk); see set_cache_enabled.
_CACHE_ENABLED = [True]


def set_cache_enabled(enabled: bool) -> None:
    """Turns the kernel caches on or off for this process: off, every
    compile runs the passes and nothing is cached (as the pass config
    tl.disable_cache does for one compile)."""
    _CACHE_ENABLED[0] = bool(enabled)


def cache_enabled() -> bool:
    """Whether compiles use the kernel caches (set_cache_enabled)."""
    return _CACHE_ENABLED[0]


def clear_cache() -> int:
    """Forgets the kernels compiled in this process and deletes the disk
    cache's kernel entries and autotune results (only files this compiler
    writes there). Returns the number of files deleted."""
    import shutil

    with _LOCK:
        _MEMORY_CACHE.clear()
    d = _cache_dir()
    if d is None or not os.path.isdir(d):
        return 0
    removed = 0
    for name in os.listdir(d):
        path = os.path.join(d, name)
        if name.endswith(".json") or name == "COMPILER_ID":
            try:
                os.remove(path)
                removed += 1
            except OSError:
                pass
    tuned = os.path.join(d, "autotune")
    if os.path.isdir(tuned):
        removed += sum(len(files) for _, _, files in os.walk(tuned))
        shutil.rmtree(tuned, ignore_errors=True)
    return removed


def compiler_id() -> str:
    """The id of this compiler build (see `_compiler_id`)."""
    return _compiler_id()


def cache_dir() -> Optional[str]:
    """The disk kernel cache's folder; None when the cache is off."""
    return _cache_dir()


# Pass configs this compiler understands (TileLang's spelling where one
# exists), key -> meaning; the records, with types, defaults and targets, are
# in pass_config.py.
KNOWN_PASS_CONFIGS = {name: r.meaning for name, r in PASS_CONFIGS.items()}


def normalize_pass_configs(pass_configs: Optional[dict]) -> dict:
    """`pass_configs` with our keys only: enum keys (TileLang's
    `PassConfigKey`) become their strings, TileLang's keys are translated
    (pass_config.py: TILELANG_PASS_CONFIGS), an unknown key is a ValueError."""
    return normalize(pass_configs)


# Pass configs that only ask for something to be written besides the kernel:
# they are not part of the cache key, and a compile with one of them runs
# the passes (no cache).
_OUTPUT_CONFIGS = ("tl.trace_dir", "tl.layout_plot_dir")
# Pass configs that report on the kernel (its code, its tile IR) from the
# kernel itself: not part of the cache key, and a cached kernel serves them.
_REPORT_CONFIGS = ("tl.kernel_source_dir", "tl.print_tile_ir")


def _check_pass_configs(pass_configs: dict) -> None:
    check_pass_configs(pass_configs)


def _normalize_out_idx(out_idx, params: List[Param]) -> List[int]:
    if out_idx is None:
        return []
    if isinstance(out_idx, int):
        out_idx = [out_idx]
    params = [p for p in params if not p.hidden]  # (they come last)
    result = []
    for i in out_idx:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"out_idx entries must be ints, got {i!r}")
        j = i + len(params) if i < 0 else i
        if not 0 <= j < len(params):
            raise ValueError(f"out_idx {i} is out of range for {len(params)} arguments")
        if params[j].kind != "tensor":
            raise ValueError(f"out_idx {i} names scalar argument {params[j].name!r}; "
                             "only tensors can be outputs")
        if j in result:
            raise ValueError(f"out_idx lists argument {params[j].name!r} twice")
        result.append(j)
    return result


def _emit(func: PrimFunc) -> Tuple[Any, str]:
    """Emits and verifies the tile IR; errors point at the user's line."""
    from .. import ir

    module = func.emit()
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise diagnostics_error(e, "the tile program does not verify") from None
    return module, str(module)


def emit_tile_ir(func: PrimFunc) -> str:
    """The verified tile IR of `func` as text with the user's source
    locations (what the autotuner ships to a compile worker, whose
    `build_artifact` parses it back: errors still point at the user's
    lines)."""
    from .. import ir
    from ..frontend.context import make_context

    with make_context(), ir.Location.unknown():
        module, _ = _emit(func)
        return module.operation.get_asm(enable_debug_info=True)


def _lower(func: PrimFunc, target: Target, pass_configs: dict,
           out_idx: Sequence[int] = ()) -> CompiledArtifact:
    """Emits `func` and runs the pipeline of `target`'s backend: the
    artifact with the IR of every stage, the final code and what the
    runtime needs besides."""
    from .. import ir
    from ..frontend.context import make_context

    plot_dir = pass_configs.get("tl.layout_plot_dir")
    if plot_dir and target.kind != "cuda":
        raise TileLangError(f"pass config 'tl.layout_plot_dir' needs a CUDA target, got "
                            f"{target}: the {target.kind} backend chooses no layouts (target="
                            "\"cuda:sm_80\" or \"cuda:sm_90a\" compiles without a GPU)")
    backend = backend_for(target)
    trace = trace_dir(pass_configs)
    with make_context(), ir.Location.unknown():
        module, tile_text = _emit(func)
        if pass_configs.get("tl.sync_threads_whole_block"):
            tile_text = _block_syncs(module)
        kernels = _kernel_ops(module)
        if len(kernels) > 1 and target.kind != "cpu":
            return _lower_parts(func, module, tile_text, len(kernels), backend, target,
                                pass_configs, out_idx, trace)
        runner = PipelineRunner(trace)
        runner.dump(module, "tile")
        return backend.lower(func, module, runner, target, pass_configs, out_idx,
                             {"tile": tile_text})


def _block_syncs(module) -> str:
    """`tl.sync_threads_whole_block` (TileLang's
    `tl.disable_thread_storage_sync`, under which its T.sync_threads() stays
    __syncthreads() everywhere; without it, one inside a branch over a range
    of threads synchronizes those threads only). Before the pipeline every
    tile.barrier is the program's: each becomes a barrier of the whole block
    (`block`), also inside a role. The new tile text."""
    from .. import ir

    def visit(op):
        if op.name == "tile.barrier":
            op.attributes["block"] = ir.UnitAttr.get()
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return str(module)


def _kernel_ops(module) -> list:
    """The tile.kernel ops of the emitted program's function, in order."""
    found = []
    for fn in module.body.operations:
        for region in fn.regions:
            for block in region.blocks:
                found.extend(op for op in block.operations if op.name == "tile.kernel")
    return found


def _lower_parts(func, module, tile_text: str, count: int, backend, target, pass_configs,
                 out_idx, trace) -> CompiledArtifact:
    """A GPU program of `count` T.Kernels: each kernel is lowered alone (a
    copy of the program with the other kernels erased) and the artifact is
    their sequence, launched in program order (TileLang's split + combine
    programs). The IR stages of kernel i are named "<stage>:<i>"."""
    from .. import ir

    text = module.operation.get_asm(enable_debug_info=True)
    stages = {"tile": tile_text}
    parts = []
    for i in range(count):
        part = ir.Module.parse(text)
        for j, op in enumerate(_kernel_ops(part)):
            if j != i:
                op.erase()
        runner = PipelineRunner(os.path.join(trace, f"kernel{i}") if trace else None)
        runner.dump(part, "tile")
        artifact = backend.lower(func, part, runner, target, pass_configs, out_idx,
                                 {"tile": str(part)})
        stages.update({f"{k}:{i}": v for k, v in artifact.stages.items() if k != "tile"})
        parts.append(artifact)
    source = "\n".join(f"// kernel {i} of {count}\n{p.source}" for i, p in enumerate(parts))
    return CompiledArtifact(func.name, func.params, out_idx, target, stages, source,
                            parts=tuple(parts),
                            ptxas="\n".join(p.ptxas for p in parts if p.ptxas))


def backend_for(target) -> Backend:
    """The backend of `target`'s kind."""
    if target.kind == "cpu":
        from .cpu import CPUBackend

        return CPUBackend()
    if target.kind == "cuda":
        from .cuda import CUDABackend

        return CUDABackend()
    if target.kind == "rocm":
        from .rocm import ROCmBackend

        return ROCmBackend()
    raise TileLangError(f"target {target} is not supported by this build yet")


@dataclass(frozen=True)
class CompilePlan:
    """What `tl.compile` decides before it compiles: the parsed target and
    pass configs, the output indices, the cache key, whether the caches are
    used and the compiler id. `plan` makes one; the autotuner ships one to
    its compile workers."""

    target: Target
    pass_configs: dict
    out_idx: Tuple[int, ...]
    key: str
    use_cache: bool
    compiler: str


def plan(func: PrimFunc, out_idx=None, target: Union[str, Target] = "auto",
         pass_configs: Optional[dict] = None) -> CompilePlan:
    """Checks the arguments of a compile and decides what `compile` would
    (see `CompilePlan`)."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"tl.compile expects a @T.prim_func, got {type(func).__name__}")
    tgt = parse_target(target)
    annotated = getattr(func, "function_annotations", None)
    if annotated is not None:  # T.annotate_pass_configs / compile_flags in the body
        configs, flags = annotated()
        check_compile_flags(flags)
        if configs:
            pass_configs = {**normalize_pass_configs(configs),
                            **normalize_pass_configs(pass_configs)}
    pass_configs = normalize_pass_configs(pass_configs)
    _check_pass_configs(pass_configs)
    own = getattr(func, "own_out_idx", None)  # an eager program's T.empty outputs
    if own:
        if out_idx is not None:
            raise ValueError(f"Out index conflict: out_idx={out_idx!r} for {func.name!r}, whose "
                             f"outputs are the T.empty tensors it returns (arguments {own}); "
                             "give one or the other")
        out_idx = own
    outs = _normalize_out_idx(out_idx, func.params)
    config_key = json.dumps({k: v for k, v in sorted(pass_configs.items())
                             if k not in _OUTPUT_CONFIGS + _REPORT_CONFIGS
                             + ("tl.disable_cache",)},
                            default=str)
    compiler = _compiler_id()
    key = hashlib.sha256("|".join([func.fingerprint(), str(tgt), config_key, str(outs),
                                   compiler]).encode()).hexdigest()
    # A traced or plotted compile must run the passes; so must an uncached one.
    use_cache = (trace_dir(pass_configs) is None and not pass_configs.get("tl.layout_plot_dir")
                 and not pass_configs.get("tl.disable_cache") and _CACHE_ENABLED[0])
    return CompilePlan(tgt, pass_configs, tuple(outs), key, use_cache, compiler)


def build_artifact(func: PrimFunc, p: CompilePlan) -> CompiledArtifact:
    """The artifact of `func` under plan `p`: from the disk cache, else
    lowered now (and saved there). `func` may be anything with `name`,
    `params` and `emit()` (the autotuner's workers pass emitted IR)."""
    cached = cached_artifact(func, p) if p.use_cache or offline() else None
    if cached is not None:
        _warn_again(cached)
        return cached
    if offline():
        raise TileLangError(
            f"no compiler is available here and kernel {func.name!r} for {p.target} is not in "
            f"the kernel cache {_cache_dir()!r}; compile it on a machine with the compiler "
            "into that cache first")
    artifact = _lower_keeping_warnings(func, p)
    if p.use_cache:
        _save_to_disk(p.key, p.target, p.compiler, artifact)
    return artifact


def _lower_keeping_warnings(func, p: CompilePlan) -> CompiledArtifact:
    """`_lower`, with the program's warnings (TileLangWarning at its lines)
    kept in the artifact (stage "warnings"), so that a kernel from the disk
    cache warns as its first compile did; every warning is given on to the
    caller's filters."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        artifact = _lower(func, p.target, p.pass_configs, p.out_idx)
    kept = []
    for w in caught:
        m = w.message
        if isinstance(m, TileLangWarning) and m.location is not None:
            loc = m.location
            kept.append([m.message, loc.filename, loc.line, loc.col, list(m.notes)])
        warnings.warn_explicit(m, w.category, w.filename, w.lineno)
    if kept:
        artifact.stages["warnings"] = json.dumps(kept)
    return artifact


def _warn_again(artifact: CompiledArtifact) -> None:
    """The warnings the artifact's compile gave (stage "warnings")."""
    kept = artifact.stages.get("warnings")
    warn_program((message, SourceLocation(filename, line, col), notes)
                 for message, filename, line, col, notes in (json.loads(kept) if kept else ()))


# TileLang's `compile_flags` are nvcc flags for the CUDA C++ it generates.
# tilelang-mlir emits PTX itself: the flags that only steer C++ compilation
# (optimization level, warnings, macros, language extensions, line info,
# ptxas verbosity and heuristics) have nothing to act on, and fast math is
# what GPU math always is here (tl.enable_fast_math); any other flag is
# refused.
_CXX_ONLY_FLAGS = re.compile(
    r"-O[0-3]|-W.*|-U\w+|-D\w+(=.*)?|-std=.*|--expt-relaxed-constexpr|--expt-extended-lambda|"
    r"-lineinfo|--?use_fast_math|--ptxas-options=.*|-Xptxas(=.*)?")


def check_compile_flags(flags) -> None:
    """Refuses TileLang compile flags that would mean something here."""
    if flags is None:
        return
    if isinstance(flags, str):
        flags = flags.split()
    flags = list(flags)
    for i, flag in enumerate(flags):
        # `-include <header>` (TileLang's own templates: TileOPs' gated
        # DeltaNet) steers C++ compilation: what a header defines could be
        # reached only through T.call_extern / T.import_source, which are
        # refused at the program's line.
        if flag == "-include" and i + 1 < len(flags) and isinstance(flags[i + 1], str):
            continue
        if i and flags[i - 1] == "-include":
            continue
        if not isinstance(flag, str) or not _CXX_ONLY_FLAGS.fullmatch(flag):
            raise TileLangError(f"not supported by tilelang-mlir: compile flag {flag!r} "
                                "(tilelang-mlir emits PTX itself; the nvcc flags it accepts "
                                "are those that only steer C++ compilation: -O, -W, -U, -D, "
                                "-std=, --expt-*, -lineinfo, --use_fast_math, --ptxas-options=)")


def compile(func: PrimFunc, out_idx: Union[int, Sequence[int], None] = None,  # noqa: A001
            target: Union[str, Target] = "auto", pass_configs: Optional[dict] = None,
            execution_backend: Optional[str] = None, compile_flags=None) -> Kernel:
    """Compiles a tile program for `target` ("auto", "cpu", "cuda",
    "cuda:sm_90a", "rocm:gfx942") and returns a callable kernel.
    `compile_flags`: TileLang's nvcc flags, accepted where they only steer
    C++ compilation (check_compile_flags)."""
    check_compile_flags(compile_flags)
    p = plan(func, out_idx, target, pass_configs)
    with _LOCK:
        kernel = _remembered(p.key) if p.use_cache else None
    if kernel is None:
        kernel = kernel_from_artifact(func, build_artifact(func, p), out_idx, target,
                                      pass_configs, p)
    else:
        _warn_again(kernel.artifact)
    _report(kernel, p.pass_configs)
    return kernel


def _report(kernel: Kernel, pass_configs: dict) -> None:
    """What the report configs ask for: the kernel's code written into
    tl.kernel_source_dir, its tile IR printed (tl.print_tile_ir)."""
    folder = pass_configs.get("tl.kernel_source_dir")
    if folder:
        suffix = {"cuda": "ptx", "cpu": "ll", "rocm": "s"}.get(kernel.device, "txt")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{kernel.name}.{suffix}"), "w") as f:
            f.write(kernel.get_source())
    if pass_configs.get("tl.print_tile_ir"):
        print(kernel.mlir("tile") if kernel.stages else kernel.get_source())


def compile_artifact(func: PrimFunc, out_idx=None, target: Union[str, Target] = "auto",
                     pass_configs: Optional[dict] = None) -> CompiledArtifact:
    """What `compile` builds a kernel from, without building it: picklable,
    for compiling in another process (the autotuner's workers). The disk
    cache is used and filled as by `compile`."""
    return build_artifact(func, plan(func, out_idx, target, pass_configs))


def kernel_from_artifact(func: PrimFunc, artifact: CompiledArtifact, out_idx=None,
                         target: Union[str, Target] = "auto",
                         pass_configs: Optional[dict] = None,
                         p: Optional[CompilePlan] = None) -> Kernel:
    """The kernel `compile(func, ...)` would return, built from what
    `compile_artifact` (called with the same arguments, perhaps in another
    process) returned; it enters the in-memory cache."""
    p = p or plan(func, out_idx, target, pass_configs)
    with _LOCK:
        if p.use_cache and (kernel := _remembered(p.key)) is not None:
            return kernel
    artifact = artifact.with_signature(func.name, func.params, p.out_idx)
    backend = backend_for(p.target)
    kernel = backend.sequence(artifact) if artifact.parts else backend.kernel(artifact)
    if p.use_cache:
        with _LOCK:
            kernel = _remember(p.key, kernel)
    return kernel



def cached_artifact(func, p: CompilePlan) -> Optional[CompiledArtifact]:
    """The artifact of `func` under plan `p` from the disk cache; None when
    it is not there (a bad entry is dropped: see `_load_from_disk`)."""
    parts = _load_from_disk(p.key, p.target, p.compiler, func)
    if parts is None:
        return None
    return CompiledArtifact.from_cache_parts(func.name, func.params, p.out_idx, p.target,
                                             *parts)


def _load_from_disk(key: str, tgt: Target, compiler: str, func: PrimFunc):
    """The parts of the kernel of `key` from the disk cache; None when it is
    not there. An entry that fails its checks (runtime/cache.py) is deleted
    with a warning, so that the kernel is compiled again; offline, where
    nothing can compile it, that is an error naming the file."""
    d = _cache_dir()
    if d is None:
        return None
    path = os.path.join(d, key + ".json")
    try:
        return _entries.read(path, key, str(tgt), compiler, func.params, func.name)
    except _entries.BadEntry as e:
        if offline():
            raise TileLangError(
                f"the kernel cache entry {path} of kernel {func.name!r} for {tgt} {e}, and no "
                "compiler is available here to compile it again: compile the kernel into "
                "this cache on a machine with the compiler (or delete the file)") from None
        # The warning points at the caller of tl.compile.
        _entries.discard(path, str(e), e.stat, "kernel cache entry", "compiling the kernel again",
                         stacklevel=4)
        return None


def _save_to_disk(key: str, tgt: Target, compiler: str, artifact: CompiledArtifact) -> None:
    d = _cache_dir()
    if d is None or artifact.parts:
        # Programs of several kernels are kept in memory only: the cache's
        # entries hold one launch.
        return
    entry = _entries.encode(key, str(tgt), compiler, artifact)
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "COMPILER_ID"), "w") as f:
            f.write(compiler)
        _entries.write(os.path.join(d, key + ".json"), entry)
    except OSError:
        pass  # a read-only home is not an error


# ---------------------------------------------------------------------------
# @tl.jit
# ---------------------------------------------------------------------------


class JITFunction(JitBase):
    """`@tl.jit` on a factory (returns a prim_func when called with its
    parameters: compiled then, cached by the program), on a prim_func
    (compiled on first call and run), or on an eager-style program
    (frontend/eager.py: `f.compile(M=..., block_M=...)` gives the kernel of
    those values, `f(a, b, ...)` compiles once per new set of sizes and
    compile-time values, then runs and returns the T.empty outputs).

    A call by position is first looked up in the cache of calls this
    function has seen (the base class, runtime/launcher.py): the same plain
    compile-time values (by type and value) and closure objects, and
    tensors the kernel's checks accept, select the same kernel, so such a
    call runs it (or, for a factory, returns it, as TileLang's cache does)
    without binding, fingerprinting or running the factory again.

    The style is read from the function's source on first use, as TileLang
    does: an inner @T.prim_func makes a factory; annotation statements of
    parameters or T.const/T.empty make an eager program."""

    def __init__(self, fn, out_idx, target, pass_configs):
        self.fn = fn
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = pass_configs
        functools.update_wrapper(self, fn.fn if isinstance(fn, PrimFunc) else fn)
        self._eager = None  # an EagerFunction once the style is known to be eager
        self._style: Optional[str] = "prim_func" if isinstance(fn, PrimFunc) else None
        # Eager: binding key -> (kernel, input names, returns a tuple), most
        # recently used last; bounded like the compile cache.
        self._kernels: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._lock = threading.Lock()

    @property
    def style(self) -> str:
        """"prim_func", "factory" (classic) or "eager"."""
        if self._style is None:
            from ..frontend.eager import EagerFunction, is_eager_style

            if is_eager_style(self.fn):
                if self.out_idx is not None:
                    raise ValueError(
                        f"@tl.jit(out_idx=...) on {self.fn.__name__!r}: an eager-style program "
                        "declares its outputs with T.empty and returns them; out_idx is for "
                        "factories that return a @T.prim_func")
                self._eager = EagerFunction(self.fn)
                self._style = "eager"
            else:
                self._style = "factory"
        return self._style

    def compile(self, *args, **kwargs) -> Kernel:
        style = self.style
        if style == "prim_func":
            if args or kwargs:
                raise TypeError("a jitted prim_func takes its arguments when called")
            return compile(self.fn, self.out_idx, self.target, self.pass_configs)
        if style == "eager":
            return self._eager_kernel(self._eager.bind(args, kwargs, call=False))[0]
        program = self.fn(*args, **kwargs)
        if not isinstance(program, PrimFunc):
            raise TypeError(f"@tl.jit factory {self.fn.__name__!r} must return a "
                            f"@T.prim_func, got {type(program).__name__}")
        return compile(program, self.out_idx, self.target, self.pass_configs)

    def _eager_kernel(self, binding):
        """The kernel of an eager binding and the names of its inputs, from
        this function's cache or compiled now."""
        with self._lock:
            found = self._kernels.get(binding.key)
            if found is not None:
                self._kernels.move_to_end(binding.key)
        if found is not None:
            return found
        program = self._eager.program(binding)
        kernel = compile(program, None, self.target, self.pass_configs)
        names = [p.name for i, p in enumerate(kernel.params)
                 if is_input(i, p, kernel.out_idx)]
        found = (kernel, names, program.returns_tuple)
        with self._lock:
            found = self._kernels.setdefault(binding.key, found)
            while len(self._kernels) > _MEMORY_CACHE_SIZE:
                self._kernels.popitem(last=False)
        return found

    # `f(...)` is the base class's call (runtime/launcher.py): a call seen
    # before (positional arguments, the same compile-time values, tensors
    # that pass the kernel's checks, which then select the same kernel) goes
    # straight to its kernel; any other comes here.
    def _call_full(self, *args, **kwargs):
        style = self.style
        if style == "prim_func":
            kernel = self.compile()
            result = kernel(*args, **kwargs)
            if not kwargs:
                self._remember(kernel, len(args), (), range(len(args)), self.fn.fn)
            return result
        if style == "eager":
            binding = self._eager.bind(args, kwargs, call=True)
            kernel, names, as_tuple = self._eager_kernel(binding)
            result = kernel(*[binding.runtime[n] for n in names])
            if as_tuple and not isinstance(result, (tuple, list)):
                result = (result,)
            if not kwargs:
                self._remember_eager(args, kernel, names, as_tuple)
            return result
        kernel = self.compile(*args, **kwargs)
        if not kwargs:
            self._remember(kernel, len(args), range(len(args)), (), self.fn, args=args,
                           returns_kernel=True)
        return kernel

    def _remember(self, kernel, nargs, const_pos, runtime_pos, fn, args=(), as_tuple=False,
                  returns_kernel=False) -> None:
        """Enters a call into the call cache when its compile-time arguments
        and the closure values of `fn` are plain values (compared by type and
        value; the cells must keep holding the same objects)."""
        consts = [args[i] for i in const_pos]
        cells = (fn.__closure__ or ()) if fn is not None else ()
        try:
            contents = [c.cell_contents for c in cells]
        except ValueError:  # an empty cell
            return
        if not all(_plain(v) for v in consts + contents):
            return
        self._calls_add(kernel, nargs, tuple(const_pos), tuple(consts), tuple(runtime_pos),
                        tuple(cells), as_tuple, returns_kernel)

    def _remember_eager(self, args, kernel, names, as_tuple) -> None:
        """An eager call into the call cache: the runtime arguments by
        position, the other positional arguments compile-time values (the
        sizes read off tensors are static in the kernel, whose checks then
        see to them)."""
        positions = self._eager.positions
        if any(positions.get(n, len(args)) >= len(args) for n in names):
            return
        const_pos = [positions[n] for n in positions
                     if positions[n] < len(args) and n not in self._eager.annotated]
        self._remember(kernel, len(args), const_pos, [positions[n] for n in names], None,
                       args=args, as_tuple=as_tuple)


def _plain(value) -> bool:
    """A value the call cache compares (by type and equality) as the
    compile cache's key would."""
    return type(value) in (int, float, bool, str, type(None), DType)


def jit(func=None, *, out_idx=None, target="auto", pass_configs=None, compile_flags=None):
    """Decorator: `@tl.jit(out_idx=[2])` on a kernel factory or a prim_func,
    `@tl.jit` on an eager-style program (see `JITFunction`). `compile_flags`:
    as in `compile`."""
    check_compile_flags(compile_flags)

    def wrap(fn):
        return JITFunction(fn, out_idx, target, pass_configs)

    if func is not None:
        return wrap(func)
    return wrap
