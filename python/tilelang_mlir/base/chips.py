"""One description of every chip the compiler targets.

Each row is plain data: literals only, no logic, and the module imports
nothing from the package, because C++ reads the same table: the build runs
`cmake/gen_chip_table.py`, which loads this file by its path and writes
it as the X-macro `dialects/Tile/Utils/Chips.inc` in the build tree, and
`lookupChip` (`dialects/Tile/Utils/Chips.h`) serves it to the passes (the
shared-memory budget and warp size of the GPU lowering, the compute
capability of the vector reductions, the chips `convert-tile-to-nvvm` and
`convert-tile-to-rocdl` accept). Every Python place that needs a fact about
a chip (its PTX version, whether it has warpgroup MMA, its warp size, its
shared memory) reads it here, by the chip's name, instead of parsing the
name. A change here rebuilds the C++ that reads it.

Fields:

- `name`: the chip as targets spell it (`cuda:sm_90a`, `rocm:gfx942`).
- `vendor`: "nvidia" or "amd".
- `arch`: the architecture number: the compute capability for NVIDIA (90 for
  sm_90a), the gfx number read as hexadecimal for AMD (0x942).
- `warp_size`: threads of a warp (NVIDIA) or wavefront (AMD).
- `max_shared_bytes`: the most shared memory (LDS on AMD) one block may use,
  dynamic shared memory opted in (CUDA programming guide, compute
  capabilities table; the AMD CDNA ISA guides).
- `ptx_version`: the PTX ISA version the CUDA pipeline asks LLVM for, times
  ten (81: `+ptx81`); 0 on AMD. PTX 8.0 covers sm_75 to sm_90a (wgmma,
  setmaxnreg) and CUDA 12 ptxas; sm_90 and later take 8.1 (CUDA 12.1) for
  the vector reductions (red.global.add.v2.f32) that fragment atomic adds
  use. LLVM's NVPTX backend aborts on Blackwell (sm_100, sm_120) with these
  versions, so those chips are not in the table.
- `sms`: multiprocessors of the reference part (H100 SXM / H200: 132; A100:
  108), the persistent-kernel grid assumed at compile time; 0 where parts
  differ too much to pick one. The runtime launches persistent kernels with
  the count of the device it runs on.
- `device_default`: a GPU of this compute capability compiles for this chip
  (sm_90a, not sm_90, for a Hopper GPU: the arch-specific target has wgmma).
- The instruction families the compiler uses on the chip: `mma_sync`
  (NVIDIA warp MMA), `wgmma` (warpgroup MMA, sm_90a), `tma` (the Tensor
  Memory Accelerator copies of warp-specialized pipelines: used on sm_90a
  only), `setmaxnreg`, `mfma` (AMD matrix cores).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Chip:
    name: str
    vendor: str
    arch: int
    warp_size: int
    max_shared_bytes: int
    ptx_version: int
    sms: int
    device_default: bool
    mma_sync: bool
    wgmma: bool
    tma: bool
    setmaxnreg: bool
    mfma: bool


# name, vendor, arch, warp_size, max_shared_bytes, ptx_version, sms,
# device_default, mma_sync, wgmma, tma, setmaxnreg, mfma
CHIPS: Tuple[Chip, ...] = (
    Chip("sm_75", "nvidia", 75, 32, 65536, 80, 40, True, True, False, False, False, False),
    Chip("sm_80", "nvidia", 80, 32, 166912, 80, 108, True, True, False, False, False, False),
    Chip("sm_86", "nvidia", 86, 32, 101376, 80, 0, True, True, False, False, False, False),
    Chip("sm_87", "nvidia", 87, 32, 166912, 80, 0, True, True, False, False, False, False),
    Chip("sm_89", "nvidia", 89, 32, 101376, 80, 0, True, True, False, False, False, False),
    Chip("sm_90", "nvidia", 90, 32, 232448, 81, 132, False, True, False, False, False, False),
    Chip("sm_90a", "nvidia", 90, 32, 232448, 81, 132, True, True, True, True, True, False),
    Chip("gfx90a", "amd", 0x90A, 64, 65536, 0, 0, True, False, False, False, False, True),
    Chip("gfx942", "amd", 0x942, 64, 65536, 0, 0, True, False, False, False, False, True),
    Chip("gfx950", "amd", 0x950, 64, 163840, 0, 0, True, False, False, False, False, True),
)

# The chip a bare `rocm` target compiles for.
DEFAULT_ROCM_CHIP = "gfx942"

# Threads of a CPU "warp": the CPU backend runs a block's threads as loops.
CPU_WARP_SIZE = 1

_BY_NAME: Dict[str, Chip] = {c.name: c for c in CHIPS}


def chip(name: str) -> Chip:
    """The chip called `name` ("sm_90a"); KeyError naming the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown chip {name!r}; known: {', '.join(_BY_NAME)}") from None


def find(name: Optional[str]) -> Optional[Chip]:
    """The chip called `name`, or None."""
    return _BY_NAME.get(name) if name else None


def names(vendor: str) -> Tuple[str, ...]:
    """The chips of `vendor`, in table order."""
    return tuple(c.name for c in CHIPS if c.vendor == vendor)


def nvidia_chip_for_capability(major: int, minor: int) -> str:
    """The chip a GPU of compute capability major.minor compiles for (its
    name even when the table lacks it, for the caller's error message)."""
    arch = 10 * major + minor
    for c in CHIPS:
        if c.vendor == "nvidia" and c.arch == arch and c.device_default:
            return c.name
    return f"sm_{major}{minor}"
