"""The fast path of kernel calls: the per-call work prepared once per kernel.

A call `kernel(a, b)` checks its arguments against the kernel's signature,
binds the symbolic sizes, allocates the outputs, builds the kernel-parameter
buffer and launches. What of that depends only on the kernel (which dtypes
each argument may have, the static sizes, where each symbol comes from, the
parameter layout, the grid, the launch configuration, the code's address) is
worked out here once, at the kernel's first call, into a plan; the per-call
rest runs in C++ (`_launch`, built from launch.cpp), which reads torch
tensors through torch's stable C shim and NumPy arrays through NumPy's object
layout and launches with `cuLaunchKernelEx` on torch's current stream.

The fast path takes only the common, valid case. Any argument it does not
take (another type, a dtype, shape, layout or device that fails a check, a
CUDA context it has not seen) sends the call down the Python path
(`Kernel._call_python`: `runtime/args.py`'s binding and the executable),
which checks everything as it always did and raises the same errors. So a
kernel always runs correctly without the native module: where it is missing
(a package run from a source tree that did not build it; build it with
`python -m tilelang_mlir.runtime.launcher build`), or off
(TILELANG_MLIR_NATIVE_LAUNCH=0, or `set_native(False)`), every call takes the
Python path.

Nothing here needs MLIR or the compiler: a kernel loaded with `tl.load` gets
the same fast path.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..base import dtypes as dt
from ..base.signature import is_input, symbols_of

try:  # built with the package (python/CMakeLists.txt) or by `build()` below
    from . import _launch as _native
except ImportError:  # pragma: no cover - depends on the build
    _native = None

if os.environ.get("TILELANG_MLIR_NATIVE_LAUNCH", "1") in ("0", "false", "off"):
    _native = None

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.cpp")


def available() -> bool:
    """Whether the native launcher is loaded."""
    return _native is not None


def set_native(on: bool) -> bool:
    """Turns the native fast path on or off for every kernel (off: every
    call takes the Python path); returns the previous setting. For tests
    and measurements."""
    if _native is None:
        return False
    return bool(_native.enable("native", bool(on)))


def set_tilelang_outputs(on: bool) -> None:
    """TileLang's output conventions on the fast path (args.TILELANG_OUTPUTS:
    torch outputs for a CPU call with no tensor input, several as a list)."""
    if _native is not None:
        _native.enable("tilelang_outputs", bool(on))


def native_enabled() -> bool:
    if _native is None:
        return False
    was = _native.enable("native", True)
    _native.enable("native", was)
    return bool(was)


# ---------------------------------------------------------------------------
# Set-up of the foreign pieces: torch, NumPy, the CUDA driver
# ---------------------------------------------------------------------------

# None: not tried; True/False: configured or not.
_TORCH_STATE: List[Optional[bool]] = [None]
_NUMPY_STATE: List[Optional[bool]] = [None]
_CUDA_STATE: List[Optional[bool]] = [None]
_TORCH_CODES: Dict[Any, int] = {}  # torch dtype -> ScalarType code
# Why a piece is off (for `status()`).
_WHY: Dict[str, str] = {}
# How a CUDA launch learns torch's current stream (for `status()`).
_STREAM: List[str] = ["none"]

# THPVariable_Wrap's C++ names: (at::TensorBase&&), (at::TensorBase) and
# (const at::TensorBase&); the launcher destroys its own handle after each,
# which is right for all three (a moved-from handle holds nothing).
_WRAP_SYMBOLS = ("_Z16THPVariable_WrapON2at10TensorBaseE",
                 "_Z16THPVariable_WrapN2at10TensorBaseE",
                 "_Z16THPVariable_WrapRKN2at10TensorBaseE")
_SHIM = ("aoti_torch_get_dtype", "aoti_torch_get_device_type", "aoti_torch_get_device_index",
         "aoti_torch_get_dim", "aoti_torch_get_sizes", "aoti_torch_get_strides",
         "aoti_torch_get_data_ptr", "aoti_torch_empty_strided", "aoti_torch_delete_tensor_object")
# Newer shim functions, used where present (launch.cpp checks contiguity
# from sizes and strides itself otherwise; a sparse tensor has no strides).
_SHIM_OPTIONAL = ("aoti_torch_get_layout", "aoti_torch_is_contiguous")


def _library(path: str):
    """An already loaded shared library (RTLD_NOLOAD: nothing new is loaded)."""
    mode = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_LAZY", 1)
    try:
        return ctypes.CDLL(path, mode=mode)
    except OSError:
        return None


def _address(lib, name: str) -> Optional[int]:
    try:
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _torch_dtypes(torch) -> List[Any]:
    names = sorted(set(dt._TORCH.values()) | {"float8_e4m3fnuz", "float8_e5m2fnuz",
                                                "complex64", "complex128", "float4_e2m1fn_x2"})
    return [getattr(torch, n) for n in names if isinstance(getattr(torch, n, None), torch.dtype)]


def torch_functions(torch):
    """(addresses of the shim functions and THPVariable_Wrap by name, the
    shim's enumerators {"cpu", "cuda", "strided"}) of the torch loaded, or
    why they cannot be had."""
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    cpu = _library(os.path.join(lib, "libtorch_cpu.so"))
    python = _library(os.path.join(lib, "libtorch_python.so"))
    if cpu is None or python is None:
        return f"torch's libraries are not at {lib}"
    fns = {name: _address(cpu, name) for name in _SHIM}
    missing = [n for n, a in fns.items() if not a]
    wrap = next((a for a in (_address(python, s) for s in _WRAP_SYMBOLS) if a), None)
    if missing or wrap is None:
        return f"torch {torch.__version__} lacks {missing or 'THPVariable_Wrap'}"
    fns["THPVariable_Wrap"] = wrap
    for name in _SHIM_OPTIONAL:
        address = _address(cpu, name)
        if address:
            fns[name] = address
    cuda = _library(os.path.join(lib, "libtorch_cuda.so"))
    stream = _address(cuda, "aoti_torch_get_current_cuda_stream") if cuda is not None else None
    if stream:
        fns["aoti_torch_get_current_cuda_stream"] = stream
    enums = {}
    for key, name in (("cpu", "aoti_torch_device_type_cpu"),
                      ("cuda", "aoti_torch_device_type_cuda"),
                      ("strided", "aoti_torch_layout_strided")):
        fn = getattr(cpu, name, None)
        if fn is None:
            if key == "strided":  # (only with aoti_torch_get_layout)
                fns.pop("aoti_torch_get_layout", None)
                continue
            return f"torch {torch.__version__} lacks {name}"
        fn.restype = ctypes.c_int32
        enums[key] = fn()
    return fns, enums


def _configure_torch() -> bool:
    """Hands torch's C shim to the native module and checks it on probe
    tensors; True when the fast path may read and allocate torch tensors."""
    if _TORCH_STATE[0] is not None:
        return _TORCH_STATE[0]
    _TORCH_STATE[0] = False
    if _native is None or "torch" not in sys.modules:
        return False
    import torch

    found = torch_functions(torch)
    if isinstance(found, str):
        _WHY["torch"] = found
        return False
    fns, enums = found
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    probe = torch.arange(15, dtype=torch.float32).reshape(3, 5)
    if _native.configure_torch(fns, torch.Tensor, torch.nn.Parameter, probe, probe._cdata,
                               enums, raw_stream) is None:
        _WHY["torch"] = "the layout of torch.Tensor objects is not the one expected"
        return False
    try:
        codes = {}
        for d in _torch_dtypes(torch):
            codes[d] = _native.tensor_info(torch.empty(0, dtype=d))[0]
        if len(set(codes.values())) != len(codes):
            raise ValueError("dtype codes repeat")

        def agrees(t) -> bool:
            got = _native.tensor_info(t)
            want = (codes[t.dtype], enums["cpu"], -1, enums["strided"], tuple(t.shape),
                    tuple(t.stride()), t.data_ptr(), t.is_contiguous())
            return got == want

        view = probe[1:, 1:4]
        if not (agrees(probe) and agrees(view) and agrees(probe.t())
                and agrees(torch.nn.Parameter(probe.clone()))
                and agrees(torch.zeros((), dtype=torch.int64))):
            raise ValueError("probe tensors read back wrong")
        out = _native.empty_tensor((2, 3), codes[torch.float16], enums["cpu"], -1)
        if (type(out) is not torch.Tensor or tuple(out.shape) != (2, 3)
                or out.dtype != torch.float16 or tuple(out.stride()) != (3, 1)
                or out.device.type != "cpu"):
            raise ValueError("a tensor allocated through the shim is wrong")
        out.fill_(1)
        if float(out.sum()) != 6.0 or sys.getrefcount(out) != 2:
            raise ValueError("a tensor allocated through the shim is wrong")
    except Exception as e:  # noqa: BLE001 (any disagreement: the Python path serves)
        _WHY["torch"] = f"probe failed: {e}"
        return False
    _TORCH_CODES.clear()
    _TORCH_CODES.update(codes)
    _STREAM[0] = ("aoti_torch_get_current_cuda_stream" if "aoti_torch_get_current_cuda_stream"
                  in fns else "torch._C._cuda_getCurrentRawStream (a Python call per launch)"
                  if raw_stream is not None else "none")
    _native.enable("torch", True)
    _TORCH_STATE[0] = True
    return True


def _configure_numpy() -> bool:
    if _NUMPY_STATE[0] is not None:
        return _NUMPY_STATE[0]
    _NUMPY_STATE[0] = False
    if _native is None:
        return False
    _native.configure_numpy(np.ndarray, np.empty)
    try:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)

        def agrees(x) -> bool:
            got = _native.array_info(x)
            want = (x.dtype.num, x.dtype.byteorder, tuple(x.shape), tuple(x.strides),
                    x.ctypes.data, bool(x.flags["C_CONTIGUOUS"]))
            return got == want

        if not (agrees(a) and agrees(a.T) and agrees(a[1:, ::2])
                and agrees(np.zeros((), dtype=np.int16)) and agrees(a.astype(">f4"))):
            raise ValueError("probe arrays read back wrong")
    except Exception as e:  # noqa: BLE001
        _WHY["numpy"] = f"probe failed: {e}"
        return False
    _native.enable("numpy", True)
    _NUMPY_STATE[0] = True
    return True


def _configure_cuda() -> bool:
    if _CUDA_STATE[0] is not None:
        return _CUDA_STATE[0]
    _CUDA_STATE[0] = False
    if _native is None:
        return False
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        _WHY["cuda"] = "libcuda.so.1 cannot be opened"
        return False
    fns = {n: _address(lib, n) for n in ("cuCtxGetCurrent", "cuLaunchKernelEx")}
    if not all(fns.values()):
        _WHY["cuda"] = "the driver lacks cuLaunchKernelEx"
        return False
    _native.configure_cuda(fns)
    _CUDA_STATE[0] = True
    return True


def status() -> Dict[str, Any]:
    """What the fast path can do here (for reports and tests)."""
    return {"native": _native is not None and native_enabled(),
            "torch": bool(_TORCH_STATE[0]), "numpy": bool(_NUMPY_STATE[0]),
            "cuda": bool(_CUDA_STATE[0]), "stream": _STREAM[0], "why_not": dict(_WHY)}


def ensure_torch() -> None:
    """Configures torch once it is imported (kernels set up before then
    would see no torch)."""
    if _TORCH_STATE[0] is None and "torch" in sys.modules:
        _configure_torch()


# ---------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------

# Grid opcodes (launch.cpp's GridOp).
_LEAF = {"const": 0, "sym": 1, "scalar": 2, "sms": 3}
_OPS = {"add": 4, "sub": 5, "mul": 6, "floordiv": 7, "ceildiv": 8, "mod": 9, "max": 10,
        "min": 11}


def grid_program(expr: dict, symbols: Dict[str, int], scalars: Dict[str, int]) -> List[int]:
    """A grid expression (base/grid.py) as launch.cpp's stack program:
    (opcode, operand) pairs, postfix."""
    if "const" in expr:
        return [_LEAF["const"], expr["const"]]
    if "sym" in expr:
        return [_LEAF["sym"], symbols[expr["sym"]]]
    if "scalar" in expr:
        return [_LEAF["scalar"], scalars[expr["scalar"]]]
    if "sms" in expr:
        return [_LEAF["sms"], expr["sms"]]
    a, b = expr["args"]
    return grid_program(a, symbols, scalars) + grid_program(b, symbols, scalars) + \
        [_OPS[expr["op"]], 0]


def _accepted(want: dt.DType, candidates) -> List[int]:
    """The codes of the candidate dtypes runtime/args.py accepts for a
    parameter of dtype `want` ((code, dtype-like) pairs)."""
    codes = []
    for code, d in candidates:
        try:
            got = dt.as_dtype(d)
        except TypeError:
            continue
        if got is want or got == want or (got.mlir == want.mlir and got.kind == want.kind):
            codes.append(code)
    return codes


def _numpy_candidates() -> List[Tuple[int, Any]]:
    """(type number, dtype) of the NumPy dtypes arrays may come in (the
    ml_dtypes ones where ml_dtypes is imported)."""
    dtypes = [np.dtype(n) for n in ("float16", "float32", "float64", "int8", "int16", "int32",
                                    "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                                    "longlong", "ulonglong")]
    ml = sys.modules.get("ml_dtypes")
    if ml is not None:
        dtypes += [np.dtype(getattr(ml, n)) for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2")
                   if hasattr(ml, n)]
    return [(d.num, d) for d in dtypes]


def _torch_poison(torch, tdtype) -> Optional[bytes]:
    """One element of `tdtype` holding NaN, as torch's fill_(nan) writes it."""
    try:
        return torch.full((1,), float("nan"), dtype=tdtype).view(torch.uint8).numpy().tobytes()
    except (RuntimeError, TypeError):
        return None


def _numpy_poison(nd) -> Optional[bytes]:
    if np.dtype(nd).kind in "iub":  # integers and booleans have no NaN
        return None
    try:
        return np.full(1, np.nan, dtype=nd).view(np.uint8).tobytes()
    except (TypeError, ValueError):
        return None


_SCALAR_KINDS = {"float32": 3, "float64": 4, "bool": 2}


def _scalar_spec(p, input_: bool, ctypes_table: Dict[str, Any]):
    name = p.dtype.name
    if ctypes_table.get(name) is None:
        return None  # the Python path raises its TypeError
    if name in _SCALAR_KINDS:
        return ("scalar", input_, _SCALAR_KINDS[name], p.dtype.bytes, 0, 0)
    bits = p.dtype.bits
    if p.dtype.is_unsigned:
        return ("scalar", input_, 1, p.dtype.bytes, 0, 2 ** bits - 1)
    return ("scalar", input_, 0, p.dtype.bytes, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def plan_of(kernel) -> Tuple[Optional[tuple], str]:
    """The native plan of `kernel` (launch.cpp's spec), or None and why not."""
    device = kernel.device
    if device not in ("cuda", "cpu"):
        return None, f"no fast path for {device} kernels"
    params, out_idx = kernel.params, kernel.out_idx
    if any(p.symmetric or p.peers_of is not None for p in params):
        return None, "symmetric tensors take the Python path"
    cuda = device == "cuda"
    torch_ok = _configure_torch() if "torch" in sys.modules else False
    numpy_ok = _configure_numpy() if not cuda else False
    if cuda and not (torch_ok and _configure_cuda()):
        return None, "; ".join(_WHY.values()) or "torch is not imported"
    if not (torch_ok or numpy_ok):
        return None, "; ".join(_WHY.values()) or "neither torch nor NumPy can be read"
    torch = sys.modules.get("torch") if torch_ok else None
    symbols: Dict[str, int] = {}
    for s in symbols_of(params):
        symbols.setdefault(s, len(symbols))
    scalar_index = {p.name: i for i, p in enumerate(params) if p.kind == "scalar"}
    if cuda:
        from .cuda import SCALAR_CTYPES as table
    else:
        from .cpu import _SCALAR_CTYPES as table
    torch_candidates = list(_TORCH_CODES.items()) if torch_ok else []
    torch_candidates = [(code, d) for d, code in torch_candidates]
    numpy_candidates = _numpy_candidates() if numpy_ok else []
    specs = []
    for i, p in enumerate(params):
        inp = is_input(i, p, out_idx)
        if p.kind != "tensor":
            spec = _scalar_spec(p, inp, table)
            if spec is None:
                return None, f"scalar parameter {p.name!r} of type {p.dtype}"
            specs.append(spec)
            continue
        alloc = 0 if inp else (1 if i in out_idx else 2)
        dims = tuple(d if isinstance(d, int) else -(symbols[d] + 1) for d in p.shape)
        out_torch, torch_poison = -1, None
        out_numpy, numpy_poison, numpy_itemsize = None, None, 1
        if torch is not None:
            try:
                td = dt.to_torch(p.dtype)
                out_torch = _TORCH_CODES.get(td, -1)
                if not cuda and td.is_floating_point:
                    torch_poison = _torch_poison(torch, td)
                    if torch_poison is None:
                        out_torch = -1
            except TypeError:
                out_torch = -1
        if numpy_ok:
            try:
                nd = dt.to_numpy(p.dtype)
                out_numpy, numpy_itemsize = nd, nd.itemsize
                if p.dtype.is_float:
                    numpy_poison = _numpy_poison(nd)
                    if numpy_poison is None:
                        out_numpy = None
            except TypeError:
                pass
        specs.append(("tensor", inp, alloc, dims, _accepted(p.dtype, torch_candidates),
                      _accepted(p.dtype, numpy_candidates), out_torch, out_numpy, torch_poison,
                      numpy_poison, p.dtype.bytes, numpy_itemsize))
    allocs = list(out_idx) + [i for i, p in enumerate(params) if p.workspace]
    parts, cpu = (), (0, 0, False)
    if cuda:
        parts = []
        for exe in kernel._executables():
            native = getattr(exe, "native_launch", None)
            got = native() if native is not None else None
            if got is None:
                return None, (f"executable {type(exe).__name__} has no native launch (it "
                              "synchronizes after each launch or is launched with attributes: "
                              "cooperative, PDL, an L2 access policy window)")
            grid, block, shared, maps = got
            grid = list(grid) + [{"const": 1}] * (3 - len(grid))
            parts.append((tuple(grid_program(e, symbols, scalar_index) for e in grid),
                          tuple(block), shared, tuple(maps)))
    else:
        native = getattr(kernel._executable, "native_entry", None)
        cpu = native() if native is not None else None
        if cpu is None:
            return None, f"executable {type(kernel._executable).__name__} has no native entry"
    return (cuda, tuple(specs), tuple(allocs), len(symbols), tuple(parts), cpu), ""


# ---------------------------------------------------------------------------
# The base class of Kernel
# ---------------------------------------------------------------------------

class _PythonBase:
    """Kernel's base where the native module is missing: every call takes
    the Python path."""

    def __call__(self, *args, **kwargs):
        return self._call_python(*args, **kwargs)

    def _native_state(self) -> str:
        return "python"

    def _native_try(self, *args):
        return NotImplemented

    def _native_bind(self, *args):
        return None

    def _native_configure(self, spec) -> None:
        pass

    def _native_add_context(self, *args) -> bool:
        return False

    def _native_has_context(self, handle) -> bool:
        return False

    def _native_contexts(self) -> int:
        return 0


KernelBase = _native.Launcher if _native is not None else _PythonBase


class _PythonJitBase:
    """JITFunction's base where the native module is missing: launch.cpp's
    JitCache in Python. Entries, most recently used first, of calls of
    `nargs` positional arguments whose compile-time arguments (at
    `const_pos`) have the same type and value as `consts` and whose closure
    `cells` hold the same objects; a hit runs the kernel on the arguments at
    `runtime_pos` (or, for a factory, returns the kernel) when they pass its
    checks. Any other call goes to `_call_full`."""

    _capacity = 8

    def __call__(self, *args, **kwargs):
        if not kwargs:
            out = self._calls_lookup(*args)
            if out is not NotImplemented:
                return out
        return self._call_full(*args, **kwargs)

    def _entries(self) -> List[tuple]:
        entries = self.__dict__.get("_call_entries")
        if entries is None:
            entries = self.__dict__["_call_entries"] = []
        return entries

    def _calls_add(self, kernel, nargs, const_pos, consts, runtime_pos, cells, as_tuple,
                   returns_kernel) -> None:
        contents = tuple(c.cell_contents for c in cells)
        entry = (kernel, nargs, tuple(const_pos), tuple(consts), tuple(runtime_pos),
                 tuple(cells), contents, as_tuple, returns_kernel)
        # An entry of the same call replaces the one there.
        entries = [e for e in self._entries() if not (
            e[0] is kernel and e[1:3] == entry[1:3] and e[4:6] == entry[4:6] and all(
                type(a) is type(b) and a == b for a, b in zip(e[3], entry[3])))]
        entries.insert(0, entry)
        self.__dict__["_call_entries"] = entries[:self._capacity]

    def _calls_lookup(self, *args):
        entries = self._entries()
        for n, entry in enumerate(entries):
            kernel, nargs, const_pos, consts, runtime_pos, cells, contents, as_tuple, \
                returns_kernel = entry
            if nargs != len(args) or any(
                    type(args[i]) is not type(v) or not (args[i] is v or args[i] == v)
                    for i, v in zip(const_pos, consts)) or any(
                    c.cell_contents is not v for c, v in zip(cells, contents)):
                continue
            if returns_kernel:
                out = kernel
            else:
                out = kernel._try_python(*[args[i] for i in runtime_pos])
                if out is NotImplemented:
                    continue
                if as_tuple and not isinstance(out, (tuple, list)):
                    out = (out,)
            if n:
                entries.insert(0, entries.pop(n))
            return out
        return NotImplemented

    def _calls_clear(self) -> None:
        self._entries().clear()

    def _calls_size(self) -> int:
        return len(self._entries())


# The base of @tl.jit's JITFunction: a call checks its cache of calls by
# argument signature first.
JitBase = _native.JitCache if _native is not None else _PythonJitBase


# ---------------------------------------------------------------------------
# Building the native module where the package did not
# ---------------------------------------------------------------------------

def build(dest: Optional[str] = None, compiler: Optional[str] = None) -> str:
    """Compiles launch.cpp into the native module next to this file (or into
    `dest`) with the C++ compiler (`$CXX`, c++, g++ or clang++) and Python's
    headers; returns the path. For a package run from a source tree (the
    wheel and `make build` build it with CMake)."""
    import shutil
    import subprocess
    import sysconfig

    cxx = compiler or os.environ.get("CXX") or next(
        (c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if cxx is None:
        raise RuntimeError("building the native launcher needs a C++ compiler (c++, g++, "
                           "clang++ or $CXX)")
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        raise RuntimeError(f"building the native launcher needs Python's headers ({include} "
                           "has no Python.h)")
    out = os.path.join(dest or os.path.dirname(SOURCE),
                       "_launch" + sysconfig.get_config_var("EXT_SUFFIX"))
    tmp = f"{out}.{os.getpid()}.tmp"
    cmd = [cxx, "-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
           f"-I{include}", SOURCE, "-o", tmp]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the native launcher failed:\n{' '.join(cmd)}\n"
                           f"{proc.stderr.strip()}")
    os.replace(tmp, out)
    return out


def _main(argv: Sequence[str]) -> int:
    if list(argv[:1]) == ["build"]:
        print(build(*argv[1:2]))
        return 0
    if list(argv[:1]) == ["status"]:
        import torch  # noqa: F401 (the status of the torch path)

        _configure_torch()
        _configure_numpy()
        print(status())
        return 0
    print("usage: python -m tilelang_mlir.runtime.launcher build [DEST] | status",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
