"""The CPU backend: pass pipeline, LLVM IR, and the in-process JIT.

    tile IR -> tile-legalize-conversions -> convert-tile-to-scf (loops)
            -> LLVM dialect (emit_c_interface) -> LLVM IR

The kernel runs in this process through MLIR's ExecutionEngine
(`CPUExecutable`); `Kernel.save` links its object code into a shared library
that `runtime/cpu.py` loads without MLIR. The calling convention is
described there. A failing `T.device_assert` stops the kernel and the call
raises DeviceAssertionError (see run_guarded in the native module).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from typing import List, Sequence

from ..base.artifact import CompiledArtifact
from ..base.errors import CompilationError, DeviceAssertionError
from ..runtime.cpu import RUNTIME_C, pack_arguments, signature_source
from .backend import Backend
from .pipeline import Stage, safe_access, translate_to_llvmir


def cpu_stages(pass_configs: dict = None) -> List[Stage]:
    return [
        Stage("tile-opt", ["func.func(tile-check-uninitialized)", "func.func(tile-legalize-conversions)", "lower-affine", "canonicalize", "cse"]
                          + safe_access(pass_configs)),
        Stage("loops", ["convert-tile-to-scf", "canonicalize", "cse",
                        "loop-invariant-code-motion"]),
        # Every expansion but fma's (mul + add, two roundings): T.hfma2's
        # pairs become llvm.fma (one rounding in float32, then to 16 bits).
        # Math functions LLVM has no intrinsic for (erf, atan2, ...) call
        # libm (math-to-libm on what convert-to-llvm leaves, f16/bf16
        # through f32).
        Stage("llvm", ["arith-expand{include-bf16=true}",
                       "math-expand-ops{ops=" + ",".join(_CPU_EXPANSIONS) + "}",
                       "math-extend-to-supported-types",
                       # Views the loops still read through (a gemm on
                       # `S[k % 2, :, :]`): convert-to-llvm has no lowering
                       # of memref.subview; its address arithmetic instead.
                       "expand-strided-metadata", "lower-affine",
                       "convert-scf-to-cf", "convert-to-llvm", "convert-math-to-libm",
                       "convert-to-llvm", "reconcile-unrealized-casts", "canonicalize"]),
    ]


# math-expand-ops' expansions (MLIR 22) without fma, and without powf: its
# exp(y log x) gets C's special cases wrong (pow(-2, 3), pow(0, 0)); libm's
# pow is called instead.
_CPU_EXPANSIONS = ("ctlz", "sinh", "cosh", "tan", "tanh", "asinh", "acosh", "atanh", "ceil",
                   "exp2", "fpowi", "round", "roundeven", "rsqrt", "clampf")


def _mark_c_interface(module) -> None:
    from .. import ir

    for op in module.body.operations:
        if op.operation.name == "func.func":
            op.operation.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


class CPUBackend(Backend):
    """`cpu`: loops on the host, JIT-compiled in this process."""

    kind = "cpu"

    def stages(self, target, pass_configs: dict) -> List[Stage]:
        return cpu_stages(pass_configs)

    def lower(self, func, module, runner, target, pass_configs: dict, out_idx,
              stages: dict) -> CompiledArtifact:
        _mark_c_interface(module)
        stages.update(runner.run(module, self.stages(target, pass_configs)))
        return CompiledArtifact(func.name, func.params, out_idx, target, stages,
                                translate_to_llvmir(module.operation, module.context))

    def executable(self, artifact: CompiledArtifact):
        return CPUExecutable(artifact.stages["llvm"], artifact.name)


def _c_compiler() -> List[str]:
    """The C compiler that links saved CPU kernels."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        return [cc]
    try:
        import ziglang  # noqa: F401  (ships clang as `zig cc`)
    except ImportError:
        raise CompilationError("saving a CPU kernel links a shared library and needs a C "
                               "compiler: install one (cc on PATH or $CC) or "
                               "pip install ziglang") from None
    return [sys.executable, "-m", "ziglang", "cc"]


def link_shared_library(obj: str, folder: str, signature: str) -> bytes:
    """The shared library of a kernel's object file `obj`, with the runtime
    routines of CPU kernels (`runtime/cpu_runtime.c`) and the kernel's
    `signature` (`runtime.cpu.signature_of`), which loading checks."""
    out = os.path.join(folder, "kernel.so")
    sig = os.path.join(folder, "signature.c")
    with open(sig, "w") as f:
        f.write(signature_source(signature))
    # -Bsymbolic: the kernel calls its own functions, not a namesake in the
    # process (a kernel named `main` called the interpreter's main).
    proc = subprocess.run(_c_compiler() + ["-shared", "-fPIC", "-O2", "-Wl,-Bsymbolic", "-o", out,
                                           obj, RUNTIME_C, sig,
                                           "-lm"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompilationError(f"linking the CPU kernel's shared library failed:\n"
                               f"{proc.stderr.strip()}")
    with open(out, "rb") as f:
        return f.read()


class CPUExecutable:
    """A JIT-compiled CPU module (LLVM dialect text) and its entry point, run
    in this process by MLIR's ExecutionEngine."""

    def __init__(self, llvm_dialect_text: str, entry: str, opt_level: int = 3):
        from .. import ir
        from .._mlir_libs import _tile
        from .._mlir_libs._mlirExecutionEngine import ExecutionEngine

        self.entry = entry
        self._library = None
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
        self._address = address
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
        packed, keep = pack_arguments(params, values)
        if self._guarded is None:
            self._fn(packed)
            failure = None
        else:
            run, address = self._guarded
            failure = run(address, ctypes.addressof(packed))
        del keep
        if self._flush:
            self._flush()
        if failure is not None:
            raise DeviceAssertionError(*failure)

    def native_entry(self):
        """(entry address, guarded runner address or 0, flush after a call):
        what the native launcher calls (runtime/launcher.py)."""
        from .._mlir_libs import _tile

        guarded = _tile.run_guarded_address() if self._guarded is not None else 0
        return self._address, guarded, self._flush is not None

    def shared_library(self, signature: str) -> bytes:
        """This kernel as a self-contained shared library (what `Kernel.save`
        writes): the JIT's object code linked with the runtime routines
        (`runtime/cpu.py`) and its `signature` by the C compiler (`$CC`,
        `cc`, or `python -m ziglang cc`)."""
        if self._library is None:
            with tempfile.TemporaryDirectory(prefix="tilelang-cpu-") as d:
                obj = os.path.join(d, "kernel.o")
                self._engine.dump_to_object_file(obj)
                self._library = link_shared_library(obj, d, signature)
        return self._library
