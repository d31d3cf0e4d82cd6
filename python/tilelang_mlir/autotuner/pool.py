"""Compiling candidates: in this process, or in a pool of worker processes.

Workers are started by "forkserver" (or "spawn"), never forked from this
process: a fork copies the locks other threads hold at that moment (torch,
tqdm, logging, the MLIR thread pool), and a worker forked while one was
held waited for it forever (Python 3.12 warns that fork() of a
multi-threaded process may deadlock). A worker is a fresh interpreter, so
it cannot call the factory, which may be a closure or live in a script;
instead this process builds each program and emits its tile IR (the
frontend, fast), and the worker runs the passes and ptxas on that text
(the slow part), fills the disk cache and sends back the artifact.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List

from ..frontend.prim_func import PrimFunc
from .text import _reason


def _compile_here(factory, args, kwargs, out_idx, target, pass_configs) -> dict:
    """Builds and compiles one candidate in this process: {"kernel"}, else
    {"reason", "kernel_key"}; with "pid" and "seconds"."""
    from ..compiler.compile import compile as tl_compile
    from ..compiler.compile import plan

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
        from .. import ir

        return ir.Module.parse(self.text)


def _emit_for_worker(factory, args, kwargs, out_idx, target, pass_configs) -> dict:
    """In this process: builds the program of a candidate, then returns
    {"artifact"} when the disk cache has its kernel, else {"task": _Emitted};
    {"reason", "kernel_key"} when it cannot be built or emitted."""
    from .. import ir
    from ..compiler.compile import cached_artifact, emit_tile_ir, plan

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
    from ..compiler.compile import build_artifact

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

