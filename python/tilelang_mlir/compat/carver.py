"""`tilelang.carver` / `tilelang.carver.arch`: device facts as TileLang's
`CUDA(target)` and `CDNA(target)` give them (name, SM count, shared memory
per block, warp size, compute capability, L2 size), from the driver and the
chip table; a clear RuntimeError without a GPU. `tilelang.carver.template`
has our MatmulTemplate recommender (carver_template.py); TileLang's other
templates and its roller (TVM schedule search) are not supported."""

from __future__ import annotations

from ..base import chips
from . import driver  # noqa: F401
from .carver_rasterization import (NoRasterization, Rasterization2DColumn,  # noqa: F401
                                   Rasterization2DRow)
from .carver_template import Hint, MatmulTemplate  # noqa: F401


class TileDevice:
    """A GPU's facts (TileLang's base class of CUDA and CDNA)."""

    platform = ""

    def __init__(self, target="cuda", device_id: int = 0):
        props = driver.get_cuda_device_properties(device_id)
        self.target = target
        self.device_id = device_id
        self.name = props.name
        self.compute_max_core = int(props.multi_processor_count)
        self.sm_count = self.compute_max_core
        self.smem_cap = driver.get_max_dynamic_shared_size_bytes(device_id)
        self.max_smem_usage = self.smem_cap
        self.l2_cache_size_bytes = driver.get_l2_cache_size(device_id)
        self.reg_cap = driver.get_registers_per_block(device_id)
        self.total_global_memory = int(props.total_memory)
        self._set_arch(props)

    def __repr__(self) -> str:
        return f"{self.platform}({self.name!r}, arch={self.arch!r}, sms={self.compute_max_core})"


class CUDA(TileDevice):
    """An NVIDIA GPU: `CUDA("cuda")`."""

    platform = "CUDA"

    def _set_arch(self, props) -> None:
        import torch

        if torch.version.hip is not None:
            raise RuntimeError("CUDA(...) describes an NVIDIA GPU; this one is AMD: use CDNA")
        self.warp_size = 32
        self.sm_version = props.major * 10 + props.minor
        self.compute_capability = f"{props.major}{props.minor}"
        self.arch = chips.nvidia_chip_for_capability(props.major, props.minor)


class CDNA(TileDevice):
    """An AMD GPU: `CDNA("hip")`."""

    platform = "CDNA"

    def _set_arch(self, props) -> None:
        self.warp_size = 64
        self.arch = getattr(props, "gcnArchName", "").split(":")[0]
        self.compute_capability = self.arch


def auto_infer_current_arch():
    """CUDA or CDNA, whichever the visible GPU is."""
    import torch

    return CDNA("hip") if torch.version.hip is not None else CUDA("cuda")


__all__ = ["CUDA", "CDNA", "TileDevice", "auto_infer_current_arch", "driver", "MatmulTemplate",
           "Hint", "NoRasterization", "Rasterization2DRow", "Rasterization2DColumn"]
