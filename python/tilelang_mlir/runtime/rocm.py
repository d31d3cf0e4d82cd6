"""ROCm kernels compile only: this package has no HIP runtime.

A kernel compiled for `rocm:gfx942` carries its HSA code object
(`kernel.cubin`, the bytes of a shared ELF with the kernel and its `.kd`
descriptor) and assembly (`kernel.get_source()`), for inspection or for
loading with HIP elsewhere (hipModuleLoadData); calling it raises.
"""


class NoROCmRuntime(RuntimeError):
    """Raised when a ROCm kernel is called: there is no HIP runtime here."""


class CompileOnly:
    def __init__(self, name: str, target: str):
        self.name = name
        self.target = target

    def __call__(self, params, values) -> None:
        raise NoROCmRuntime(
            f"kernel {self.name!r} was compiled for {self.target}, but this build of "
            "tilelang-mlir has no HIP runtime: ROCm kernels compile only (kernel.get_source() "
            "is the assembly, kernel.cubin the HSA code object)")
