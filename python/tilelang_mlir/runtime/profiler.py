"""Timing kernels and checking them against a reference: `kernel.get_profiler()`.

    profiler = kernel.get_profiler()
    ms = profiler.do_bench(A, B)            # median milliseconds of one call
    profiler.assert_allclose(lambda A, B: A @ B, rtol=1e-2, atol=1e-2)

TileLang's keywords are accepted with TileLang's meanings:
`kernel.get_profiler(tensor_supply_type=TensorSupplyType.Integer)` picks how
random inputs are made, `do_bench(fn, input_tensors=..., n_warmup=...,
n_repeat=..., backend="event" | "cupti" | "cudagraph", quantiles=...)` and
`assert_allclose(ref, input_tensors=..., max_mismatched_ratio=...)`. Two
defaults are ours (`Profiler.bench_units`, `Profiler.default_mismatch_ratio`):
`warmup` and `rep` count calls, where TileLang's are millisecond budgets, and
no mismatched element is allowed, where TileLang allows 1%; the compatibility
route switches both to TileLang's.

On the GPU, each timed call is bracketed by CUDA events on torch's current
stream and, by default, preceded by an (untimed) write of a 256 MB buffer that
flushes the L2 cache. CPU kernels are timed with `time.perf_counter`.
"""

from __future__ import annotations

import enum
import inspect
import statistics
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ..base.signature import is_input
from . import args as argmod

RETURN_MODES = ("median", "mean", "min", "max", "all")
BACKENDS = ("event", "cupti", "cudagraph")


class TensorSupplyType(enum.Enum):
    """How `Profiler.random_inputs` makes inputs (TileLang's names and
    meanings). Integer: small integers (-2..2; unsigned and bool 0..2 and
    0..1; float8 from the int8 range); Uniform: U(-1, 1); Normal: N(-1, 1);
    Randn: N(0, 1); Zero, One: constants; Auto: U(-1, 1) for 16/32-bit
    floats, Integer's values otherwise. Uniform and Normal give ones for
    int8 tensors, as in TileLang."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def _supplied(kind: "TensorSupplyType", shape, dtype, tdtype, device):
    """One input of `shape` made as `kind` says (see TensorSupplyType)."""
    import torch

    T = TensorSupplyType
    small_floats = (torch.float16, torch.float32, torch.bfloat16)
    if kind == T.Auto and tdtype in small_floats and dtype.is_float and dtype.bits >= 16:
        return torch.empty(shape, device=device, dtype=tdtype).uniform_(-1.0, 1.0)
    if kind in (T.Uniform, T.Normal) and tdtype == torch.int8:
        return torch.ones(shape, device=device, dtype=tdtype)
    if kind in (T.Integer, T.Auto):
        if dtype.is_bool:
            return torch.randint(0, 2, shape, device=device).to(tdtype)
        if dtype.is_unsigned:
            return torch.randint(0, 3, shape, device=device, dtype=tdtype)
        if dtype.is_float and dtype.bits == 8:
            return torch.randint(-128, 128, shape, device=device, dtype=torch.int8).to(tdtype)
        if dtype.is_float:
            return torch.randint(-2, 3, shape, device=device).to(tdtype)
        return torch.randint(-2, 3, shape, device=device, dtype=tdtype)
    if kind == T.Uniform:
        return torch.empty(shape, device=device, dtype=torch.float32).uniform_(-1.0, 1.0).to(tdtype)
    if kind == T.Normal:
        return torch.empty(shape, device=device, dtype=torch.float32).normal_(-1.0, 1.0).to(tdtype)
    if kind == T.Randn:
        return torch.randn(shape, device=device).to(tdtype)
    if kind == T.Zero:
        return torch.zeros(shape, device=device, dtype=tdtype)
    return torch.ones(shape, device=device, dtype=tdtype)

# Bytes written before each timed call to evict the L2 cache (H100/H200 have
# 50 MB of L2; B200 126 MB).
L2_FLUSH_BYTES = 256 * 1024 * 1024


def bench_cuda(fn: Callable[[], Any], warmup: int = 25, rep: int = 100, flush_l2: bool = True,
               cuda_graph: bool = False) -> List[float]:
    """Milliseconds of each of `rep` calls of `fn` (any CUDA work on torch's
    current stream), bracketed by CUDA events after `warmup` calls.

    `flush_l2` writes a 256 MB buffer before each timed call (untimed). The
    host's cost of issuing `fn` is hidden only while that flush runs; with
    `cuda_graph`, `fn` is captured once into a CUDA graph and its replays are
    timed, so what is measured is the device time alone.
    """
    import torch

    fn()  # loads modules and surfaces errors before timing
    torch.cuda.synchronize()
    run = fn
    if cuda_graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up off the default stream, as capture wants
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        run = graph.replay
    cache = (torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
             if flush_l2 else None)
    for _ in range(warmup):
        run()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    for i in range(rep):
        if cache is not None:
            cache.zero_()
        starts[i].record()
        run()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def host_launch_us(fn: Callable[[], Any], calls: int = 200) -> float:
    """Microseconds of host time per call of `fn`, issued back to back
    (the device is synchronized before and after; for launch-bound work this
    is the time per call a caller sees)."""
    import torch

    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    return host / calls * 1e6


def _is_tensor_like(x) -> bool:
    return isinstance(x, np.ndarray) or argmod._is_torch(x)


class Profiler:
    """Times a kernel (`do_bench`) and compares it with a reference
    (`assert_allclose`). Obtain one with `kernel.get_profiler()`.

    Three defaults differ between this package's API and TileLang's, and
    the compatibility route (`tilelang_mlir.compat.install`) switches them
    to TileLang's for the process: `bench_units` ("calls": `warmup` and
    `rep` count calls; "ms": they are millisecond budgets, as in TileLang),
    `default_mismatch_ratio` (0.0 here; TileLang's 0.01) and
    `default_supply_type` (None here: N(0, 1) floats; TileLang's Auto:
    U(-1, 1) for 16/32-bit floats).
    """

    bench_units = "calls"
    default_mismatch_ratio = 0.0
    default_supply_type: Optional["TensorSupplyType"] = None

    # Members of another API's profiler that this class refuses, name -> the
    # error text (tilelang_mlir.compat fills it with TileLang's refused
    # Profiler members).
    refused_members: Dict[str, str] = {}

    def __getattr__(self, name):
        why = type(self).refused_members.get(name)
        if why is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise AttributeError(why)

    @property
    def func(self):
        """The kernel this profiler runs (TileLang's `profiler.func`)."""
        return self.kernel

    def __call__(self, *args):
        """Runs the kernel on `args`."""
        return self.kernel(*args)

    def __init__(self, kernel, tensor_supply_type: Optional[TensorSupplyType] = None):
        if tensor_supply_type is not None and not isinstance(tensor_supply_type,
                                                             TensorSupplyType):
            raise TypeError(f"tensor_supply_type must be a TensorSupplyType, got "
                            f"{tensor_supply_type!r}")
        self.kernel = kernel
        self.supply_type = tensor_supply_type if tensor_supply_type is not None \
            else self.default_supply_type

    def __repr__(self) -> str:
        return f"<Profiler of {self.kernel!r}>"

    @property
    def device(self) -> str:
        return self.kernel.device

    # -- inputs -------------------------------------------------------------------------
    @property
    def params(self):
        """The kernel's parameters (TileLang's `profiler.params`)."""
        return self.kernel.params

    @property
    def result_idx(self) -> List[int]:
        """The indices of the kernel's outputs (TileLang's name for out_idx)."""
        return list(self.kernel.out_idx)

    def supply(self, param, dynamic_symbolic_constraints: Optional[dict] = None):
        """A fresh input for one parameter, made as `random_inputs` makes it."""
        return self._input(param, dynamic_symbolic_constraints)

    def _shape(self, p, constraints: Optional[dict]) -> tuple:
        """`p`'s shape with its symbolic sizes given by `constraints`
        (TileLang's dynamic_symbolic_constraints)."""
        shape = []
        for d in p.shape:
            if isinstance(d, str):
                if not constraints:
                    raise ValueError(f"cannot make a random input for argument {p.name!r} of "
                                     f"kernel {self.kernel.name!r}: its size {d!r} is symbolic; "
                                     "pass the inputs explicitly or give "
                                     f"dynamic_symbolic_constraints={{{d!r}: ...}}")
                if d not in constraints:
                    raise ValueError(f"Dynamic symbolic variable {d!r} not found in constraints. "
                                     f"Available constraints: {list(constraints)}")
                value = constraints[d]
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise ValueError(f"dynamic_symbolic_constraints[{d!r}] must be a positive "
                                     f"int, got {value!r}")
                shape.append(value)
            else:
                shape.append(d)
        return tuple(shape)

    def random_inputs(self, dynamic_symbolic_constraints: Optional[dict] = None) -> List[Any]:
        """Fresh random inputs for every non-output parameter, on the kernel's
        device: as the profiler's `tensor_supply_type` says where it has one
        (TensorSupplyType), else torch.randn for floats and torch.randint for
        integers and bools. Symbolic sizes take their values from
        `dynamic_symbolic_constraints` ({name: size}).

        Raises ValueError when a parameter has a symbolic size not given
        there, or is a scalar: such inputs must be passed explicitly.
        """
        inputs = []
        for i, p in enumerate(self.kernel.params):
            if not is_input(i, p, self.kernel.out_idx):
                continue
            inputs.append(self._input(p, dynamic_symbolic_constraints))
        return inputs

    def _get_inputs(self, with_output: bool = False,
                    dynamic_symbolic_constraints: Optional[dict] = None) -> List[Any]:
        """TileLang's `profiler._get_inputs`: `random_inputs`, with a fresh
        tensor for every output parameter too when `with_output`."""
        if not with_output:
            return self.random_inputs(dynamic_symbolic_constraints)
        return [self._input(p, dynamic_symbolic_constraints) for p in self.kernel.params]

    def _input(self, p, constraints: Optional[dict] = None):
        import torch

        from ..base import dtypes as dt

        device = "cuda" if self.device == "cuda" else "cpu"
        if p.kind != "tensor":
            raise ValueError(f"cannot make a random value for scalar argument {p.name!r} of "
                             f"kernel {self.kernel.name!r}; pass the inputs explicitly")
        shape = self._shape(p, constraints)
        tdtype = dt.to_torch(p.dtype)
        if self.supply_type is not None:
            x = _supplied(self.supply_type, shape, p.dtype, tdtype, device)
        elif p.dtype.is_float:
            x = torch.randn(shape, dtype=torch.float32, device=device).to(tdtype)
        elif p.dtype.is_bool:
            x = torch.randint(0, 2, shape, device=device).to(torch.bool)
        elif p.dtype.is_unsigned:
            x = torch.randint(0, 16, shape, dtype=tdtype, device=device)
        else:
            x = torch.randint(-8, 8, shape, dtype=tdtype, device=device)
        return x

    # -- timing -------------------------------------------------------------------------
    def do_bench(self, *args, warmup: int = 25, rep: int = 100, flush_l2: bool = True,
                 return_mode: str = "median", cuda_graph: bool = False,
                 n_warmup: int = 0, n_repeat: int = 0, input_tensors: Optional[Sequence] = None,
                 backend: str = "event", quantiles: Optional[Sequence[float]] = None,
                 dynamic_symbolic_constraints: Optional[dict] = None, device=None,
                 early_stop_baseline: Optional[float] = None, func: Optional[Callable] = None
                 ) -> Union[float, List[float]]:
        """Times the kernel on `args` (or `input_tensors`; random inputs when
        neither is given, see `random_inputs`). When the first argument is a
        callable, that is timed instead: called on the inputs (as TileLang's
        `profiler.do_bench(ref_program)`), or with no arguments when it takes
        none. Returns milliseconds.

        `warmup` untimed calls come first, then `rep` timed calls (`n_warmup`
        and `n_repeat`, TileLang's counts, override them when positive); with
        `flush_l2` (GPU only) a 256 MB buffer is written before each timed
        call, outside the timed region. `return_mode` is "median" (default),
        "mean", "min", "max" or "all" (the list of every call's time);
        `quantiles` returns those quantiles of the times instead. With
        `cuda_graph` (or `backend="cudagraph"`) the call is captured once in a
        CUDA graph and the graph's replays are timed: the host's launch cost
        leaves the measurement. `backend="cupti"` times with CUDA events as
        "event" does (CUPTI is not used here; a warning says so once).
        `dynamic_symbolic_constraints` ({symbol: size}) gives the sizes of
        the random inputs' symbolic dimensions; `device` (a CUDA device)
        times there; `early_stop_baseline` is accepted and never cuts the
        measurement short. `func=` (TileLang's keyword) names the callable
        to time, as a first positional callable does.
        """
        if func is not None:
            if args and callable(args[0]) and not _is_tensor_like(args[0]):
                raise TypeError("give the callable to time either first or as func=, not both")
            args = (func,) + tuple(args)
        if device is not None and self.device == "cuda":
            import torch

            with torch.cuda.device(device):
                return self.do_bench(*args, warmup=warmup, rep=rep, flush_l2=flush_l2,
                                     return_mode=return_mode, cuda_graph=cuda_graph,
                                     n_warmup=n_warmup, n_repeat=n_repeat,
                                     input_tensors=input_tensors, backend=backend,
                                     quantiles=quantiles,
                                     dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        if return_mode not in RETURN_MODES:
            raise ValueError(f"return_mode must be one of {', '.join(RETURN_MODES)}, got "
                             f"{return_mode!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        for name, value in (("n_warmup", n_warmup), ("n_repeat", n_repeat)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        budgets = self.bench_units == "ms"
        if budgets:
            for name, value in (("warmup", warmup), ("rep", rep)):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                    raise ValueError(f"{name} must be a non-negative number of milliseconds, "
                                     f"got {value!r}")
        else:
            warmup = n_warmup or warmup
            rep = n_repeat or rep
            if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
                raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
            if isinstance(rep, bool) or not isinstance(rep, int) or rep < 1:
                raise ValueError(f"rep must be a positive int, got {rep!r}")
        if backend == "cupti":
            _note_cupti()
        cuda_graph = cuda_graph or backend == "cudagraph"
        if args and callable(args[0]) and not _is_tensor_like(args[0]):
            fn = self._callable(args[0], list(args[1:]) or input_tensors,
                                dynamic_symbolic_constraints)
        elif args and input_tensors is not None:
            raise ValueError("give the inputs either as arguments or as input_tensors, not both")
        else:
            inputs = list(args) if args else (
                list(input_tensors) if input_tensors is not None
                else self.random_inputs(dynamic_symbolic_constraints))
            fn = self._launcher(inputs)
        def bench(w, r):
            if self.device == "cuda":
                return bench_cuda(fn, warmup=w, rep=r, flush_l2=flush_l2, cuda_graph=cuda_graph)
            return self._bench_cpu(fn, w, r)

        if budgets:
            # TileLang's budgets: the call counts that fill them, from a
            # short first measurement (n_warmup/n_repeat, when given, win).
            probe = sorted(bench(1, 5))[2]
            per_call = max(probe, 1e-3)
            warmup = n_warmup or max(1, min(10000, int(warmup / per_call)))
            rep = n_repeat or max(1, min(10000, int(rep / per_call)))
        return summarize(bench(warmup, rep), return_mode, quantiles)

    def _callable(self, fn: Callable, inputs: Optional[Sequence],
                  constraints: Optional[dict] = None) -> Callable[[], Any]:
        """`fn` bound to the inputs it is timed on (none where it takes none)."""
        try:
            takes_none = not inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes_none = False
        if takes_none:
            if inputs:
                raise ValueError(f"{getattr(fn, '__name__', fn)!r} takes no arguments but "
                                 "inputs were given")
            return fn
        bound = list(inputs) if inputs is not None else self.random_inputs(constraints)
        return lambda: fn(*bound)

    def _launcher(self, inputs: Sequence) -> Callable[[], Any]:
        """Checks the arguments and allocates the outputs once; the returned
        function only launches and returns the outputs allocated once (as a
        call of the kernel returns them): the native launcher's bound call
        where it takes the arguments (runtime/launcher.py), else the same on
        the Python path."""
        k = self.kernel
        if k.device == "cuda":
            k._native_prepare()
        bound = k._native_bind(*inputs)
        if bound is not None:
            return bound
        binding = argmod.bind(k.name, k.params, k.out_idx, inputs, k.device)
        exe, params, values = k._executable, k.params, binding.values
        outputs = k._results(binding)

        def launch():
            exe(params, values)
            return outputs

        launch.binding = binding  # keeps the inputs and outputs alive
        return launch

    @staticmethod
    def _bench_cpu(fn: Callable[[], Any], warmup: int, rep: int) -> List[float]:
        fn()
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(rep):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return times

    # -- checking -----------------------------------------------------------------------
    def run_once(self, func: Optional[Callable] = None):
        """Runs the kernel (or `func`) once on fresh random inputs and returns
        what it returns."""
        inputs = self.random_inputs()
        return (func or self.kernel)(*inputs)

    def _outputs(self, result) -> list:
        if result is None:
            return []
        return list(result) if isinstance(result, (list, tuple)) else [result]

    def assert_consistent(self, repeat: int = 10) -> None:
        """Runs the kernel `repeat` more times on the same random inputs and
        raises AssertionError where an output differs from the first run's
        (a race in the kernel)."""
        import torch

        inputs = self.random_inputs()
        first = [torch.as_tensor(x).clone() for x in self._outputs(self.kernel(*inputs))]
        for run in range(repeat):
            again = self._outputs(self.kernel(*inputs))
            for i, (a, b) in enumerate(zip(again, first)):
                a = torch.as_tensor(a)
                if not torch.equal(a.cpu(), b.cpu()) and not torch.allclose(
                        a.cpu().float(), b.cpu().float(), equal_nan=True):
                    raise AssertionError(f"kernel {self.kernel.name!r}: output {i} of run "
                                         f"{run + 2} differs from the first run (the result is "
                                         "not consistent)")

    def manual_assert_close(self, ref_fn: Callable, input_tensors: Optional[Sequence] = None,
                            manual_check_prog: Optional[Callable] = None) -> None:
        """Runs the reference and the kernel on the same inputs and hands both
        output lists to `manual_check_prog(outputs, reference_outputs)`,
        which asserts."""
        if manual_check_prog is None:
            raise ValueError("manual_assert_close needs manual_check_prog(outputs, "
                             "reference_outputs)")
        inputs = list(input_tensors) if input_tensors is not None else self.random_inputs()
        expected = self._outputs(ref_fn(*[_clone(x) for x in inputs]))
        got = self._outputs(self.kernel(*inputs))
        if len(got) != len(expected):
            raise AssertionError(f"kernel {self.kernel.name!r} returned {len(got)} output(s), "
                                 f"the reference {len(expected)}")
        manual_check_prog(got, expected)

    def assert_allclose(self, ref_fn: Callable, *args, rtol: float = 1e-2,
                        atol: float = 1e-2, input_tensors: Optional[Sequence] = None,
                        max_mismatched_ratio: Optional[float] = None) -> None:
        """Runs the kernel and `ref_fn` on the same inputs (`args` or
        `input_tensors`, or fresh random ones when omitted) and raises
        AssertionError, with the largest error, where more than
        `max_mismatched_ratio` of an output's elements (by default
        `default_mismatch_ratio`: none here, TileLang's 0.01 under the
        compatibility route)
        differ by more than `atol + rtol * |reference|`.

        `ref_fn` gets copies of the inputs and returns the expected output(s)
        (one tensor or a tuple, in `out_idx` order). For a kernel without
        outputs, which writes into its arguments, `ref_fn` must write into its
        copies the same way and return None; every tensor argument is then
        compared.
        """
        k = self.kernel
        if args and input_tensors is not None:
            raise ValueError("give the inputs either as arguments or as input_tensors, not both")
        if max_mismatched_ratio is None:
            max_mismatched_ratio = self.default_mismatch_ratio
        if not 0.0 <= float(max_mismatched_ratio) < 1.0:
            raise ValueError(f"max_mismatched_ratio must be in [0, 1), got {max_mismatched_ratio!r}")
        inputs = (list(args) if args else list(input_tensors) if input_tensors is not None
                  else self.random_inputs())
        copies = [_clone(x) for x in inputs]
        got = k(*inputs)
        expected = ref_fn(*copies)
        if k.out_idx:
            names = [k.params[i].name for i in k.out_idx]
            got = [got] if len(k.out_idx) == 1 else list(got)
            if isinstance(expected, (list, tuple)):
                expected = list(expected)
            else:
                expected = [expected]
            if len(expected) != len(got):
                raise AssertionError(f"kernel {k.name!r} has {len(got)} output(s) "
                                     f"({', '.join(names)}), the reference returned "
                                     f"{len(expected)}")
        else:
            if expected is not None:
                raise ValueError(f"kernel {k.name!r} has no outputs (out_idx is empty): the "
                                 "reference must write into its copies of the arguments and "
                                 "return None")
            inputs_params = [p for i, p in enumerate(k.params) if is_input(i, p, k.out_idx)]
            pairs = [(p.name, x, c) for p, x, c in zip(inputs_params, inputs, copies)
                     if p.kind == "tensor"]
            names = [n for n, _, _ in pairs]
            got = [x for _, x, _ in pairs]
            expected = [c for _, _, c in pairs]
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
        for name, a, b in zip(names, got, expected):
            _compare(k.name, name, a, b, rtol, atol, max_mismatched_ratio)


def summarize(times: List[float], return_mode: str = "median",
              quantiles: Optional[Sequence[float]] = None) -> Union[float, List[float]]:
    """The times (milliseconds) reduced as `return_mode` says, or the
    `quantiles` (each in [0, 1]) of them."""
    if quantiles is not None:
        qs = list(quantiles)
        if not qs or any(not 0.0 <= float(q) <= 1.0 for q in qs):
            raise ValueError(f"quantiles must be numbers in [0, 1], got {quantiles!r}")
        values = [float(v) for v in np.quantile(np.asarray(times), qs)]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    if return_mode == "mean":
        return statistics.fmean(times)
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    return statistics.median(times)


_CUPTI_NOTED = False


def _note_cupti() -> None:
    global _CUPTI_NOTED
    if not _CUPTI_NOTED:
        _CUPTI_NOTED = True
        warnings.warn("do_bench(backend=\"cupti\"): CUPTI is not used by tilelang-mlir; timing "
                      "with CUDA events (L2 flushed before each call) instead", stacklevel=3)


def _clone(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if argmod._is_torch(x):
        return x.clone()
    return x


def _as_float64(x, device: Optional[Any]):
    import torch

    if argmod._is_torch(x):
        t = x.detach()
    else:
        # float64 first: torch cannot take ml_dtypes arrays (bfloat16, float8).
        t = torch.from_numpy(np.ascontiguousarray(np.asarray(x).astype(np.float64)))
    t = t.to(torch.float64)
    return t.to(device) if device is not None else t


def _compare(kernel_name: str, name: str, got, expected, rtol: float, atol: float,
             max_mismatched_ratio: float = 0.0) -> None:
    import torch

    a = _as_float64(got, None)
    b = _as_float64(expected, a.device)
    if tuple(a.shape) != tuple(b.shape):
        raise AssertionError(f"kernel {kernel_name!r}: output {name!r} has shape "
                             f"{tuple(a.shape)}, the reference {tuple(b.shape)}")
    if a.numel() == 0:
        return
    diff = (a - b).abs()
    ok = (a == b) | (diff <= atol + rtol * b.abs()) | (a.isnan() & b.isnan())
    bad = int((~ok).sum())
    if bad == 0 or bad <= max_mismatched_ratio * a.numel():
        return
    masked = torch.where(ok, torch.zeros_like(diff), diff.nan_to_num(nan=float("inf")))
    flat = int(masked.argmax())
    index = tuple(int(i) for i in np.unravel_index(flat, tuple(a.shape)))
    rel = (diff / b.abs()).nan_to_num(nan=float("inf"))
    rel = torch.where(ok, torch.zeros_like(rel), rel)
    raise AssertionError(
        f"kernel {kernel_name!r}: output {name!r} differs from the reference in {bad} of "
        f"{a.numel()} elements (rtol={rtol}, atol={atol}, max_mismatched_ratio="
        f"{max_mismatched_ratio}); max abs error "
        f"{float(masked.max()):.6g} at index {index} (kernel {float(a.flatten()[flat]):.6g}, "
        f"reference {float(b.flatten()[flat]):.6g}); max rel error {float(rel.max()):.6g}")
