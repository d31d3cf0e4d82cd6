"""Running CPU kernels through MLIR's ExecutionEngine.

The entry function is emitted with `llvm.emit_c_interface`: every tensor is
passed as a pointer to a strided memref descriptor {allocated pointer, aligned
pointer, offset, sizes[rank], strides[rank]}, scalars by value.

A failing `T.device_assert` stops the kernel and the call raises
DeviceAssertionError (see run_guarded in the native module).
"""

from __future__ import annotations

import ctypes
from typing import Dict, Sequence

from ..language import dtypes as dt

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
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "bool": ctypes.c_bool,
}


class CPUExecutable:
    """A JIT-compiled CPU module (LLVM dialect text) and its entry point."""

    def __init__(self, llvm_dialect_text: str, entry: str, opt_level: int = 3):
        from .. import ir
        from .._mlir_libs import _tile
        from .._mlir_libs._mlirExecutionEngine import ExecutionEngine

        self.entry = entry
        self._ctx = ir.Context()
        # A context owns a thread pool (one thread per core) while it lives,
        # and this one lives as long as the kernel: without this, every CPU
        # kernel kept two threads and about 18 MB, and a process that made
        # a few hundred of them could no longer start threads.
        self._ctx.enable_multithreading(False)
        with self._ctx:
            self._module = ir.Module.parse(llvm_dialect_text)
            self._engine = ExecutionEngine(self._module, opt_level=opt_level)
        for name, address in _tile.runtime_symbols().items():
            self._engine.raw_register_runtime(name, ctypes.c_void_p(address))
        address = self._engine.raw_lookup("_mlir_ciface_" + entry)
        if not address:
            raise RuntimeError(f"the JIT module has no entry point {entry!r}")
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        # Kernels with T.device_assert run through a native trampoline that
        # the failing check jumps back to (the kernel stops, the call raises).
        self._guarded = None
        if "@__tile_assert_fail" in llvm_dialect_text:
            self._guarded = (_tile.run_guarded, address)
        # Kernels with T.print write through C's stdio: flush it after each
        # call so that output interleaves with Python's.
        self._flush = None
        if "@printf" in llvm_dialect_text:
            libc = ctypes.CDLL(None)
            self._flush = lambda: libc.fflush(None)

    def __call__(self, params: Sequence, values: Sequence) -> None:
        keep = []
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
        if self._guarded is None:
            self._fn(packed)
            failure = None
        else:
            run, address = self._guarded
            failure = run(address, ctypes.addressof(packed))
        if self._flush:
            self._flush()
        if failure is not None:
            from ..frontend.errors import DeviceAssertionError

            raise DeviceAssertionError(*failure)
