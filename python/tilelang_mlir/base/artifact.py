"""The compiled-artifact record: everything the compiler hands the runtime.

`compiler` builds a `CompiledArtifact` (the kernel's signature, the IR of
every pipeline stage, the final code and, for GPU kernels, the launch and
the binary); `runtime.Kernel` runs one; the disk kernel cache stores one
(`runtime/cache.py`) and `Kernel.save` writes one to a folder
(`runtime/artifact.py`). Plain data of the bottom layer: a saved or cached
kernel is read back without the frontend, the compiler or MLIR.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Sequence, Tuple

from .signature import Param
from .target import Target, parse_target


@dataclass(frozen=True)
class Launch:
    """How a GPU kernel is launched: the entry point in the binary, the grid
    (1 to 3 expressions of `base/grid.py`), the block (3 ints), the dynamic
    shared memory, the TMA tensor maps it takes before its parameters
    (`{"param", "box", "swizzle"}` each; see runtime/cuda.py), and how it is
    launched (`features`: `cooperative` (all blocks resident: a grid
    barrier), `pdl` (programmatic stream serialization: it waits for the
    kernels before it itself), `l2_hit_ratio` ((parameter index, hit ratio)
    pairs: an L2 access policy window over that tensor))."""

    entry: str
    grid: Tuple[dict, ...]
    block: Tuple[int, ...]
    shared_bytes: int
    tensormaps: Tuple[dict, ...] = ()
    features: Tuple[Tuple[str, object], ...] = ()

    def feature(self, name: str, default=None):
        return dict(self.features).get(name, default)

    def to_json(self) -> dict:
        out = {"entry": self.entry, "grid": [dict(e) for e in self.grid],
               "block": list(self.block), "shared_bytes": self.shared_bytes,
               "tensormaps": [dict(m) for m in self.tensormaps]}
        if self.features:
            out["features"] = {k: v for k, v in self.features}
        return out

    @staticmethod
    def of(entry: str, grid: Sequence[dict], block: Sequence[int], shared_bytes: int,
           tensormaps: Sequence[dict] = (), features: Optional[dict] = None) -> "Launch":
        feats = dict(features or {})
        if "l2_hit_ratio" in feats:  # JSON gives lists back
            feats["l2_hit_ratio"] = tuple((int(i), float(r)) for i, r in feats["l2_hit_ratio"])
        return Launch(entry, tuple(dict(e) for e in grid), tuple(block), shared_bytes,
                      tuple(dict(m) for m in tensormaps), tuple(sorted(feats.items())))


@dataclass(frozen=True)
class CompiledArtifact:
    """A compiled kernel.

    `target` is a Target ("cuda:sm_90a" strings are parsed); `stages` the IR
    after each named pipeline stage (empty for a kernel loaded from a saved
    artifact); `source` the final code: LLVM IR on the CPU, PTX on NVIDIA,
    AMDGPU assembly on AMD; `launch` and `binary` (cubin, HSA code object)
    for GPU kernels; `ptxas` the ptxas resource report of CUDA kernels.

    A GPU program of several `T.Kernel`s is a sequence of launches: its
    `parts` are the artifacts of its kernels, in program order, each with
    the program's signature (they run one after another on one stream);
    `launch` and `binary` are then None.
    """

    name: str
    params: Tuple[Param, ...]
    out_idx: Tuple[int, ...]
    target: Target
    stages: Dict[str, str] = field(default_factory=dict)
    source: str = ""
    launch: Optional[Launch] = None
    binary: Optional[bytes] = None
    ptxas: str = ""
    parts: Tuple["CompiledArtifact", ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "target", parse_target(self.target))
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "out_idx", tuple(self.out_idx))

    @property
    def kind(self) -> str:
        """"cpu", "cuda" or "rocm"."""
        return self.target.kind

    def with_signature(self, name: str, params: Sequence[Param],
                       out_idx: Sequence[int]) -> "CompiledArtifact":
        """This code under another signature (the disk cache stores code
        only: its key already covers the signature)."""
        return replace(self, name=name, params=tuple(params), out_idx=tuple(out_idx),
                       parts=tuple(p.with_signature(name, params, out_idx) for p in self.parts))

    # -- the disk cache's encoding ---------------------------------------------------
    # Entries keep the form they had before this record existed (stages,
    # source, and an "extra" object of launch data), so that existing caches
    # stay valid.

    def cache_parts(self) -> Tuple[Dict[str, str], str, dict]:
        """(stages, source, extra) as the disk cache stores them."""
        extra: dict = {}
        if self.launch is not None:
            extra = dict(self.launch.to_json(), cubin=self.binary)
            if self.kind == "cuda":
                extra["ptxas"] = self.ptxas
        return dict(self.stages), self.source, extra

    @staticmethod
    def from_cache_parts(name: str, params: Sequence[Param], out_idx: Sequence[int],
                         target, stages: Dict[str, str], source: str,
                         extra: dict) -> "CompiledArtifact":
        """The record of checked cache parts (`runtime/cache.py`)."""
        launch = None
        if extra:
            launch = Launch.of(extra["entry"], extra["grid"], extra["block"],
                               extra["shared_bytes"], extra.get("tensormaps", ()),
                               extra.get("features"))
        return CompiledArtifact(name, tuple(params), tuple(out_idx), target, dict(stages),
                                source, launch, extra.get("cubin"), extra.get("ptxas", ""))

