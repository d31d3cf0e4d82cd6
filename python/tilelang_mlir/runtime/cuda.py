"""Launching CUDA kernels (cubins) through the driver API of cuda-python.

Needs no MLIR: a cubin, its entry name, the launch configuration and the
signature are enough, which is what an ahead-of-time artifact holds (see
`runtime/artifact.py`). `cuda.bindings` and torch are imported only when a
kernel is first launched, so this module imports on machines without a GPU.

Kernel ABI (what the compiler emits): for each parameter of the tile program,
in order,

- a tensor of rank r is its memref descriptor expanded into 3 + 2r scalar
  parameters: allocated pointer (u64), aligned pointer (u64), offset (i64,
  always 0), r sizes (i64), r strides in elements (i64);
- a scalar is passed by value with its own C type (bool as uint8).

The grid is 1 to 3 JSON expressions over the symbolic sizes and the integer
scalar arguments (see `evaluate_grid`); the launch goes to torch's current
stream and does not synchronize, unless `sync=True` or TILELANG_MLIR_SYNC=1
(then every launch is followed by a synchronization and an error check).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

# ---------------------------------------------------------------------------
# Grid expressions
# ---------------------------------------------------------------------------

class NoCUDADevice(RuntimeError):
    """A CUDA kernel was launched on a machine without a CUDA GPU."""


GRID_OPS = ("add", "sub", "mul", "floordiv", "ceildiv", "mod", "max", "min")

# Largest grid extents the hardware accepts (x, y, z).
_GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)


def expr_to_str(expr: Any) -> str:
    """A readable form of a grid expression, for error messages."""
    if isinstance(expr, dict):
        if "const" in expr:
            return str(expr["const"])
        if "sym" in expr:
            return str(expr["sym"])
        if "scalar" in expr:
            return str(expr["scalar"])
        if "op" in expr and isinstance(expr.get("args"), (list, tuple)):
            return f"{expr['op']}(" + ", ".join(expr_to_str(a) for a in expr["args"]) + ")"
    return repr(expr)


def check_grid_expr(expr: Any, symbols: Optional[Sequence[str]] = None,
                    scalars: Optional[Sequence[str]] = None) -> None:
    """Checks the structure of one grid expression; raises ValueError.

    When `symbols` / `scalars` are given, the names an expression refers to
    must be among them.
    """
    if not isinstance(expr, dict):
        raise ValueError(f"grid expression {expr!r} must be a JSON object such as "
                         "{'const': 4}, {'sym': 'M'}, {'scalar': 'n'} or "
                         "{'op': 'ceildiv', 'args': [...]}")
    if "const" in expr:
        value = expr["const"]
        if len(expr) != 1 or isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"grid expression {expr!r}: 'const' must be the only key and "
                             "an integer")
    elif "sym" in expr:
        name = expr["sym"]
        if len(expr) != 1 or not isinstance(name, str):
            raise ValueError(f"grid expression {expr!r}: 'sym' must be the only key and a "
                             "symbol name")
        if symbols is not None and name not in symbols:
            known = ", ".join(repr(s) for s in symbols) or "none"
            raise ValueError(f"grid expression {expr!r} refers to the symbolic size {name!r}, "
                             f"which no tensor parameter has (symbols: {known})")
    elif "scalar" in expr:
        name = expr["scalar"]
        if len(expr) != 1 or not isinstance(name, str):
            raise ValueError(f"grid expression {expr!r}: 'scalar' must be the only key and a "
                             "parameter name")
        if scalars is not None and name not in scalars:
            known = ", ".join(repr(s) for s in scalars) or "none"
            raise ValueError(f"grid expression {expr!r} refers to {name!r}, which is not an "
                             f"integer scalar parameter (integer scalars: {known})")
    elif "op" in expr:
        op, args = expr["op"], expr.get("args")
        if set(expr) != {"op", "args"}:
            raise ValueError(f"grid expression {expr!r}: an operation has exactly the keys "
                             "'op' and 'args'")
        if op not in GRID_OPS:
            raise ValueError(f"grid expression {expr!r}: unknown op {op!r}; expected one of "
                             f"{', '.join(GRID_OPS)}")
        if not isinstance(args, (list, tuple)) or len(args) != 2:
            raise ValueError(f"grid expression {expr!r}: {op!r} takes a list of 2 args")
        for a in args:
            check_grid_expr(a, symbols, scalars)
    else:
        raise ValueError(f"grid expression {expr!r} has none of the keys 'const', 'sym', "
                         "'scalar', 'op'")


def check_grid(grid: Any, symbols: Optional[Sequence[str]] = None,
               scalars: Optional[Sequence[str]] = None) -> None:
    """Checks a grid: a list of 1 to 3 valid expressions; raises ValueError."""
    if not isinstance(grid, (list, tuple)) or not 1 <= len(grid) <= 3:
        raise ValueError(f"the grid must be a list of 1 to 3 extents, got {grid!r}")
    for e in grid:
        check_grid_expr(e, symbols, scalars)


def _eval(expr: Any, symbols: Mapping[str, int], scalars: Mapping[str, Any]) -> int:
    if "const" in expr:
        return expr["const"]
    if "sym" in expr:
        name = expr["sym"]
        if name not in symbols:
            raise ValueError(f"grid expression refers to the symbolic size {name!r}, which "
                             "is not bound")
        return symbols[name]
    if "scalar" in expr:
        name = expr["scalar"]
        if name not in scalars:
            raise ValueError(f"grid expression refers to the scalar argument {name!r}, which "
                             "is not bound")
        value = scalars[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"grid expression uses the scalar argument {name!r}, which is "
                             f"not an integer ({value!r})")
        return value
    op = expr["op"]
    a = _eval(expr["args"][0], symbols, scalars)
    b = _eval(expr["args"][1], symbols, scalars)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "max":
        return max(a, b)
    if op == "min":
        return min(a, b)
    if b == 0:
        raise ValueError(f"grid expression {expr_to_str(expr)} divides by zero")
    if op == "floordiv":
        return a // b
    if op == "ceildiv":
        return -(-a // b)
    return a % b  # mod


def evaluate_grid(grid: Sequence[dict], symbols: Mapping[str, int],
                  scalars: Mapping[str, Any]) -> Tuple[int, int, int]:
    """Evaluates a grid (1 to 3 expressions) to three extents, padded with 1.

    `symbols` maps symbolic sizes to their bound values, `scalars` scalar
    parameter names to their values. Division is Python's floor division,
    `mod` Python's `%`. Raises ValueError for a malformed grid, an unbound
    name, a division by zero or a negative extent; a zero extent is returned
    as is (the launch is skipped).
    """
    check_grid(grid)
    extents = []
    for axis, e in enumerate(grid):
        value = _eval(e, symbols, scalars)
        if value < 0:
            raise ValueError(f"grid extent {'xyz'[axis]} = {expr_to_str(e)} evaluates to "
                             f"{value}, which is negative")
        extents.append(value)
    extents += [1] * (3 - len(extents))
    return tuple(extents)


# ---------------------------------------------------------------------------
# Driver helpers
# ---------------------------------------------------------------------------

_DRIVER = None


def _driver():
    """`cuda.bindings.driver`, imported on first use."""
    global _DRIVER
    if _DRIVER is None:
        try:
            from cuda.bindings import driver
        except ImportError as e:
            raise ImportError("running CUDA kernels needs cuda-python's driver bindings: "
                              "pip install cuda-bindings==13.0.3") from e
        _DRIVER = driver
    return _DRIVER


def check_result(result: tuple, call: str, what: str = "") -> Any:
    """Checks the CUresult of a cuda-python driver call (the first element of
    the tuple it returns) and returns the remaining value(s).

    Raises RuntimeError naming the call and the CUresult, e.g.
    "cuLaunchKernel failed with CUDA_ERROR_INVALID_VALUE (invalid argument)".
    """
    err = result[0]
    if int(err) != 0:
        name = getattr(err, "name", None) or f"CUresult {int(err)}"
        detail = ""
        try:
            described = _driver().cuGetErrorString(err)
            if int(described[0]) == 0 and described[1]:
                detail = f" ({described[1].decode(errors='replace')})"
        except Exception:  # noqa: BLE001 (the description is a nicety)
            pass
        raise RuntimeError(f"{call} failed with {name}{detail}" + (f": {what}" if what else ""))
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


_LOCK = threading.Lock()
# The context made current on this thread for a device (checked once per
# thread and device; torch keeps its primary context current).
_THREAD = threading.local()
_PRIMARY: Dict[int, Any] = {}  # device ordinal -> retained primary context
_CTX_DEVICE: Dict[int, int] = {}  # context handle -> device ordinal
_INITIALIZED = False


def current_context(name: str = "kernel") -> Tuple[Any, int]:
    """Makes sure a CUDA context of torch's current device is current on this
    thread (torch's primary context) and returns (context, device ordinal)."""
    driver = _driver()
    import torch

    global _INITIALIZED
    if not _INITIALIZED:
        if not torch.cuda.is_available():
            raise NoCUDADevice(f"{name} needs a CUDA GPU, but torch sees none (torch "
                               f"{torch.__version__}, torch.cuda.is_available() is False); "
                               "kernels compile without a GPU: save one with kernel.save(path) "
                               "and load it on a GPU machine with tl.load(path)")
        torch.cuda.init()
        check_result(driver.cuInit(0), "cuInit")
        _INITIALIZED = True
    device = torch.cuda.current_device()
    known = getattr(_THREAD, "context", None)
    if known is not None and known[1] == device:
        return known
    ctx = _current_context_of(driver, device)
    _THREAD.context = ctx
    return ctx


def _current_context_of(driver, device: int) -> Tuple[Any, int]:
    ctx = check_result(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    handle = int(ctx) if ctx is not None else 0
    if handle:
        ctx_device = _CTX_DEVICE.get(handle)
        if ctx_device is None:
            ctx_device = int(check_result(driver.cuCtxGetDevice(), "cuCtxGetDevice"))
            _CTX_DEVICE[handle] = ctx_device
        if ctx_device == device:
            return ctx, device
    # No context, or one of another device: use the primary context of
    # torch's current device (the one torch itself uses).
    with _LOCK:
        primary = _PRIMARY.get(device)
        if primary is None:
            dev = check_result(driver.cuDeviceGet(device), "cuDeviceGet")
            primary = check_result(driver.cuDevicePrimaryCtxRetain(dev),
                                   "cuDevicePrimaryCtxRetain")
            _PRIMARY[device] = primary
            _CTX_DEVICE[int(primary)] = device
    check_result(driver.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
    return primary, device


# ---------------------------------------------------------------------------
# Argument packing
# ---------------------------------------------------------------------------

SCALAR_CTYPES = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "bool": ctypes.c_uint8,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}

_U64 = (1 << 64) - 1


def scalar_ctype(param) -> type:
    """The C type a scalar parameter is passed with; TypeError if none."""
    ctype = SCALAR_CTYPES.get(param.dtype.name)
    if ctype is None:
        raise TypeError(f"scalar parameter {param.name!r} has type {param.dtype}, which CUDA "
                        f"kernels cannot take by value (supported: "
                        f"{', '.join(SCALAR_CTYPES)})")
    return ctype


def pack_arguments(params: Sequence, values: Sequence) -> Tuple[ctypes.Array, list]:
    """Builds the `kernelParams` array of a launch (one `void*` per kernel
    parameter, each pointing at the value) following the kernel ABI: a
    tensor is its memref descriptor flattened (allocated and aligned
    pointer, offset 0, sizes, strides, each 64 bits), a scalar its C value.

    Returns (array, keep): `keep` holds the storage the pointers point into;
    both must live until the launch call returns.
    """
    words: List[int] = []
    scalars = []
    for p, v in zip(params, values):
        if p.kind == "tensor":
            ptr = v.data_ptr & _U64
            words += (ptr, ptr, 0)
            words += [d & _U64 for d in v.shape]
            words += [d & _U64 for d in v.strides]
        else:
            scalars.append(scalar_ctype(p)(v))
    storage = (ctypes.c_uint64 * max(len(words), 1))(*words)
    base = ctypes.addressof(storage)
    slots: List[int] = []
    w = 0
    it = iter(scalars)
    for p, v in zip(params, values):
        if p.kind == "tensor":
            n = 3 + 2 * len(v.shape)
            slots += range(base + 8 * w, base + 8 * (w + n), 8)
            w += n
        else:
            slots.append(ctypes.addressof(next(it)))
    array = (ctypes.c_void_p * max(len(slots), 1))(*slots)
    return array, [storage, scalars]


_LAUNCH = None


def _libcuda_launch():
    """cuLaunchKernel of libcuda through ctypes (a few microseconds cheaper
    per launch than the cuda-python wrapper); None where libcuda cannot be
    opened, and the cuda-python call is used."""
    global _LAUNCH
    if _LAUNCH is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            fn = lib.cuLaunchKernel
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
            _LAUNCH = fn
        except (OSError, AttributeError):
            _LAUNCH = False
    return _LAUNCH or None


def _current_stream(device: int) -> int:
    """The handle of torch's current stream on `device`."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(device)
    return torch.cuda.current_stream(device).cuda_stream


def _sync_from_env() -> bool:
    return os.environ.get("TILELANG_MLIR_SYNC", "") not in ("", "0")


# Read once, at import (launches do not look at the environment).
_SYNC_ENV = _sync_from_env()


# ---------------------------------------------------------------------------
# The executable
# ---------------------------------------------------------------------------

_DEFAULT_SHARED_LIMIT = 48 * 1024


class CUDAExecutable:
    """A cubin, its entry point and launch configuration.

    `grid` is a list of 1 to 3 grid expressions, `block` up to 3 ints,
    `shared_bytes` the dynamic shared memory in bytes. The module is loaded
    lazily, once per CUDA context (one per device), and stays loaded for the
    life of the executable.
    """

    def __init__(self, cubin: bytes, entry: str, block: Sequence[int], shared_bytes: int,
                 grid: Sequence[dict], params: Sequence, *, name: Optional[str] = None,
                 sync: Optional[bool] = None):
        if not isinstance(cubin, (bytes, bytearray)) or not cubin:
            raise TypeError(f"cubin must be non-empty bytes, got {type(cubin).__name__}")
        if not isinstance(entry, str) or not entry:
            raise TypeError(f"entry must be a kernel name, got {entry!r}")
        block = list(block) if isinstance(block, (list, tuple)) else block
        if (not isinstance(block, list) or not 1 <= len(block) <= 3
                or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block)):
            raise ValueError(f"block must be 1 to 3 positive ints, got {block!r}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, int) or shared_bytes < 0:
            raise ValueError(f"shared_bytes must be a non-negative int, got {shared_bytes!r}")
        self.params = list(params)
        symbols = [d for p in self.params if p.kind == "tensor" for d in p.shape
                   if isinstance(d, str)]
        scalars = [p.name for p in self.params if p.kind == "scalar" and p.dtype.is_int]
        check_grid(grid, symbols, scalars)
        for p in self.params:
            if p.kind == "scalar":
                scalar_ctype(p)  # TypeError now rather than at the first launch
        self.cubin = bytes(cubin)  # kept alive for the module
        self.entry = entry
        self.name = name or entry
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.shared_bytes = shared_bytes
        self.grid = [dict(e) for e in grid]
        self.sync = sync
        # A grid of constants is evaluated once.
        self._static_grid = (evaluate_grid(self.grid, {}, {})
                             if all("const" in e for e in self.grid) else None)
        self._what = f"kernel {self.name!r}"
        self._functions: Dict[int, Any] = {}  # context handle -> CUfunction
        self._handles: Dict[int, int] = {}  # context handle -> CUfunction as an int
        self._modules: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        grid = ", ".join(expr_to_str(e) for e in self.grid)
        return (f"<CUDAExecutable {self.entry} grid=({grid}) block={self.block} "
                f"shared={self.shared_bytes}>")

    def launch_grid(self, params: Sequence, values: Sequence) -> Tuple[int, int, int]:
        """The grid of a launch with these argument values."""
        symbols: Dict[str, int] = {}
        scalars: Dict[str, Any] = {}
        for p, v in zip(params, values):
            if p.kind == "tensor":
                for want, have in zip(p.shape, v.shape):
                    if isinstance(want, str):
                        symbols.setdefault(want, have)
            else:
                scalars[p.name] = v
        grid = evaluate_grid(self.grid, symbols, scalars)
        for axis, (extent, limit) in enumerate(zip(grid, _GRID_LIMITS)):
            if extent > limit:
                raise ValueError(f"kernel {self.name!r}: grid extent {'xyz'[axis]} = "
                                 f"{expr_to_str(self.grid[axis])} = {extent} exceeds the "
                                 f"CUDA limit of {limit}")
        return grid

    def _function(self, ctx, device: int):
        handle = int(ctx)
        fn = self._functions.get(handle)
        if fn is not None:
            return fn
        driver = _driver()
        with self._lock:
            fn = self._functions.get(handle)
            if fn is not None:
                return fn
            module = check_result(driver.cuModuleLoadData(self.cubin), "cuModuleLoadData",
                                  f"loading the cubin of kernel {self.name!r} on cuda:{device}")
            fn = check_result(driver.cuModuleGetFunction(module, self.entry.encode()),
                              "cuModuleGetFunction",
                              f"the cubin of kernel {self.name!r} has no entry {self.entry!r}")
            # The static shared memory of the kernel counts against the 48 KB
            # default too: opt in whenever dynamic shared memory is used.
            if self.shared_bytes > 0:
                attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
                result = driver.cuFuncSetAttribute(fn, attr, self.shared_bytes)
                if int(result[0]) != 0:
                    limit = ""
                    try:
                        attrs = driver.CUdevice_attribute
                        got = driver.cuDeviceGetAttribute(
                            attrs.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device)
                        if int(got[0]) == 0:
                            limit = f"; cuda:{device} allows at most {got[1]} bytes per block"
                    except Exception:  # noqa: BLE001
                        pass
                    driver.cuModuleUnload(module)
                    check_result(result, "cuFuncSetAttribute",
                                 f"kernel {self.name!r} asks for {self.shared_bytes} bytes of "
                                 f"dynamic shared memory{limit}")
            self._modules[handle] = module
            self._handles[handle] = int(fn)
            self._functions[handle] = fn
        return fn

    def __call__(self, params: Sequence, values: Sequence) -> None:
        grid = self._static_grid or self.launch_grid(params, values)
        if 0 in grid:
            return  # an empty grid launches nothing
        ctx, device = current_context(self._what)
        fn = self._function(ctx, device)
        stream = _current_stream(device)
        array, keep = pack_arguments(params, values)
        launch = _libcuda_launch()
        block = self.block
        if launch is not None:
            code = launch(self._handles[int(ctx)], grid[0], grid[1], grid[2], block[0],
                          block[1], block[2], self.shared_bytes, stream,
                          ctypes.addressof(array), None)
            result = None if code == 0 else (_driver().CUresult(code),)
        else:
            result = _driver().cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1],
                                              block[2], self.shared_bytes, stream,
                                              ctypes.addressof(array), 0)
        if result is not None and int(result[0]) != 0:
            check_result(result, "cuLaunchKernel",
                         f"kernel {self.name!r} with grid {grid}, block {self.block}, "
                         f"{self.shared_bytes} bytes of dynamic shared memory")
        del keep
        if self.sync if self.sync is not None else _SYNC_ENV:
            check_result(_driver().cuStreamSynchronize(stream), "cuStreamSynchronize",
                         f"kernel {self.name!r} failed (grid {grid}, block {self.block})")


def make_kernel(name: str, params: Sequence, out_idx: Sequence[int], target, *, cubin: bytes,
                entry: str, block: Sequence[int], grid: Sequence[dict], shared_bytes: int,
                ptx: Optional[str] = None, stages: Optional[Dict[str, str]] = None,
                sync: Optional[bool] = None):
    """A `Kernel` running `cubin` (what the compiler and `tl.load` build).

    `target` is a Target or a target string ("cuda:sm_90a"); `stages` the IR
    of the pipeline's stages when there is any (none for loaded artifacts).
    """
    from ..compiler.target import parse_target
    from .kernel import Kernel

    exe = CUDAExecutable(cubin, entry, block, shared_bytes, grid, params, name=name, sync=sync)
    return Kernel(name, params, out_idx, parse_target(target), dict(stages or {}), ptx or "",
                  exe, "cuda", entry=entry, block=exe.block, grid=exe.grid,
                  shared_bytes=shared_bytes, cubin=exe.cubin, ptx=ptx)
