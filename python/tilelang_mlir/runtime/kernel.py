"""The compiled kernel object returned by tl.compile / tl.jit."""

from __future__ import annotations

import sys
import time
from typing import List

from ..base.artifact import CompiledArtifact
from ..base.errors import DeviceAssertionError
from . import args as argmod
from . import launcher as _launcher


class Kernel(_launcher.KernelBase):
    """A compiled tile program: call it with NumPy arrays or torch tensors.

    `out_idx` arguments are not passed; they are allocated and returned (one
    output alone, several as a tuple), as NumPy arrays when every input is a
    NumPy array and as torch tensors otherwise.

    A call takes the native fast path (runtime/launcher.py, launch.cpp: the
    checks, the outputs and the launch in C++, prepared once per kernel) when
    its arguments pass every check there, and the Python path
    (`_call_python`) otherwise, which raises the errors.
    """

    def __init__(self, artifact: CompiledArtifact, executable, parts=()):
        """`executable(params, values)` runs the code of `artifact` on bound
        arguments (`runtime/args.py`): the compiler's in-process JIT on the
        CPU, `runtime.cuda.CUDAExecutable`, a loaded shared library, ...
        A GPU program of several T.Kernels has the `Kernel` of each in
        `parts` (launched in order by a `Sequence`)."""
        self.artifact = artifact
        self.parts = list(parts)
        self.name = artifact.name
        self.params = list(artifact.params)
        self.out_idx = list(artifact.out_idx)
        self.target = artifact.target
        self.device = artifact.kind
        self._stages = artifact.stages
        self._source = artifact.source
        self._executable = executable
        # GPU kernels: the launch configuration and the code (None elsewhere).
        launch = artifact.launch
        self.entry = launch.entry if launch else None
        self.block = tuple(launch.block) if launch else None
        self.grid = [dict(e) for e in launch.grid] if launch else None
        self.shared_bytes = launch.shared_bytes if launch else None
        self.cubin = artifact.binary
        self.ptx = artifact.source if artifact.kind == "cuda" and artifact.source else None
        # TMA tensor maps the CUDA kernel takes before its parameters
        # ({"param", "box", "swizzle"} each; see runtime/cuda.py).
        self.tensormaps = [dict(m) for m in launch.tensormaps] if launch else []
        self.ptxas_info = artifact.ptxas

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape) if p.kind == 'tensor' else ''}"
                        for p in self.params)
        return f"<tilelang_mlir.Kernel {self.name}({sig}) target={self.target}>"

    def __copy__(self):
        """A shallow copy; its fast path is set up again at its first call."""
        other = type(self).__new__(type(self))
        other.__dict__.update({k: v for k, v in self.__dict__.items()
                               if not k.startswith("_native_")})
        return other

    # -- calls -----------------------------------------------------------------
    # `kernel(...)` is the base class's call: launch.cpp's fast path, or
    # `_call_python` (the base of a build without the native module).

    def _call_python(self, *args, **kwargs):
        """A call bound and checked by runtime/args.py (every error is raised
        here) and run by the executable."""
        if kwargs:
            raise TypeError(f"kernel {self.name!r} takes its arguments by position, got "
                            f"keyword argument(s) {', '.join(map(repr, kwargs))}")
        if self._native_torch is False and "torch" in sys.modules:
            self._native_refresh()
        return self._run(argmod.bind(self.name, self.params, self.out_idx, args, self.device))

    def _try_python(self, *args):
        """The Python path where the arguments pass its checks; NotImplemented
        (nothing raised, nothing run) where they do not."""
        try:
            binding = argmod.bind(self.name, self.params, self.out_idx, args, self.device)
        except (TypeError, ValueError):
            return NotImplemented
        return self._run(binding)

    def _run(self, binding: argmod.Binding):
        self._executable(self.params, binding.values)
        if self.device == "cuda" and self._native_state() == "native":
            self._native_prepare()
        if not binding.outputs:
            return None
        if len(binding.outputs) == 1:
            return binding.outputs[0]
        return list(binding.outputs) if argmod.TILELANG_OUTPUTS else tuple(binding.outputs)

    _native_torch = None  # whether torch was imported when the plan was made
    _native_reason = ""  # why a kernel takes the Python path only
    _native_seen = ()  # CUDA contexts handed to the fast path

    def _native_setup(self) -> None:
        """Builds this kernel's fast-path plan (called by the native base at
        the first call); a kernel it cannot serve takes the Python path."""
        try:
            spec, why = _launcher.plan_of(self)
        except Exception as e:  # noqa: BLE001 (the Python path serves any kernel)
            spec, why = None, f"{type(e).__name__}: {e}"
        self._native_reason = why
        self._native_torch = "torch" in sys.modules
        self._native_configure(spec)

    def _native_refresh(self) -> None:
        """Rebuilds the plan once torch is imported (a plan made before could
        not read torch tensors)."""
        if self._native_state() != "unset":
            self._native_seen = ()
            self._native_setup()

    def _executables(self) -> list:
        """The executable of each part launched by a call, in order."""
        return list(getattr(self._executable, "executables", [self._executable]))

    def _native_prepare(self) -> bool:
        """Hands the fast path the current CUDA context, with each part's
        function loaded in it; False where there is none (the Python path
        then says why)."""
        from . import cuda

        try:
            ctx, device = cuda.current_context(f"kernel {self.name!r}")
            handle = int(ctx)
            if handle in self._native_seen:
                return True
            exes = self._executables()
            fns = []
            for exe in exes:
                exe._function(ctx, device)  # loaded once per context
                fns.append(exe._handles[handle])
            sms = exes[0].multiprocessors(device) if any(e._uses_sms for e in exes) else 0
        except Exception:  # noqa: BLE001 (the Python path raises it, with its message)
            return False
        self._native_add_context(handle, device, sms, tuple(fns))
        self._native_seen = tuple(self._native_seen) + (handle,)
        return True

    def _encode_map(self, part: int, index: int, ptr: int, sizes, strides) -> bytes:
        """Tensor map `index` of part `part` for a tensor at `ptr` (the fast
        path keeps the encoded maps of recent tensors)."""
        exe = self._executables()[part]
        return exe.encoded_map(index, self.params, argmod.BoundTensor(None, ptr, tuple(sizes),
                                                                     tuple(strides))).raw()

    def _launch_failed(self, part: int, code: int, device: int, grid) -> None:
        self._executables()[part].launch_failed(code, tuple(grid), "cuLaunchKernelEx")

    def _assert_failed(self, message: bytes, file: bytes, line: int, function: bytes, block):
        raise DeviceAssertionError(message.decode(errors="replace"), file.decode(errors="replace"),
                                   line, function.decode(errors="replace"), tuple(block))

    def mlir(self, stage: str = "tile") -> str:
        """The IR at a named stage of the pipeline (see `stages`)."""
        if not self._stages:
            raise KeyError(f"kernel {self.name!r} keeps no IR (it was loaded from an "
                           "ahead-of-time artifact); get_source() gives its code")
        if stage not in self._stages:
            raise KeyError(f"unknown stage {stage!r}; this kernel has {list(self._stages)}")
        return self._stages[stage]

    @property
    def stages(self) -> List[str]:
        return list(self._stages)

    def get_source(self) -> str:
        """The final code: LLVM IR on the CPU, PTX on NVIDIA GPUs."""
        return self._source

    def get_kernel_source(self) -> str:
        """TileLang's name for `get_source`: the final code (PTX on NVIDIA
        GPUs, LLVM IR on the CPU; not CUDA C++, which this compiler never
        writes)."""
        return self._source

    def save(self, path: str) -> None:
        """Writes the kernel as an ahead-of-time artifact into the folder
        `path` (manifest.json and the code: the cubin and the PTX of a CUDA
        kernel, a shared library of a CPU kernel); `tl.load(path)` gives it
        back without the compiler or MLIR."""
        from . import artifact

        if self.parts:
            from ..base.errors import TileLangError

            raise TileLangError(f"kernel {self.name!r} is a program of {len(self.parts)} "
                                "T.Kernels; saving such programs is not supported yet (save "
                                "each kernel as its own program)")
        artifact.save(self, path)

    def get_profiler(self, tensor_supply_type=None):
        """A `Profiler` for this kernel: `do_bench` times it, `assert_allclose`
        checks it against a reference. `tensor_supply_type` (a
        `TensorSupplyType`) says how its random inputs are made."""
        from .profiler import Profiler

        return Profiler(self, tensor_supply_type)

    def time(self, *args, repeat: int = 10) -> float:
        """Median time of one call in seconds: wall time on the CPU; on the
        GPU, device time (CUDA events around replays of a CUDA graph of the
        launch, L2 flushed before each)."""
        if self.device == "cuda":
            return self.get_profiler().do_bench(*args, warmup=3, rep=repeat,
                                                cuda_graph=True) / 1e3
        self(*args)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self(*args)
            times.append(time.perf_counter() - t0)
        times.sort()
        return times[len(times) // 2]


class Sequence:
    """The executable of a program of several kernels: each part's executable
    runs on the same bound arguments, in program order (on one stream: a
    kernel sees what the kernels before it wrote)."""

    def __init__(self, executables):
        self.executables = list(executables)

    def __call__(self, params, values):
        for exe in self.executables:
            exe(params, values)
