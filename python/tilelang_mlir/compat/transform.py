"""`tilelang.PassConfigKey` (also `tilelang.transform.PassConfigKey`).

The keys TileLang's example programs pass, with TileLang's "tl.*" strings
as values; `tilelang.compile(..., pass_configs={PassConfigKey.X: v})`
accepts each. What each does here:

| key | here |
|---|---|
| TL_DISABLE_WARP_SPECIALIZED | ours: sm_90a pipelines use cp.async groups instead of a TMA producer warpgroup |
| TL_DISABLE_TMA_LOWER | sets tl.disable_warp_specialized and tl.disable_tma_store: TMA copies exist here only in warp-specialized pipelines and the accumulator's TMA store |
| TL_ENABLE_FAST_MATH | accepted, no change: GPU math always uses the special-function approximations (what --use_fast_math gives); False does not make it IEEE-exact |
| TL_DISABLE_FAST_MATH | a true value is refused (not supported): IEEE-exact transcendental functions are not available |
| TL_ENABLE_PTXAS_VERBOSE_OUTPUT | accepted, no change: ptxas's report is always kept (kernel.ptxas_info) |
| TL_PTXAS_REGISTER_USAGE_LEVEL | accepted, no change: no ptxas options are passed |
| TL_DISABLE_THREAD_STORAGE_SYNC | accepted, no change: barriers go where tile-insert-barriers finds a shared-memory hazard |
| TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE | accepted, no change: shared memory is placed by our own planner |
| TL_LAYOUT_VISUALIZATION_ENABLE | a true value is refused: use tl.layout_plot_dir=FOLDER |
| TL_LAYOUT_VISUALIZATION_FORMATS | accepted, no change (pictures are PNG) |
| TL_DISABLE_CACHE, TL_TRACE_DIR, TL_LAYOUT_PLOT_DIR, TL_CLUSTER_SIZE, ... | this compiler's own keys (compiler/compile.py KNOWN_PASS_CONFIGS) |

The table the compiler reads is TILELANG_PASS_CONFIGS in
compiler/compile.py (reasons included); a key in neither table is an error.
"""

from __future__ import annotations

import enum

from ..compiler.compile import KNOWN_PASS_CONFIGS, TILELANG_PASS_CONFIGS


class PassConfigKey(str, enum.Enum):
    """Pass config keys: TileLang's (values as TileLang spells them) and
    this compiler's own."""

    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    # This compiler's own keys.
    TL_DISABLE_CACHE = "tl.disable_cache"
    TL_TRACE_DIR = "tl.trace_dir"
    TL_LAYOUT_PLOT_DIR = "tl.layout_plot_dir"
    TL_CLUSTER_SIZE = "tl.cluster_size"
    TL_DISABLE_TMA_STORE = "tl.disable_tma_store"
    TL_PERSISTENT_SMS = "tl.persistent_sms"
    TL_ENABLE_PINGPONG = "tl.enable_pingpong"
    TL_ENABLE_ROTATE = "tl.enable_rotate"
    TL_ROTATE_SCHED_BARRIER = "tl.rotate_sched_barrier"
    TL_DISABLE_LOP3 = "tl.disable_lop3"
    TL_NARROW_INDEX = "tl.narrow_index"

    def __str__(self) -> str:
        return self.value

    @property
    def meaning(self) -> str:
        """What the key does here."""
        if self.value in KNOWN_PASS_CONFIGS:
            return KNOWN_PASS_CONFIGS[self.value]
        action, ours, reason = TILELANG_PASS_CONFIGS[self.value]
        if action == "maps":
            return f"sets {', '.join(ours)}: {reason}"
        if action == "refuse":
            return f"a true value is not supported: {reason}"
        return f"accepted, no change: {reason}"


__all__ = ["PassConfigKey"]
