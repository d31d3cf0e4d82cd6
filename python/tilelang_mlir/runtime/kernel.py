"""The compiled kernel object returned by tl.compile / tl.jit."""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

from . import args as argmod


class Kernel:
    """A compiled tile program: call it with NumPy arrays or torch tensors.

    `out_idx` arguments are not passed; they are allocated and returned (one
    output alone, several as a tuple), as NumPy arrays when every input is a
    NumPy array and as torch tensors otherwise.
    """

    def __init__(self, name: str, params, out_idx: Sequence[int], target,
                 stages: Dict[str, str], source: str, executable, device: str, *,
                 entry: Optional[str] = None, block: Optional[Sequence[int]] = None,
                 grid: Optional[List[dict]] = None, shared_bytes: Optional[int] = None,
                 cubin: Optional[bytes] = None, ptx: Optional[str] = None,
                 tensormaps: Optional[Sequence[dict]] = None):
        self.name = name
        self.params = list(params)
        self.out_idx = list(out_idx)
        self.target = target
        self._stages = stages
        self._source = source
        self._executable = executable
        self.device = device
        # CUDA kernels: the launch configuration and the code (None elsewhere).
        self.entry = entry
        self.block = tuple(block) if block is not None else None
        self.grid = list(grid) if grid is not None else None
        self.shared_bytes = shared_bytes
        self.cubin = cubin
        self.ptx = ptx
        # TMA tensor maps the CUDA kernel takes before its parameters
        # ({"param", "box", "swizzle"} each; see runtime/cuda.py).
        self.tensormaps = [dict(m) for m in tensormaps] if tensormaps is not None else []

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape) if p.kind == 'tensor' else ''}"
                        for p in self.params)
        return f"<tilelang_mlir.Kernel {self.name}({sig}) target={self.target}>"

    def __call__(self, *args):
        binding = argmod.bind(self.name, self.params, self.out_idx, args, self.device)
        self._executable(self.params, binding.values)
        if not binding.outputs:
            return None
        if len(binding.outputs) == 1:
            return binding.outputs[0]
        return tuple(binding.outputs)

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

    def save(self, path: str) -> None:
        """Writes the kernel as an ahead-of-time artifact into the folder
        `path` (manifest.json, the cubin and the PTX); `tl.load(path)` gives
        it back without the compiler. CUDA kernels only."""
        from . import artifact

        artifact.save(self, path)

    def get_profiler(self):
        """A `Profiler` for this kernel: `do_bench` times it, `assert_allclose`
        checks it against a reference."""
        from .profiler import Profiler

        return Profiler(self)

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
