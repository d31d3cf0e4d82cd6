"""tilelang-mlir: an MLIR-based tile compiler.

    import tilelang_mlir as tl
    import tilelang_mlir.language as T

    @T.prim_func
    def main(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float32")):
        with T.Kernel(8, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0

    kernel = tl.compile(main, out_idx=[1], target="cpu")

TileLang's eager style works too: `@tl.jit` on the tile program itself,
with `T.const` sizes, tensors declared in the body and `T.empty` outputs
returned; `f.compile(M=..., ...)` gives a kernel, `f(a, b, ...)` compiles
once per new shape and runs (frontend/eager.py):

    @tl.jit
    def add(A, B, block):
        N = T.const("N")
        A: T.Tensor((N,), "float32")
        B: T.Tensor((N,), "float32")
        C = T.empty((N,), "float32")
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
        return C

`@tl.autotune(configs=[...], ref_prog=...)` on a kernel factory compiles
every config in parallel, checks and times each, and returns the fastest
(cached on disk).

`kernel.save(path)` writes a CUDA or CPU kernel as an ahead-of-time artifact
and `tl.load(path)` loads it back without the compiler (no MLIR needed).

`tl.library.custom_op("ns::op", kernel, ...)` makes compiled kernels a
PyTorch custom operator (a fake implementation from the signature, so
torch.compile traces through it; library.py).

`tl.distributed` allocates symmetric buffers (`T.SymmetricTensor`
arguments: a rank's part is `X.peer(r)`, `T.signal` / `T.wait` order the
writes) through PyTorch's symmetric memory, or simulates ranks in one
process for the CPU target.

`tl.tools` holds developer tools: pictures of fragment layouts and shared
placements (`tl.tools.plot_layout`), the lower trace as diffs
(`tl.tools.trace_report`).

`import tilelang_mlir` also gives MLIR's Python bindings with the tile
dialect inside (`tilelang_mlir.ir`, `tilelang_mlir.dialects.tile`, ...).

The package's layers, each importing only those before it
(test/python/test_layers.py checks it): `base` (dtypes, signatures, the chip
table, targets, grid expressions, the `CompiledArtifact` record; no MLIR),
`runtime` (running artifacts; no MLIR, frontend or compiler) and `tools`,
`language` (the T.* operations), `frontend` (tile programs to tile IR), the
`T` namespace, `compiler` (one backend per target kind), then this package
and the autotuner.
"""

from .base.version import __version__

__all__ = ["compile", "jit", "autotune", "load", "Kernel", "TileLangError", "CompilationError",
           "DeviceAssertionError", "KernelCacheWarning", "language", "library", "tools",
           "distributed",
           "__version__"]


def __getattr__(name):
    # Lazy: importing the package must not load MLIR until it is needed.
    if name in ("compile", "jit"):
        from .compiler import compile as _c

        return getattr(_c, name)
    if name in ("autotune", "AutotuneResult", "AutotuneError"):
        from . import autotuner

        return getattr(autotuner, name)
    if name == "load":
        # Ahead-of-time artifacts (Kernel.save): needs no MLIR.
        from .runtime.loader import load

        return load
    if name == "Kernel":
        from .runtime.kernel import Kernel

        return Kernel
    if name == "KernelCacheWarning":
        from .runtime.cache import KernelCacheWarning

        return KernelCacheWarning
    if name in ("TileLangError", "CompilationError", "DeviceAssertionError"):
        from .base import errors

        return getattr(errors, name)
    if name in ("language", "library", "tools", "distributed"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tilelang_mlir' has no attribute {name!r}")
