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
"""

from __future__ import annotations

import ctypes
import os
from typing import Dict, List, Sequence, Tuple

from ..base.errors import DeviceAssertionError

_DESCRIPTORS: Dict[int, type] = {}


def descriptor_type(rank: int) -> type:
    """The ctypes struct of a rank-`rank` memref descriptor."""
    if rank not in _DESCRIPTORS:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_longlong)]
        if rank:
            fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
        _DESCRIPTORS[rank] = type(f"MemRefDescriptor{rank}", (ctypes.Structure,),
                                  {"_fields_": fields})
    return _DESCRIPTORS[rank]


_SCALAR_CTYPES = {
    "float16": None, "bfloat16": None, "float32": ctypes.c_float, "float64": ctypes.c_double,
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool,
    "handle": ctypes.c_uint64,  # T.ptr: an address
}


def pack_arguments(params: Sequence, values: Sequence) -> Tuple[ctypes.Array, List]:
    """The `void **` argument array of a call on bound arguments
    (`runtime/args.py`), and the storage it points into (keep both alive
    until the call returns)."""
    keep: List = []
    packed = (ctypes.c_void_p * len(params))()
    for i, (p, v) in enumerate(zip(params, values)):
        if p.kind == "tensor":
            rank = len(v.shape)
            desc = descriptor_type(rank)()
            desc.allocated = desc.aligned = v.data_ptr
            desc.offset = 0
            for d in range(rank):
                desc.sizes[d] = v.shape[d]
                desc.strides[d] = v.strides[d]
            ptr = ctypes.pointer(desc)
            slot = ctypes.pointer(ptr)
            keep.extend([desc, ptr, slot])
        else:
            ctype = _SCALAR_CTYPES.get(p.dtype.name)
            if ctype is None:
                raise TypeError(f"scalar arguments of type {p.dtype} are not supported")
            value = ctype(v)
            slot = ctypes.pointer(value)
            keep.extend([value, slot])
        packed[i] = ctypes.cast(slot, ctypes.c_void_p)
    return packed, keep


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


class SharedLibraryExecutable:
    """A CPU kernel saved as a shared library (`Kernel.save`), loaded with
    ctypes: runs without MLIR or the compiler."""

    def __init__(self, path: str, entry: str, library: bytes):
        self.entry = entry
        self.path = path
        self.library = library  # the bytes, for saving the kernel again
        self._lib = ctypes.CDLL(path)
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

    def shared_library(self) -> bytes:
        return self.library

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
