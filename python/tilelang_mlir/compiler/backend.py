"""One backend per target kind: what `tl.compile` does after the frontend.

A backend runs its pass pipeline on the emitted tile IR, turns the result
into a `CompiledArtifact` (base/artifact.py), and makes the executable that
runs an artifact in this process. `compiler/cpu.py`, `compiler/cuda.py` and
`compiler/rocm.py` each hold one; `compile.backend_for` picks it by the
target's kind.
"""

from __future__ import annotations

from typing import Dict, List

from ..base.artifact import CompiledArtifact


class Backend:
    """The compiler's side of one target kind."""

    kind = ""

    def stages(self, target, pass_configs: dict) -> List:
        """The pass pipeline (a list of `pipeline.Stage`)."""
        raise NotImplementedError

    def lower(self, func, module, runner, target, pass_configs: dict, out_idx,
              stages: Dict[str, str]) -> CompiledArtifact:
        """Runs the pipeline on `module` (the emitted tile IR of `func`,
        whose text is already in `stages`) with `runner`; returns the
        artifact."""
        raise NotImplementedError

    def executable(self, artifact: CompiledArtifact):
        """What runs `artifact` in this process (`runtime.Kernel` calls it)."""
        raise NotImplementedError

    def kernel(self, artifact: CompiledArtifact):
        """The `runtime.Kernel` of `artifact`."""
        from ..runtime.kernel import Kernel

        return Kernel(artifact, self.executable(artifact))

    def sequence(self, artifact: CompiledArtifact):
        """The `runtime.Kernel` of a program of several kernels (`artifact.parts`):
        each part's kernel runs in order on the same bound arguments."""
        from ..runtime.kernel import Kernel, Sequence

        parts = [self.kernel(p) for p in artifact.parts]
        return Kernel(artifact, Sequence([k._executable for k in parts]), parts=parts)

