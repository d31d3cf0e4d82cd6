"""The compiled kernel object returned by tl.compile / tl.jit."""

from __future__ import annotations

import os
import sys
import time
from typing import Dict, List, Optional

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
        # How it is launched (cooperative, pdl, l2_hit_ratio; Launch.features).
        self.launch_features = dict(launch.features) if launch else {}
        self.ptxas_info = artifact.ptxas
        # What TileLang's JITKernel keeps besides: the arguments of the
        # compile that made it (the compatibility route fills them in) and the
        # autotuner's result.
        self.execution_backend = "auto"
        self.verbose = False
        self.target_host = None
        self.pass_configs: dict = {}
        self.compile_flags = None
        self.latency = self.config = self.ref_latency = None

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape) if p.kind == 'tensor' else ''}"
                        for p in self.params)
        return f"<tilelang_mlir.Kernel {self.name}({sig}) target={self.target}>"

    # Members of another API's kernel object that this class refuses, name
    # -> the error text (tilelang_mlir.compat fills it with TileLang's
    # refused JITKernel members); any other missing attribute raises the
    # usual AttributeError.
    refused_members: Dict[str, str] = {}

    def __getattr__(self, name):
        why = type(self).refused_members.get(name)
        if why is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise AttributeError(why)

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
        return self._run(argmod.bind(self.name, self.params, self.out_idx, args, self.device,
                                     self.unused_params))

    def _try_python(self, *args):
        """The Python path where the arguments pass its checks; NotImplemented
        (nothing raised, nothing run) where they do not."""
        try:
            binding = argmod.bind(self.name, self.params, self.out_idx, args, self.device,
                                  self.unused_params)
        except (TypeError, ValueError):
            return NotImplemented
        return self._run(binding)

    def _run(self, binding: argmod.Binding):
        self._executable(self.params, binding.values)
        if self.device == "cuda" and self._native_state() == "native":
            self._native_prepare()
        return self._results(binding)

    @staticmethod
    def _results(binding: argmod.Binding):
        """What a call on `binding` returns: None, its one output, or several
        (a tuple; a list under TileLang's conventions), as the fast path."""
        if not binding.outputs:
            return None
        if len(binding.outputs) == 1:
            return binding.outputs[0]
        return list(binding.outputs) if argmod.TILELANG_OUTPUTS else tuple(binding.outputs)

    _native_torch = None  # whether torch was imported when the plan was made
    _native_reason = ""  # why a kernel takes the Python path only

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
            self._native_setup()

    def _executables(self) -> list:
        """The executable of each part launched by a call, in order."""
        return list(getattr(self._executable, "executables", [self._executable]))

    def _native_prepare(self) -> bool:
        """Hands the fast path the current CUDA context, with each part's
        function loaded in it; False where the fast path does not serve this
        kernel or there is no context (the Python path then says why).

        The contexts belong to the kernel's plan (launch.cpp), which is made
        here first where the kernel has none yet: a context handed over
        before there is a plan would be dropped, and the kernel would take
        the Python path for good (a profiler's bound call made before the
        first call did that)."""
        from . import cuda

        if self._native_state() == "unset":
            self._native_setup()
        if self._native_state() != "native":
            return False
        try:
            ctx, device = cuda.current_context(f"kernel {self.name!r}")
            handle = int(ctx)
            if self._native_has_context(handle):
                return True
            exes = self._executables()
            fns = []
            for exe in exes:
                exe._function(ctx, device)  # loaded once per context
                fns.append(exe._handles[handle])
            sms = exes[0].multiprocessors(device) if any(e._uses_sms for e in exes) else 0
        except Exception:  # noqa: BLE001 (the Python path raises it, with its message)
            return False
        return bool(self._native_add_context(handle, device, sms, tuple(fns)))

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

    @property
    def unused_params(self) -> frozenset:
        """The indices of the tensor parameters the program never reads or
        writes (an optional input it was compiled without): those may be
        given as None (a null pointer, TileLang's nullptr). Read from the tile
        IR; empty for a kernel loaded without its IR."""
        cached = self.__dict__.get("_unused")
        if cached is None:
            cached = self._unused = _unused_args(self._stages.get("tile", ""), len(self.params))
        return cached

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

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        """TileLang's name for `get_source`: the final code (PTX on NVIDIA
        GPUs, LLVM IR on the CPU, AMDGPU assembly on AMD; not CUDA C++, which
        this compiler never writes). `kernel_only` is accepted: the code
        holds the kernel alone (the host side is `get_host_source()`)."""
        return self._source

    @property
    def kernel_source(self) -> str:
        """The final code (see `get_kernel_source`)."""
        return self._source

    def get_host_source(self) -> str:
        """The host side of the kernel. This compiler writes no host code:
        the kernel is launched from Python (runtime/cuda.py on NVIDIA GPUs,
        runtime/rocm.py on AMD, a call into the compiled module on the CPU);
        the text describes that launch: entry point, grid, block, shared
        memory and parameters."""
        import json

        lines = [f"// host side of kernel {self.name!r} on {self.target}: launched from Python "
                 "by tilelang-mlir's runtime (no host code is generated)"]
        parts = self.parts or [self]
        for i, part in enumerate(parts):
            if part.entry is not None:
                tag = f" (kernel {i} of {len(parts)})" if self.parts else ""
                lines += [f"// entry{tag}: {part.entry}",
                          f"// grid: {json.dumps(part.grid)}",
                          f"// block: {list(part.block)}",
                          f"// dynamic shared memory: {part.shared_bytes} bytes"]
        lines.append("// parameters: " + ", ".join(
            f"{p.name}: {p.dtype}{list(p.shape) if p.kind == 'tensor' else ''}"
            + (" (output)" if i in self.out_idx else "")
            for i, p in enumerate(self.params) if not p.hidden))
        return "\n".join(lines) + "\n"

    @property
    def host_source(self) -> str:
        return self.get_host_source()

    def show_source(self, which: str = "kernel") -> None:
        """Prints the kernel's code ("kernel"), its host side ("host") or
        both."""
        if which == "kernel":
            print(self.get_kernel_source())
        elif which == "host":
            print(self.get_host_source())
        elif which == "both":
            print("===== Kernel Source =====")
            print(self.get_kernel_source())
            print("===== Host Source =====")
            print(self.get_host_source())
        else:
            raise ValueError(f"which must be 'kernel', 'host' or 'both', got {which!r}")

    def export_sources(self, kernel_path: Optional[str] = None,
                       host_path: Optional[str] = None) -> None:
        """Writes the kernel's code and / or its host side to files."""
        if kernel_path is None and host_path is None:
            raise ValueError("At least one of kernel_path or host_path must be provided.")
        for path, text in ((kernel_path, self.get_kernel_source),
                           (host_path, self.get_host_source)):
            if path is not None:
                if os.path.dirname(path):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text())

    def print_source_code(self, which: str = "kernel", file: Optional[str] = None) -> None:
        """TileLang's older name: writes the kernel's code to `file`, or
        prints it (see `show_source`)."""
        if file is not None:
            self.export_sources(kernel_path=file)
        else:
            self.show_source(which)

    def show_ptx(self) -> None:
        print(self._ptx_or_raise())

    def export_ptx(self, path: str) -> None:
        """Writes the PTX of a CUDA kernel to `path`."""
        ptx = self._ptx_or_raise()
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(ptx)

    def _ptx_or_raise(self) -> str:
        if self.device != "cuda":
            from ..base.errors import TileLangError

            raise TileLangError(f"kernel {self.name!r} targets {self.target}: PTX exists only "
                                "for CUDA targets")
        return self._source

    def export_library(self, path: str) -> None:
        """TileLang's export of a compiled kernel: writes this compiler's
        ahead-of-time artifact into the folder `path` (see `save`);
        `tilelang_mlir.load(path)` gives the kernel back."""
        self.save(path)

    # -- the tuning result TileLang's autotuner keeps on the kernel --------------------
    def update_tuner_result(self, latency: float, config: dict, ref_latency: float):
        self.latency, self.config, self.ref_latency = latency, config, ref_latency
        return self

    def get_tuner_result(self) -> dict:
        if self.latency is None:
            raise ValueError("Tuning results are not available. Please tune the kernel first.")
        return {"latency": self.latency, "config": self.config,
                "ref_latency": self.ref_latency}

    def run_once(self, func=None):
        """Runs the kernel (or `func`) once on fresh random inputs."""
        return self.get_profiler().run_once(func)

    # -- resources ---------------------------------------------------------------------
    @property
    def resource_usage(self) -> dict:
        """{entry: {"n_regs", "n_spills", "n_max_threads"}} of a CUDA kernel,
        from ptxas's report; empty elsewhere."""
        import re

        if self.device != "cuda" or not self.ptxas_info:
            return {}
        regs = [int(x) for x in re.findall(r"Used (\d+) registers", self.ptxas_info)]
        spills = [int(a) + int(b) for a, b in re.findall(
            r"(\d+) bytes spill stores, (\d+) bytes spill loads", self.ptxas_info)]
        parts = self.parts or [self]
        out = {}
        for i, part in enumerate(parts):
            threads = 1
            for b in part.block or (1,):
                threads *= b
            out[part.entry or f"{self.name}_{i}"] = {
                "n_regs": regs[i] if i < len(regs) else None,
                "n_spills": spills[i] if i < len(spills) else None,
                "n_max_threads": threads}
        return out

    def _usage(self, key: str):
        usage = self.resource_usage
        return next(iter(usage.values()))[key] if usage else None

    @property
    def n_regs(self):
        """Registers per thread of a CUDA kernel (ptxas); None elsewhere."""
        return self._usage("n_regs")

    @property
    def n_spills(self):
        """Bytes of register spill stores and loads of a CUDA kernel; None elsewhere."""
        return self._usage("n_spills")

    @property
    def n_max_threads(self):
        """Threads of a block of a CUDA kernel; None elsewhere."""
        return self._usage("n_max_threads")

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


def _unused_args(tile_ir: str, count: int) -> frozenset:
    """Indices of the function arguments of `tile_ir` whose memory the
    function never reads or writes (when it has `count` arguments, one per
    parameter)."""
    import re

    m = re.search(r"func\.func @[\w$.]+\(", tile_ir)
    end = _closing_paren(tile_ir, m.end()) if m else None
    if end is None or len(re.findall(r"%arg\d+:", tile_ir[m.end():end])) != count:
        return frozenset()
    body = tile_ir[end + 1:]
    lines = body.splitlines()

    def used(i: int) -> bool:
        # A use that only reads the tensor's sizes or strides (a symbolic
        # size bound from it, the metadata of a StridedTensor) is none: the
        # tensor's memory is never touched. Given as None, its sizes come
        # from the other arguments' symbols (runtime/args.py).
        for line in lines:
            if re.search(rf"%arg{i}\b", line) and not re.match(
                    r"\s*.*?\s*=\s*memref\.(extract_strided_metadata|dim)\b", line):
                return True
        return False

    return frozenset(i for i in range(count) if not used(i))


def _closing_paren(text: str, start: int) -> Optional[int]:
    """The index of the parenthesis that closes the one open before `start`
    (parentheses inside quoted strings, a dimension symbol's expression
    `"(num_tokens + 1) // 2"`, do not count); None when it is not closed."""
    depth, quoted, i = 1, False, start
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


class Sequence:
    """The executable of a program of several kernels: each part's executable
    runs on the same bound arguments, in program order (on one stream: a
    kernel sees what the kernels before it wrote)."""

    def __init__(self, executables):
        self.executables = list(executables)

    def __call__(self, params, values):
        for exe in self.executables:
            exe(params, values)
