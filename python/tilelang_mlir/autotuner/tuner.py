"""The decorator and the tuner: configs bound to a call, the cache key,
compiling (pool.py), checking and timing every candidate, the winner kept
(cache.py)."""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import logging
import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..base.signature import is_input
from ..frontend.prim_func import PrimFunc
from .cache import (CACHE_VERSION, _cache_root, _discard_entry, _forget_entry, _load_entry,
                    _remembered, _save_entry)
from .pool import (_can_start_workers, _compile_here, _emit_for_worker, _Emitted, _make_program,
                   _run_pool)
from .progress import _Progress
from .text import (_argument_text, _config_text, _factory_text, _jsonable, _reason, _reason_line,
                   _value_text)

logger = logging.getLogger("tilelang_mlir.autotuner")

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


@dataclass
class _Candidate:
    index: int
    config: dict            # as recorded (with the values the caller fixed)
    call_kwargs: dict       # what is passed to the factory besides the call's arguments
    kernel: Any = None
    pid: Optional[int] = None
    compile_seconds: float = 0.0


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
        from ..compiler.compile import JITFunction

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
            from ..frontend.eager import EagerFunction, is_eager_style

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
        from ..compiler.compile import compiler_id

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
        from ..base.target import parse_target

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
            from ..compiler.compile import compile as tl_compile

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
        from ..runtime.cache import digest

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
        from ..compiler.compile import compile as tl_compile

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
        from ..compiler.compile import kernel_from_artifact, offline

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
        from ..runtime.profiler import _clone

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
        from ..runtime.profiler import _clone

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
        from ..runtime.cuda import NoCUDADevice

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


def _clones(inputs):
    from ..runtime.profiler import _clone

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
    if hasattr(tuned, "update_tuner_result"):  # TileLang's fields of a tuned kernel
        tuned.update_tuner_result(result.latency, dict(result.config), None)
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
    from ..compiler.compile import JITFunction

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
    from ..base.target import parse_target

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
