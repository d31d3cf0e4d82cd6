"""Running CPU kernels: the calling convention, and kernels saved as shared
libraries.

The entry function is emitted with `llvm.emit_c_interface`: every tensor is
passed as a pointer to a strided memref descriptor {allocated pointer, aligned
pointer, offset, sizes[rank], strides[rank]}, scalars by value; MLIR's
ExecutionEngine wraps it as `_mlir__mlir_ciface_<name>(void **args)`, one
pointer per argument, which is what both executables call.

Two executables call it: the compiler's in-process JIT (`compiler/cpu.py`,
MLIR's ExecutionEngine) and `SharedLibraryExecutable`, a kernel saved with
`Kernel.save` and loaded with ctypes, which needs no MLIR. A saved library
carries the runtime routines the kernel may call (`cpu_runtime.c`, compiled
in when the library is linked; the JIT has the same file compiled into the
native module); a failing
`T.device_assert` stops the kernel and the call raises DeviceAssertionError.
It also carries the kernel's signature (`signature_source`: the entry, the
parameters and `out_idx`, as the manifest has them), which loading compares
with the manifest: a library of another kernel would be called with
arguments of the wrong shapes.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

from ..base.errors import DeviceAssertionError

_SCALAR_CTYPES = {
    "float16": None, "bfloat16": None, "float32": ctypes.c_float, "float64": ctypes.c_double,
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool,
}

_U64 = (1 << 64) - 1


def _scalar_bits(param, value) -> int:
    """A scalar argument as the 64-bit word whose low bytes are its C value
    (little-endian: a narrower type reads its own bytes)."""
    name = param.dtype.name
    if _SCALAR_CTYPES.get(name) is None:
        raise TypeError(f"scalar arguments of type {param.dtype} are not supported")
    if name in ("float32", "float64"):  # (ctypes rounds as C does: 1e300 is inf)
        return int.from_bytes(bytes(_SCALAR_CTYPES[name](value)), "little")
    return int(value) & _U64


def pack_arguments(params: Sequence, values: Sequence) -> Tuple[ctypes.Array, List]:
    """The `void **` argument array of a call on bound arguments
    (`runtime/args.py`), and the storage it points into (keep both alive
    until the call returns): one array of 64-bit words holds every memref
    descriptor {allocated, aligned, offset, sizes, strides} and scalar, and
    one array of pointers the descriptors' addresses and the arguments'."""
    words: List[int] = []
    offsets: List[int] = []
    for p, v in zip(params, values):
        offsets.append(len(words))
        if p.kind == "tensor":
            words += (v.data_ptr, v.data_ptr, 0)
            words += v.shape
            words += v.strides
        else:
            words.append(_scalar_bits(p, v))
    storage = (ctypes.c_uint64 * max(len(words), 1))(*[w & _U64 for w in words])
    base = ctypes.addressof(storage)
    n = len(params)
    # [0, n): descriptor pointers; [n, 2n): the argument pointers (a tensor's
    # points at its descriptor pointer, a scalar's at its value).
    pointers = (ctypes.c_void_p * max(2 * n, 1))()
    pbase = ctypes.addressof(pointers)
    for i, p in enumerate(params):
        if p.kind == "tensor":
            pointers[i] = base + 8 * offsets[i]
            pointers[n + i] = pbase + 8 * i
        else:
            pointers[n + i] = base + 8 * offsets[i]
    packed = (ctypes.c_void_p * max(n, 1)).from_address(pbase + 8 * n)
    return packed, [storage, pointers]


# The runtime routines of CPU kernels, one C source for both executables:
# compiled into a saved kernel's shared library, and included by
# python/TileModule.cpp into the native module for the JIT. They are the
# bfloat16/float16 truncations LLVM calls on x86 without AVX512-BF16, and
# device asserts, which jump back to tile_run_guarded so that the call
# raises instead of aborting the process.
RUNTIME_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu_runtime.c")


# cpu_runtime.c's tile_failure.
class _Failure(ctypes.Structure):
    _fields_ = [("message", ctypes.c_char * 512), ("file", ctypes.c_char * 512),
                ("function", ctypes.c_char * 256), ("line", ctypes.c_int32),
                ("block", ctypes.c_int64 * 3)]


# The function of a saved library that returns its kernel's signature.
SIGNATURE_SYMBOL = "tilelang_mlir_signature"


def signature_of(entry: str, params: Sequence, out_idx: Sequence[int]) -> str:
    """The kernel's signature as a saved library records it: canonical JSON
    of its entry, parameters (as the manifest writes them) and out_idx."""
    return json.dumps({"entry": entry, "out_idx": list(out_idx),
                       "params": [p if isinstance(p, dict) else p.to_json() for p in params]},
                      sort_keys=True, separators=(",", ":"))


def signature_source(signature: str) -> str:
    """C source of the function `SIGNATURE_SYMBOL` returning `signature`
    (every byte an octal escape: any name is a valid literal)."""
    literal = "".join(f"\\{b:03o}" for b in signature.encode())
    return f'const char *{SIGNATURE_SYMBOL}(void) {{ return "{literal}"; }}\n'


def _load_private_copy(library: bytes) -> ctypes.CDLL:
    """`library` (the bytes the loader read and checked) loaded from a
    private copy: dlopen of the artifact's own path returned the library
    loaded earlier from that path (a kernel saved again over the folder ran
    its old code), loaded other bytes than those checked if the file changed
    in between, and a later write to the file in place changed the loaded
    code under it (a crash)."""
    fd, private = tempfile.mkstemp(prefix="tilelang-cpu-kernel-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(library)
        return ctypes.CDLL(private)
    finally:
        os.unlink(private)  # the loaded mapping stays


class SharedLibraryExecutable:
    """A CPU kernel saved as a shared library (`Kernel.save`), loaded with
    ctypes: runs without MLIR or the compiler. With `signature` (the
    manifest's, `signature_of`), the library must record the same one."""

    def __init__(self, path: str, entry: str, library: bytes,
                 signature: Optional[str] = None):
        self.entry = entry
        self.path = path
        self.library = library  # the bytes, for saving the kernel again
        self._lib = _load_private_copy(library)
        if signature is not None:
            self._check_signature(signature)
        try:
            # The packed wrapper the JIT generates around the C interface
            # (`_mlir_` + name: one `void **` of argument pointers).
            fn = getattr(self._lib, "_mlir__mlir_ciface_" + entry)
        except AttributeError:
            raise ValueError(f"{path} has no entry point {entry!r}") from None
        self._address = ctypes.cast(fn, ctypes.c_void_p).value
        self._run = self._lib.tile_run_guarded
        self._run.restype = ctypes.c_int
        self._run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_Failure)]
        self._flush = None
        if b"printf" in library:
            libc = ctypes.CDLL(None)
            self._flush = lambda: libc.fflush(None)

    def _check_signature(self, expected: str) -> None:
        try:
            fn = getattr(self._lib, SIGNATURE_SYMBOL)
        except AttributeError:
            raise ValueError(f"{self.path} records no kernel signature (a library saved by an "
                             "older tilelang_mlir, or not a kernel's): nothing shows it is the "
                             "manifest's kernel; save the kernel again") from None
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        recorded = fn().decode(errors="replace")
        if recorded != expected:
            raise ValueError(f"{self.path} is the library of another kernel: it records "
                             f"{_describe(recorded)}, the manifest {_describe(expected)}")

    def shared_library(self, signature: Optional[str] = None) -> bytes:
        return self.library

    def native_entry(self):
        """(entry address, guarded runner address, flush after a call): what
        the native launcher calls (runtime/launcher.py)."""
        return (self._address, ctypes.cast(self._run, ctypes.c_void_p).value,
                self._flush is not None)

    def __call__(self, params: Sequence, values: Sequence) -> None:
        packed, keep = pack_arguments(params, values)
        failure = _Failure()
        stopped = self._run(self._address, ctypes.addressof(packed), ctypes.byref(failure))
        del keep
        if self._flush:
            self._flush()
        if stopped:
            raise DeviceAssertionError(failure.message.decode(errors="replace"),
                                       failure.file.decode(errors="replace"), failure.line,
                                       failure.function.decode(errors="replace"),
                                       tuple(failure.block))


def _describe(signature: str) -> str:
    """`entry(name: dtype[shape], ...)` of a signature, for messages."""
    try:
        sig = json.loads(signature)
        params = ", ".join(f"{p['name']}: {p['dtype']}{list(p.get('shape', []))}"
                           for p in sig["params"])
        return f"{sig['entry']}({params}) out_idx {sig['out_idx']}"
    except (ValueError, KeyError, TypeError):
        return repr(signature[:200])
