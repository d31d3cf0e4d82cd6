"""`@tl.autotune`: pick the fastest correct configuration of a kernel factory.

    @tl.autotune(configs=[dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256),
                          dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)],
                 warmup=5, rep=20, ref_prog=lambda A, B: A @ B, rtol=1e-2, atol=1e-2)
    @tl.jit(out_idx=[2])
    def matmul(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128):
        ...
        return main

    kernel = matmul(4096, 4096, 4096)   # tunes (or finds the winner on disk): the best kernel
    kernel.autotune_result              # best config and time, every timing, what was skipped

Each call with new arguments (a new shape):

1. builds every config's program here (the factory called with the call's
   arguments plus the config) and emits its tile IR, then compiles them in
   worker processes started by forkserver (spawn where there is none, never
   fork), at most `max_workers` at a time (default: one per CPU, at most one
   per config); the workers send back what the kernel is built from (and
   fill the disk kernel cache), this process builds the kernels. As with
   any worker started that way, they import the main module: a script that
   tunes when it is run needs `if __name__ == "__main__":`;
2. checks each against `ref_prog` on the same random inputs
   (`kernel.get_profiler().random_inputs()`, or `supply_prog`), with
   rtol/atol (or `manual_check_prog`);
3. times the correct ones one after the other here with the profiler's
   `do_bench` (on CUDA: device time of CUDA-graph replays, L2 flushed),
   the median of `rep` calls after `warmup`;
4. keeps the fastest, and writes it to `<kernel cache>/autotune/<key>.json`
   (with a sha256 of its contents; a file that fails its checks is deleted
   with a KernelCacheWarning and tuning runs again).

A config that does not compile, fails the check or fails to run is skipped;
its reason is logged ("tilelang_mlir.autotuner", INFO) and kept in the
result. Only when every config fails is that an error (`AutotuneError`,
listing every reason). The cache key covers the factory's source and
closure, the call's other arguments, the configs, out_idx and pass configs,
the target (with the GPU's name on CUDA) and the compiler build; a later call
with the same key, in this process or another, compiles (or loads) the
winner only. Why a kernel did not compile is kept too
(`<kernel cache>/autotune/failed/`), so that a machine without the compiler,
tuning from kernels compiled elsewhere, still says why. A progress bar (tqdm) shows the best time so far; without tqdm,
or with TILELANG_MLIR_AUTOTUNE_QUIET=1, progress goes to the log only.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from .base.signature import is_input
from .frontend.prim_func import PrimFunc, _closure_values, _fingerprint

logger = logging.getLogger("tilelang_mlir.autotuner")

# Version 2: entries carry a sha256 of their contents and are schema-checked.
CACHE_VERSION = 2

__all__ = ["autotune", "AutoTuner", "AutotuneResult", "AutotuneError"]


class AutotuneError(RuntimeError):
    """No configuration compiled, passed the check and ran. `skipped` holds
    every config's reason."""

    def __init__(self, message: str, skipped: Sequence[dict] = ()):
        self.skipped = list(skipped)
        super().__init__(message)


@dataclass
class AutotuneResult:
    """What `kernel.autotune_result` holds. Times are in milliseconds.

    `timings`: one entry per config that was timed, in config order
    ({"index", "config", "latency", "check"}: `index` in the configs list,
    `check` what `manual_check_prog` returned, if anything); `skipped`: one
    per config that was not ({"index", "config", "stage": "compile" |
    "check" | "run", "reason"});
    `worker_pids`: the processes that compiled (empty on a cache hit or when
    compiling here). On a cache hit `timings` and `skipped` are those of
    the run that tuned.
    """

    best_config: Dict[str, Any]
    best_latency: float
    timings: List[dict]
    skipped: List[dict]
    cache_hit: bool
    key: str
    target: str
    device_name: Optional[str] = None
    cache_path: Optional[str] = None
    worker_pids: List[int] = field(default_factory=list)
    compile_seconds: float = 0.0
    tune_seconds: float = 0.0

    # TileLang's names.
    @property
    def config(self) -> Dict[str, Any]:
        return self.best_config

    @property
    def latency(self) -> float:
        return self.best_latency

    def summary(self) -> str:
        """One line per config: its time or why it was skipped."""
        rows = [(t["index"], t["config"], f"{t['latency']:.4f} ms") for t in self.timings]
        rows += [(s["index"], s["config"], f"skipped ({s['stage']}): {s['reason']}")
                 for s in self.skipped]
        lines = [f"{'*' if c is self.best_config else ' '} {_config_text(c)}: {what}"
                 for _, c, what in sorted(rows, key=lambda r: r[0])]
        hit = " (cache hit)" if self.cache_hit else ""
        return (f"best {_config_text(self.best_config)}: {self.best_latency:.4f} ms{hit}\n"
                + "\n".join(lines))


# ---------------------------------------------------------------------------
# Fingerprints and the cache
# ---------------------------------------------------------------------------


def _value_text(value) -> str:
    """A stable text for an argument or config value (the compiler's
    closure fingerprint; objects it only names by type, such as torch
    dtypes, by their repr when that says more than an address)."""
    text = _fingerprint(value)
    if text == type(value).__qualname__:
        r = repr(value)
        if " at 0x" not in r:
            return r
    return text


def _argument_text(value) -> str:
    """`_value_text`, but a tensor (an eager program's argument) stands for
    its shape and dtype: the kernel depends on nothing else of it."""
    from .frontend.eager import is_tensor

    if is_tensor(value):
        return f"tensor({tuple(value.shape)},{value.dtype})"
    return _value_text(value)


def _config_text(config: dict) -> str:
    return ", ".join(f"{k}={_value_text(v) if not isinstance(v, str) else v}"
                     for k, v in config.items())


def _jsonable(value):
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return _value_text(value)


def _factory_text(fn: Callable) -> str:
    closure = ",".join(f"{k}={_value_text(v)}" for k, v in sorted(_closure_values(fn).items()))
    return f"{_fingerprint(fn)}|{closure}"


def _device_name(target) -> Optional[str]:
    if target.kind != "cuda":
        return None
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 (no torch, no driver: compile-only)
        pass
    return None


def _cache_root() -> Optional[str]:
    from .compiler.compile import cache_dir

    d = cache_dir()
    return os.path.join(d, "autotune") if d else None


_MEMORY: Dict[str, dict] = {}  # key -> the entry written to disk
_MEMORY_LOCK = threading.Lock()


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


# The fields of an entry and a check of each value (see AutoTuner._entry).
_ENTRY_FIELDS = {
    "version": lambda v: v == CACHE_VERSION and _is_int(v),
    "key": lambda v: isinstance(v, str),
    "factory": lambda v: isinstance(v, str),
    "target": lambda v: isinstance(v, str),
    "device": lambda v: v is None or isinstance(v, str),
    "best": lambda v: _is_int(v) and v >= 0,
    "best_config": lambda v: isinstance(v, dict),
    "best_latency": lambda v: _is_number(v) and v >= 0,
    "timings": lambda v: isinstance(v, list) and all(
        isinstance(t, dict) and set(t) == {"index", "config", "latency", "check"}
        and _is_int(t["index"]) and t["index"] >= 0 and isinstance(t["config"], dict)
        and _is_number(t["latency"]) for t in v),
    "skipped": lambda v: isinstance(v, list) and all(
        isinstance(t, dict) and set(t) == {"index", "config", "stage", "reason"}
        and _is_int(t["index"]) and t["index"] >= 0 and isinstance(t["config"], dict)
        and t["stage"] in ("compile", "check", "run") and isinstance(t["reason"], str)
        for t in v),
    "worker_pids": lambda v: isinstance(v, list) and all(_is_int(p) for p in v),
    "compile_seconds": _is_number,
    "tuned": lambda v: isinstance(v, str),
    "sha256": lambda v: isinstance(v, str),
}


def _check_entry(entry, key: str) -> None:
    """Raises BadEntry unless `entry` (read from JSON) is a winner record of
    this version for `key` whose sha256 matches its contents."""
    from .runtime.cache import BadEntry, digest

    if not isinstance(entry, dict):
        raise BadEntry(f"is a JSON {type(entry).__name__}, not an autotune record")
    if entry.get("version") != CACHE_VERSION or not _is_int(entry.get("version")):
        raise BadEntry(f"has version {entry.get('version')!r}; this tilelang_mlir reads "
                       f"version {CACHE_VERSION}")
    if set(entry) != set(_ENTRY_FIELDS):
        fields = sorted(set(entry) ^ set(_ENTRY_FIELDS))
        raise BadEntry(f"does not have the fields of an autotune record ({', '.join(fields)})")
    if entry["key"] != key:
        raise BadEntry(f"holds the winner of key {entry['key']!r}, not {key!r}")
    wrong = [k for k, check in _ENTRY_FIELDS.items() if not check(entry[k])]
    if wrong:
        raise BadEntry(f"has malformed field(s) {', '.join(wrong)}")
    if entry["sha256"] != digest({k: v for k, v in entry.items() if k != "sha256"}):
        raise BadEntry("does not match its sha256 (it was changed)")


def _entry_path(key: str) -> Optional[str]:
    root = _cache_root()
    return os.path.join(root, key + ".json") if root else None


def _load_entry(key: str) -> Optional[dict]:
    """The winner record of `key`, from memory or disk; None when there is
    none. One that fails its checks is discarded with a warning (tuning
    then runs again)."""
    from .runtime.cache import BadEntry, read_json

    with _MEMORY_LOCK:
        if key in _MEMORY:
            return _MEMORY[key]
    path = _entry_path(key)
    if path is None:
        return None
    st = None
    try:
        entry, st = read_json(path)
        if st is None:
            return None
        _check_entry(entry, key)
    except BadEntry as e:
        _discard_entry(key, str(e), e.stat or st)
        return None
    with _MEMORY_LOCK:
        _MEMORY[key] = entry
    return entry


def _discard_entry(key: str, reason: str, stat=None) -> None:
    """Forgets the winner record of `key` and deletes its file, warning."""
    from .runtime.cache import discard

    with _MEMORY_LOCK:
        _MEMORY.pop(key, None)
    path = _entry_path(key)
    if path is not None:
        if stat is None:
            try:
                stat = os.stat(path)
            except OSError:
                return
        discard(path, reason, stat, "autotune cache entry", "tuning again", stacklevel=3)


def _save_entry(key: str, entry: dict) -> Optional[str]:
    with _MEMORY_LOCK:
        _MEMORY[key] = entry
    root = _cache_root()
    if root is None:
        return None
    path = os.path.join(root, key + ".json")
    try:
        os.makedirs(root, exist_ok=True)
        tmp = os.path.join(root, f".{key}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            json.dump(entry, f, indent=1)
        os.replace(tmp, path)
    except OSError:
        return None  # a read-only cache is not an error
    return path


def _forget_entry(key: str) -> None:
    with _MEMORY_LOCK:
        _MEMORY.pop(key, None)
    root = _cache_root()
    if root is not None:
        try:
            os.remove(os.path.join(root, key + ".json"))
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Errors as one line
# ---------------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    """One line saying why: the first line of a tile program's error message
    (without the file:line prefix), else `Type: message`."""
    from .base.errors import TileLangError

    if isinstance(exc, TileLangError):
        text = exc.message
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    line = (text.strip().splitlines() or [type(exc).__name__])[0]
    return line if len(line) <= 400 else line[:397] + "..."


# ---------------------------------------------------------------------------
# Compiling candidates
# ---------------------------------------------------------------------------


@dataclass
class _Candidate:
    index: int
    config: dict            # as recorded (with the values the caller fixed)
    call_kwargs: dict       # what is passed to the factory besides the call's arguments
    kernel: Any = None
    pid: Optional[int] = None
    compile_seconds: float = 0.0


def _compile_here(factory, args, kwargs, out_idx, target, pass_configs) -> dict:
    """Builds and compiles one candidate in this process: {"kernel"}, else
    {"reason", "kernel_key"}; with "pid" and "seconds"."""
    from .compiler.compile import compile as tl_compile
    from .compiler.compile import plan

    t0 = time.perf_counter()
    program = None
    try:
        program = _make_program(factory, args, kwargs)
        out = {"kernel": tl_compile(program, out_idx, target, pass_configs)}
    except Exception as e:  # noqa: BLE001 (any failure skips the config)
        out = {"reason": _reason(e)}
        if program is not None:
            try:
                out["kernel_key"] = plan(program, out_idx, target, pass_configs).key
            except Exception:  # noqa: BLE001
                pass
    out.update(pid=os.getpid(), seconds=time.perf_counter() - t0)
    return out


# ---------------------------------------------------------------------------
# Compile workers
#
# Workers are started by "forkserver" (or "spawn"), never forked from this
# process: a fork copies the locks other threads hold at that moment (torch,
# tqdm, logging, the MLIR thread pool), and a worker forked while one was
# held waited for it forever (Python 3.12 warns that fork() of a
# multi-threaded process may deadlock). A worker is a fresh interpreter, so
# it cannot call the factory, which may be a closure or live in a script;
# instead this process builds each program and emits its tile IR (the
# frontend, fast), and the worker runs the passes and ptxas on that text
# (the slow part), fills the disk cache and sends back the artifact.
# ---------------------------------------------------------------------------


@dataclass
class _Emitted:
    """What a worker compiles: a program's tile IR with the user's source
    locations (errors in the passes still point at the user's lines), what
    `compile` decided for it here (key, target, configs), and this
    process's environment (the forkserver's children inherit the server's,
    from when it started: the cache folder, ptxas, ... may have changed)."""

    name: str
    params: list
    text: str
    plan: Any  # compiler.compile.CompilePlan
    env: Dict[str, str]

    @property
    def key(self) -> str:
        return self.plan.key

    def emit(self):
        """The module (as PrimFunc.emit: in the current MLIR context)."""
        from . import ir

        return ir.Module.parse(self.text)


def _emit_for_worker(factory, args, kwargs, out_idx, target, pass_configs) -> dict:
    """In this process: builds the program of a candidate, then returns
    {"artifact"} when the disk cache has its kernel, else {"task": _Emitted};
    {"reason", "kernel_key"} when it cannot be built or emitted."""
    from . import ir
    from .compiler.compile import cached_artifact, emit_tile_ir, plan

    program, key = None, None
    try:
        program = _make_program(factory, args, kwargs)
        p = plan(program, out_idx, target, pass_configs)
        key = p.key
        artifact = cached_artifact(program, p) if p.use_cache else None
        if artifact is not None:
            return {"artifact": artifact}
        return {"task": _Emitted(program.name, list(program.params), emit_tile_ir(program), p,
                                 dict(os.environ))}
    except Exception as e:  # noqa: BLE001 (any failure skips the config)
        return {"reason": _reason(e), "kernel_key": key}


def _compile_emitted(task: _Emitted) -> dict:
    """In a worker: lowers an emitted program as `compile_artifact` would
    (the disk cache is used and filled): {"artifact"} or {"reason",
    "kernel_key"}, with "pid" and "seconds"."""
    from .compiler.compile import build_artifact

    t0 = time.perf_counter()
    if dict(os.environ) != task.env:
        os.environ.clear()
        os.environ.update(task.env)
    try:
        out = {"artifact": build_artifact(task, task.plan)}
    except Exception as e:  # noqa: BLE001
        out = {"reason": _reason(e), "kernel_key": task.key}
    out.update(pid=os.getpid(), seconds=time.perf_counter() - t0)
    return out


def _remembered(reason: str, kernel_key: Optional[str]) -> str:
    """Why a kernel did not compile is kept in the cache by the kernel's
    key, so that a machine without the compiler (which loads kernels from
    the cache) says why rather than that the kernel is not in the cache."""
    from .compiler.compile import offline

    root = _cache_root()
    if root is None or not kernel_key:
        return reason
    path = os.path.join(root, "failed", kernel_key + ".txt")
    if offline():
        try:
            with open(path) as f:
                return f"{f.read().strip()} (when compiled)"
        except OSError:
            return reason
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(reason + "\n")
    except OSError:
        pass
    return reason


def _make_program(factory, args, kwargs) -> PrimFunc:
    program = factory(*args, **kwargs)
    if not isinstance(program, PrimFunc):
        name = getattr(factory, "__name__", "factory")
        raise TypeError(f"kernel factory {name!r} must return a @T.prim_func, got "
                        f"{type(program).__name__}")
    return program


def _worker_context():
    """The start method of compile workers: forkserver, else spawn (both
    start from a fresh interpreter; see above)."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _can_start_workers() -> bool:
    return not multiprocessing.current_process().daemon  # daemons may have no children


def _run_pool(tasks: Dict[int, _Emitted], workers: int,
              on_done: Callable[[int, dict], None]) -> List[int]:
    """Runs `_compile_emitted` on `tasks` (by candidate index) in a pool of
    `workers` processes; returns the indices whose worker died (the pool
    broke under them)."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    broken = []
    with ProcessPoolExecutor(workers, mp_context=_worker_context()) as pool:
        # Looked up now, not bound at import: a test replaces it.
        futures = {pool.submit(_compile_emitted, task): i for i, task in tasks.items()}
        for future in as_completed(futures):
            i = futures[future]
            try:
                result = future.result()
            except BrokenProcessPool:
                broken.append(i)
                continue
            on_done(i, result)
    return sorted(broken)


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------


def _quiet() -> bool:
    return os.environ.get("TILELANG_MLIR_AUTOTUNE_QUIET", "") not in ("", "0")


class _Progress:
    """A tqdm bar where tqdm is installed and not silenced; every step is
    also a log line (INFO)."""

    def __init__(self, total: int, desc: str):
        self.desc = desc
        self.total = total
        self.done = 0
        self.bar = None  # made at the first step

    def _make_bar(self):
        if _quiet():
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        return tqdm(total=self.total, desc=self.desc, unit="config", leave=True,
                    dynamic_ncols=True)

    def step(self, line: str, postfix: Optional[str] = None) -> None:
        if self.done == 0:
            self.bar = self._make_bar()
        self.done += 1
        logger.info("%s [%d/%d] %s", self.desc, self.done, self.total, line)
        if self.bar is not None:
            if postfix is not None:
                self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------------
# The decorator
# ---------------------------------------------------------------------------


def _check_count(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive" if minimum > 0 else "a non-negative"
        raise ValueError(f"{name} must be {kind} int, got {value!r}")


# A config key that is not a factory argument: the config's own pass configs.
CONFIG_PASS_CONFIGS = "pass_configs"


class AutoTuner:
    """`@tl.autotune(...)` on a kernel factory (or a `@tl.jit` factory):
    calling it tunes, or finds the winner in the cache, and returns the
    best kernel with `kernel.autotune_result` set."""

    def __init__(self, fn, configs, *, warmup, rep, ref_prog, supply_prog, rtol, atol,
                 manual_check_prog, skip_check, max_workers, cache, out_idx, target,
                 pass_configs):
        from .compiler.compile import JITFunction

        if isinstance(fn, AutoTuner):
            raise TypeError("@tl.autotune is applied twice")
        if isinstance(fn, PrimFunc) or (isinstance(fn, JITFunction) and isinstance(fn.fn, PrimFunc)):
            raise TypeError("@tl.autotune needs a kernel factory (a function returning a "
                            "@T.prim_func for its arguments), not a prim_func")
        # An eager-style program (frontend/eager.py) is tuned through its
        # factory: each config's program has the call's sizes bound, and a
        # call with its tensors runs the best kernel on them.
        self._eager = None
        if isinstance(fn, JITFunction):
            out_idx = self._merge("out_idx", out_idx, fn.out_idx, None)
            target = self._merge("target", target, fn.target, "auto")
            pass_configs = self._merge("pass_configs", pass_configs, fn.pass_configs, None)
            if fn.style == "eager":
                self._eager = fn._eager
            fn = fn.fn
        if not callable(fn):
            raise TypeError(f"@tl.autotune decorates a kernel factory, got {type(fn).__name__}")
        if self._eager is None:
            from .frontend.eager import EagerFunction, is_eager_style

            if is_eager_style(fn):
                self._eager = EagerFunction(fn)
        self.factory = fn if self._eager is None else self._eager.factory()
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.rtol, self.atol = rtol, atol
        self.manual_check_prog = manual_check_prog
        self.skip_check = skip_check
        self.max_workers = max_workers
        self.cache = cache
        self.out_idx = out_idx
        self.target = "auto" if target is None else target
        self.pass_configs = pass_configs
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None
        functools.update_wrapper(self, fn)

    @staticmethod
    def _merge(name, mine, jits, default):
        if mine is None:
            return jits
        if jits is not None and jits != default and jits != mine:
            raise ValueError(f"@tl.autotune({name}={mine!r}) contradicts "
                             f"@tl.jit({name}={jits!r}); give it once")
        return mine

    def __repr__(self) -> str:
        return f"<tl.autotune of {getattr(self.factory, '__qualname__', self.factory)!r}>"

    # -- the call ---------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        kernel = self.tune(*args, **kwargs)
        runtime = self._eager.runtime_arguments(args, kwargs) if self._eager else None
        if runtime is None:
            return kernel
        # An eager program called with its tensors: run the best kernel.
        return kernel(*[runtime[p.name] for i, p in enumerate(kernel.params)
                        if is_input(i, p, kernel.out_idx)])

    def compile(self, *args, **kwargs):
        """The best kernel for these arguments (an eager program's
        `f.compile(M=..., ...)`; for a factory, the same as calling it)."""
        return self.tune(*args, **kwargs)

    def _configs(self, args, kwargs) -> List[dict]:
        configs = (_call_configs(self.configs, args, kwargs) if callable(self.configs)
                   else self.configs)
        configs = list(configs) if configs is not None else []
        if not configs:
            raise ValueError(f"@tl.autotune of {self.factory.__name__!r}: no configs to try")
        for c in configs:
            if not isinstance(c, dict):
                raise TypeError(f"@tl.autotune configs must be dicts of factory arguments, "
                                f"got {type(c).__name__}")
        return configs

    def _split(self, call_kwargs: dict):
        """(the factory's arguments of a config, the pass configs it compiles
        with): a config's "pass_configs" entry (TileLang's per-config pass
        configs) is merged over the decorator's."""
        if CONFIG_PASS_CONFIGS not in call_kwargs or (
                self._signature is not None and CONFIG_PASS_CONFIGS in self._signature.parameters):
            return call_kwargs, self.pass_configs
        extra = call_kwargs[CONFIG_PASS_CONFIGS]
        if not isinstance(extra, dict):
            raise TypeError(f"@tl.autotune config entry 'pass_configs' must be a dict, got "
                            f"{type(extra).__name__}")
        rest = {k: v for k, v in call_kwargs.items() if k != CONFIG_PASS_CONFIGS}
        return rest, {**(self.pass_configs or {}), **{str(getattr(k, "value", k)): v
                                                      for k, v in extra.items()}}

    def _program(self, args, kwargs, call_kwargs):
        """(the program of a config, the pass configs it compiles with)."""
        call, pcs = self._split(call_kwargs)
        return _make_program(self.factory, args, {**kwargs, **call}), pcs

    def _bind(self, args, kwargs, config_keys):
        """(names the caller fixed, the non-config arguments by name)."""
        sig = self._signature
        if sig is None:
            fixed = {k: kwargs[k] for k in config_keys if k in kwargs}
            return fixed, {"args": list(args), **{k: v for k, v in kwargs.items()
                                                 if k not in config_keys}}
        params = sig.parameters
        takes_var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        unknown = [k for k in config_keys if k not in params and not takes_var_kw
                   and k != CONFIG_PASS_CONFIGS]
        if unknown:
            raise TypeError(f"@tl.autotune config key {unknown[0]!r} is not an argument of "
                            f"{self.factory.__name__!r}")
        extras = {}
        if self._eager is not None:
            # An eager program's T.const sizes, given by name.
            extras = {k: v for k, v in kwargs.items() if k not in params}
            kwargs = {k: v for k, v in kwargs.items() if k in params}
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.factory.__name__}(): {e}") from None
        fixed = {k: v for k, v in bound.arguments.items() if k in config_keys}
        for p in params.values():
            if p.kind == p.VAR_KEYWORD and p.name in bound.arguments:
                fixed.update({k: v for k, v in bound.arguments[p.name].items()
                              if k in config_keys})
        bound.apply_defaults()
        rest = {}
        for name, value in bound.arguments.items():
            if name in config_keys:
                continue
            if params[name].kind == params[name].VAR_KEYWORD:
                value = {k: v for k, v in value.items() if k not in config_keys}
            rest[name] = value
        rest.update(extras)
        return fixed, rest

    def _candidates(self, configs: List[dict], fixed: dict) -> List[_Candidate]:
        out, seen = [], set()
        for c in configs:
            config = {k: fixed.get(k, v) for k, v in c.items()}
            text = _value_text(config)
            if text in seen:
                continue
            seen.add(text)
            out.append(_Candidate(len(out), config,
                                  {k: v for k, v in config.items() if k not in fixed}))
        return out

    def _key(self, rest, candidates, target, device) -> str:
        from .compiler.compile import compiler_id

        parts = {
            "version": CACHE_VERSION,
            "factory": _factory_text(self.factory),
            "arguments": {k: _argument_text(v) for k, v in rest.items()},
            "configs": [_value_text(c.config) for c in candidates],
            "out_idx": _value_text(self.out_idx),
            "pass_configs": _value_text(self.pass_configs or {}),
            "target": str(target),
            "device": device,
            "compiler": compiler_id(),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]

    def tune(self, *args, **kwargs):
        """Tunes for these arguments (or finds the result in the cache) and
        returns the best kernel, with `autotune_result` set."""
        from .base.target import parse_target

        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # A compile worker importing the main module of the process that
            # started it: the script tunes outside `if __name__ == "__main__":`.
            raise RuntimeError(
                f"@tl.autotune of {self.factory.__name__!r} was called while a worker process "
                "imported the main module: compile workers start fresh interpreters that "
                "import it, so a script must tune under `if __name__ == \"__main__\":`")
        configs = self._configs(args, kwargs)
        config_keys = {k for c in configs for k in c}
        fixed, rest = self._bind(args, kwargs, config_keys)
        candidates = self._candidates(configs, fixed)
        target = parse_target(self.target)
        if config_keys - {CONFIG_PASS_CONFIGS} <= set(fixed):
            # The caller gave every tuned argument: nothing is left to tune
            # (TileLang's meaning); the kernel is compiled as given.
            from .compiler.compile import compile as tl_compile

            program, pcs = self._program(args, kwargs, candidates[0].call_kwargs)
            return tl_compile(program, self.out_idx, target, pcs)
        device = _device_name(target)
        key = self._key(rest, candidates, target, device)
        name = self.factory.__name__

        if self.cache:
            hit = self._from_cache(key, candidates, args, kwargs, target, device)
            if hit is not None:
                return hit
        t0 = time.perf_counter()
        result, best = self._tune(name, key, candidates, args, kwargs, target, device)
        result.tune_seconds = time.perf_counter() - t0
        if self.cache:
            result.cache_path = _save_entry(key, self._entry(key, result, best))
        logger.info("autotune %s: best %s, %.4f ms (%d timed, %d skipped, %.1f s)", name,
                    _config_text(result.best_config), result.best_latency, len(result.timings),
                    len(result.skipped), result.tune_seconds)
        return _with_result(best.kernel, result)

    # -- the cache --------------------------------------------------------------------
    def _entry(self, key, result: AutotuneResult, best: _Candidate) -> dict:
        from .runtime.cache import digest

        entry = {
            "version": CACHE_VERSION, "key": key,
            "factory": f"{getattr(self.factory, '__module__', '?')}."
                       f"{getattr(self.factory, '__qualname__', '?')}",
            "target": result.target, "device": result.device_name,
            "best": best.index, "best_config": _jsonable(result.best_config),
            "best_latency": result.best_latency,
            "timings": [{"index": t["index"], "config": _jsonable(t["config"]),
                         "latency": t["latency"], "check": _jsonable(t.get("check"))}
                        for t in result.timings],
            "skipped": [{"index": s["index"], "config": _jsonable(s["config"]),
                         "stage": s["stage"], "reason": s["reason"]} for s in result.skipped],
            "worker_pids": result.worker_pids,
            "compile_seconds": result.compile_seconds,
            "tuned": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        entry["sha256"] = digest(entry)
        return entry

    def _from_cache(self, key, candidates, args, kwargs, target, device):
        from .compiler.compile import compile as tl_compile

        entry = _load_entry(key)
        if entry is None:
            return None
        # The key covers the configs: an entry whose configs are not this
        # call's is not what its name says.
        rows = [entry["best"]] + [t["index"] for t in entry["timings"] + entry["skipped"]]
        if max(rows) >= len(candidates):
            _discard_entry(key, f"names config {max(rows)} of {len(candidates)}")
            return None
        best = candidates[entry["best"]]
        mismatch = [t["index"] for t in entry["timings"] + entry["skipped"]
                    if _jsonable(candidates[t["index"]].config) != t["config"]]
        if _jsonable(best.config) != entry["best_config"] or mismatch:
            _discard_entry(key, "records configs other than this call's")
            return None
        timings = [{"index": t["index"], "config": candidates[t["index"]].config,
                    "latency": t["latency"], "check": t["check"]} for t in entry["timings"]]
        skipped = [{"index": s["index"], "config": candidates[s["index"]].config,
                    "stage": s["stage"], "reason": s["reason"]} for s in entry["skipped"]]
        try:
            program, pcs = self._program(args, kwargs, best.call_kwargs)
            kernel = tl_compile(program, self.out_idx, target, pcs)
        except Exception as e:  # noqa: BLE001 (the winner no longer compiles: tune again)
            logger.warning("autotune %s: the cached winner %s does not compile (%s); tuning again",
                           self.factory.__name__, _config_text(best.config), _reason(e))
            _forget_entry(key)
            return None
        root = _cache_root()
        result = AutotuneResult(best.config, entry["best_latency"], timings, skipped, True, key,
                                str(target), device,
                                os.path.join(root, key + ".json") if root else None)
        logger.info("autotune %s: cache hit, best %s, %.4f ms (tuned %s)", self.factory.__name__,
                    _config_text(best.config), result.best_latency, entry.get("tuned", "?"))
        return _with_result(kernel, result)

    # -- tuning -----------------------------------------------------------------------
    def _workers(self, n: int) -> int:
        if self.max_workers is not None:
            return min(self.max_workers, n)
        return max(1, min(os.cpu_count() or 1, n))

    def _compile_all(self, name, candidates, args, kwargs, target, skipped) -> List[int]:
        """Compiles every candidate (in worker processes where there are
        several and a compiler); sets `kernel` on those that compiled and
        appends the others to `skipped`. Returns the worker PIDs."""
        from .compiler.compile import kernel_from_artifact, offline

        workers = self._workers(len(candidates))
        in_pool = (workers > 1 and len(candidates) > 1 and not offline()
                   and _can_start_workers())
        progress = _Progress(len(candidates), f"autotune {name}: compile")
        results: Dict[int, dict] = {}
        here_seconds: Dict[int, float] = {}  # building and emitting a program here

        def done(i, r):
            c = candidates[i]
            if "reason" in r:
                r["reason"] = _remembered(r["reason"], r.get("kernel_key"))
            results[i] = r
            c.pid = r.get("pid")
            c.compile_seconds = r.get("seconds", 0.0) + here_seconds.get(i, 0.0)
            text = _config_text(c.config)
            if "reason" in r:
                progress.step(f"{text}: skipped, does not compile: {r['reason']}")
            else:
                where = f" (pid {c.pid})" if in_pool and c.pid else ""
                progress.step(f"{text}: compiled in {c.compile_seconds:.2f} s{where}")

        split = [self._split(c.call_kwargs) for c in candidates]
        tasks = [(self.factory, args, {**kwargs, **call}, self.out_idx, target, pcs)
                 for call, pcs in split]
        try:
            if in_pool:
                shipped: Dict[int, _Emitted] = {}
                for c in candidates:
                    t0 = time.perf_counter()
                    r = _emit_for_worker(*tasks[c.index])
                    here_seconds[c.index] = time.perf_counter() - t0
                    if "task" in r:
                        shipped[c.index] = r["task"]
                    else:  # it does not build, or its kernel is in the disk cache
                        done(c.index, r)
                try:
                    broken = _run_pool(shipped, min(workers, len(shipped)), done) if shipped else []
                except Exception as e:  # noqa: BLE001 (no worker could start)
                    logger.warning("autotune %s: compile workers could not start (%s); "
                                   "compiling here", name, _reason(e))
                    for i in shipped:
                        if i not in results:
                            done(i, _compile_here(*tasks[i]))
                    broken = []
                for i in broken:  # a worker died: retry each alone to find the culprit
                    if _run_pool({i: shipped[i]}, 1, done):
                        done(i, {"reason": "the compiler process died on this config",
                                 "kernel_key": shipped[i].key})
            else:  # here, one after the other
                for c in candidates:
                    done(c.index, _compile_here(*tasks[c.index]))
            # The kernels are built here (workers send what they are built from).
            for c in candidates:
                r = results[c.index]
                if "reason" in r:
                    skipped.append({"index": c.index, "config": c.config, "stage": "compile",
                                    "reason": r["reason"]})
                    continue
                if "kernel" in r:
                    c.kernel = r["kernel"]
                    continue
                try:
                    program, pcs = self._program(args, kwargs, c.call_kwargs)
                    c.kernel = kernel_from_artifact(program, r["artifact"], self.out_idx,
                                                    target, pcs)
                except Exception as e:  # noqa: BLE001
                    skipped.append({"index": c.index, "config": c.config, "stage": "compile",
                                    "reason": _reason(e)})
                    logger.info("autotune %s: %s: skipped, cannot be loaded: %s", name,
                                _config_text(c.config), _reason(e))
        finally:
            progress.close()
        pids = {r["pid"] for r in results.values() if r.get("pid")} - {os.getpid()}
        return sorted(pids) if in_pool else []

    def _inputs(self, kernel, cache: dict):
        """The inputs for kernels of this signature (made once) and the
        reference's result on them (once, for kernels with outputs)."""
        from .runtime.profiler import _clone

        sig = (tuple(kernel.params), tuple(kernel.out_idx))
        if sig in cache:
            return cache[sig]
        inputs_params = [p for i, p in enumerate(kernel.params)
                         if is_input(i, p, kernel.out_idx)]
        if self.supply_prog is not None:
            inputs = list(self.supply_prog(inputs_params))
        else:
            try:
                inputs = kernel.get_profiler().random_inputs()
            except ValueError as e:
                raise ValueError(f"@tl.autotune of {self.factory.__name__!r}: {e} "
                                 "(give supply_prog=)") from None
        expected = None
        if self._checks() and kernel.out_idx:
            expected = self.ref_prog(*[_clone(x) for x in inputs])
        cache[sig] = (inputs, expected)
        return cache[sig]

    def _checks(self) -> bool:
        return self.ref_prog is not None and not self.skip_check

    def _check(self, kernel, inputs, expected):
        """Raises AssertionError where the kernel differs from the
        reference; returns what manual_check_prog returned (or None)."""
        from .runtime.profiler import _clone

        args = [_clone(x) for x in inputs]
        if self.manual_check_prog is None:
            ref = self.ref_prog if expected is None else (lambda *_: expected)
            kernel.get_profiler().assert_allclose(ref, *args, rtol=self.rtol, atol=self.atol)
            return None
        if kernel.out_idx:
            out, ref = kernel(*args), expected
        else:  # writes into its arguments: compare them with the reference's copies
            copies = [_clone(x) for x in args]
            kernel(*args)
            self.ref_prog(*copies)
            out, ref = args, copies
        if kernel.device == "cuda":
            import torch

            torch.cuda.synchronize()
        note = self.manual_check_prog(out, ref)
        if note is False:
            raise AssertionError("manual_check_prog returned False")
        return None if note is True else note

    def _tune(self, name, key, candidates, args, kwargs, target, device):
        from .runtime.cuda import NoCUDADevice

        skipped: List[dict] = []
        t0 = time.perf_counter()
        pids = self._compile_all(name, candidates, args, kwargs, target, skipped)
        compile_seconds = time.perf_counter() - t0
        compiled = [c for c in candidates if c.kernel is not None]
        if not compiled:
            raise _all_failed(name, target, skipped)
        if compiled[0].kernel.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise NoCUDADevice(f"autotuning {name!r} runs the kernels: it needs a CUDA GPU "
                                   f"({len(compiled)} of {len(candidates)} configs compiled "
                                   "into the kernel cache)")
        inputs_cache: dict = {}
        timings: List[dict] = []
        best = None
        progress = _Progress(len(compiled), f"autotune {name}: bench")
        try:
            for c in compiled:
                kernel = c.kernel
                inputs, expected = self._inputs(kernel, inputs_cache)
                text = _config_text(c.config)
                note = None
                if self._checks():
                    try:
                        note = self._check(kernel, inputs, expected)
                    except NoCUDADevice:
                        raise
                    except AssertionError as e:
                        skipped.append({"index": c.index, "config": c.config, "stage": "check",
                                        "reason": _reason_line(e)})
                        progress.step(f"{text}: skipped, wrong result: {_reason_line(e)}")
                        continue
                    except Exception as e:  # noqa: BLE001 (a failing launch skips the config)
                        skipped.append({"index": c.index, "config": c.config, "stage": "run",
                                        "reason": _reason(e)})
                        progress.step(f"{text}: skipped, failed to run: {_reason(e)}")
                        continue
                try:
                    bench_args = inputs if kernel.out_idx else _clones(inputs)
                    ms = kernel.get_profiler().do_bench(
                        *bench_args, warmup=self.warmup, rep=self.rep,
                        cuda_graph=kernel.device == "cuda")
                except NoCUDADevice:
                    raise
                except Exception as e:  # noqa: BLE001
                    skipped.append({"index": c.index, "config": c.config, "stage": "run",
                                    "reason": _reason(e)})
                    progress.step(f"{text}: skipped, failed to run: {_reason(e)}")
                    continue
                timings.append({"index": c.index, "config": c.config, "latency": ms,
                                "check": note})
                if best is None or ms < best[1]:
                    best = (c, ms)
                progress.step(f"{text}: {ms:.4f} ms", f"best {best[1]:.4f} ms "
                                                      f"{_config_text(best[0].config)}")
        finally:
            progress.close()
        if compiled[0].kernel.device == "cuda":
            import torch

            torch.cuda.synchronize()
        if best is None:
            raise _all_failed(name, target, skipped)
        skipped.sort(key=lambda s: s["index"])
        result = AutotuneResult(best[0].config, best[1], timings, skipped, False, key,
                                str(target), device, None, pids, compile_seconds)
        return result, best[0]


def _call_configs(fn, args, kwargs):
    """Calls a configs callable with the call's arguments: the positional
    ones, and the keyword ones it takes (not those fixing a config value)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params})


def _reason_line(exc: AssertionError) -> str:
    text = (str(exc).strip().splitlines() or ["AssertionError"])[0]
    return text if len(text) <= 400 else text[:397] + "..."


def _clones(inputs):
    from .runtime.profiler import _clone

    return [_clone(x) for x in inputs]


def _all_failed(name, target, skipped) -> AutotuneError:
    lines = [f"  {_config_text(s['config'])}: {s['stage']}: {s['reason']}" for s in skipped]
    return AutotuneError(f"autotune {name!r} for {target}: no config compiled, passed the "
                         "check and ran:\n" + "\n".join(lines), skipped)


def _with_result(kernel, result: AutotuneResult):
    """The kernel with `autotune_result` set, on a shallow copy: the compile
    cache's kernel object is shared by every caller."""
    tuned = copy.copy(kernel)
    tuned.autotune_result = result
    return tuned


def autotune(configs=None, *, warmup: int = 25, rep: int = 100, ref_prog: Optional[Callable] = None,
             supply_prog: Optional[Callable] = None, rtol: float = 1e-2, atol: float = 1e-2,
             manual_check_prog: Optional[Callable] = None, skip_check: bool = False,
             max_workers: Optional[int] = None, cache: bool = True, out_idx=None, target=None,
             pass_configs: Optional[dict] = None):
    """Decorator: tune a kernel factory over `configs`.

    configs: a list of dicts of factory arguments (block sizes, stages,
        threads, policy...), or a callable that returns it given the call's
        arguments. Arguments the caller passes itself are fixed in every config.
    warmup, rep: untimed and timed calls per config (median of `rep`).
    ref_prog: the reference, called on copies of the inputs; returns the
        expected output(s) (or, for kernels without outputs, writes into its
        copies like the kernel). Without it configs are timed unchecked.
    supply_prog: called with the kernel's input `Param`s (name, kind, dtype,
        shape), returns the inputs; default: random inputs of the profiler.
    rtol, atol: the check's tolerances (as the profiler's assert_allclose).
    manual_check_prog: `check(out, expected)` replaces the allclose check:
        raise AssertionError (or return False) when wrong; any other value it
        returns is kept as the timing's `check` note (e.g. an error measure).
    skip_check: time without checking even where ref_prog is given.
    max_workers: compile processes (default: one per CPU, at most one per
        config; 1 compiles in this process).
    cache: keep the winner on disk (<kernel cache>/autotune/<key>.json) and
        reuse it on later calls with the same key; False tunes every call.
    out_idx, target, pass_configs: as tl.compile, for a plain factory (a
        `@tl.jit` factory brings its own).
    """
    from .compiler.compile import JITFunction

    if isinstance(configs, (JITFunction, PrimFunc, AutoTuner)):
        raise TypeError("use @tl.autotune(configs=[...], ...): the configs are required")
    if configs is None:
        raise TypeError("@tl.autotune needs configs=[dict(...), ...] (or a callable returning them)")
    if not callable(configs) and not isinstance(configs, (list, tuple)):
        raise TypeError(f"configs must be a list of dicts or a callable, got "
                        f"{type(configs).__name__}")
    _check_count("warmup", warmup, 0)
    _check_count("rep", rep, 1)
    if max_workers is not None:
        _check_count("max_workers", max_workers, 1)
    settings = dict(warmup=warmup, rep=rep, ref_prog=ref_prog, supply_prog=supply_prog,
                    rtol=rtol, atol=atol, manual_check_prog=manual_check_prog,
                    skip_check=skip_check, max_workers=max_workers, cache=cache,
                    out_idx=out_idx, target=target, pass_configs=pass_configs)

    def wrap(fn):
        return AutoTuner(fn, list(configs) if isinstance(configs, tuple) else configs,
                         **settings)

    return wrap


def cached_config(tuner: AutoTuner, *args, **kwargs) -> Optional[Dict[str, Any]]:
    """The best config the autotuning cache holds for `tuner(*args,
    **kwargs)` (the config that call would load instead of tuning), or None
    when the cache has no winner for it. Tunes, builds and compiles
    nothing: the key is made as `tune` makes it, from the factory's source
    and closure, the call's other arguments, the configs, out_idx, pass
    configs, the target (and the GPU's name) and the compiler build, so the
    entry found is the one an identical `tl.autotune(...)` call wrote. An
    entry whose configs are not this tuner's is not used (and left alone).
    This is how code that must never run a sweep (an operator call) takes a
    tuned config where one exists."""
    from .base.target import parse_target

    configs = tuner._configs(args, kwargs)
    config_keys = {k for c in configs for k in c}
    fixed, rest = tuner._bind(args, kwargs, config_keys)
    candidates = tuner._candidates(configs, fixed)
    target = parse_target(tuner.target)
    key = tuner._key(rest, candidates, target, _device_name(target))
    entry = _load_entry(key)
    if entry is None or entry["best"] >= len(candidates):
        return None
    best = candidates[entry["best"]]
    if _jsonable(best.config) != entry["best_config"]:
        return None
    return dict(best.config)
