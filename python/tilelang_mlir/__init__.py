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
torch.compile traces through it; torch/library.py).

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
`T` namespace, `compiler` (one backend per target kind), the autotuner,
the kernel library (`kernels`), the PyTorch integration (`torch`: ops,
library, models, distributed, sparse), then this package.
"""

from .base.version import __version__

__all__ = ["compile", "jit", "autotune", "load", "Kernel", "TileLangError", "CompilationError",
           "DeviceAssertionError", "KernelCacheWarning", "TileLangWarning", "language", "library", "tools",
           "distributed",
           "__version__"]


# The package's names, imported when first used (importing the package must
# not load MLIR until it is needed): name -> (module, attribute; None for
# the module itself). test/python/test_layers.py reads it to place `tl.X`.
_LAZY = {
    "compile": ("compiler.compile", "compile"),
    "jit": ("compiler.compile", "jit"),
    "autotune": ("autotuner", "autotune"),
    "AutotuneResult": ("autotuner", "AutotuneResult"),
    "AutotuneError": ("autotuner", "AutotuneError"),
    # Ahead-of-time artifacts (Kernel.save): needs no MLIR.
    "load": ("runtime.loader", "load"),
    "Kernel": ("runtime.kernel", "Kernel"),
    "KernelCacheWarning": ("runtime.cache", "KernelCacheWarning"),
    "TileLangError": ("base.errors", "TileLangError"),
    "CompilationError": ("base.errors", "CompilationError"),
    "TileLangWarning": ("base.errors", "TileLangWarning"),
    "DeviceAssertionError": ("base.errors", "DeviceAssertionError"),
    "language": ("language", None),
    "tools": ("tools", None),
    # The PyTorch layer's (torch/).
    "library": ("torch.library", None),
    "distributed": ("torch.distributed", None),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tilelang_mlir' has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    found = importlib.import_module(f".{module}", __name__)
    return found if attribute is None else getattr(found, attribute)
