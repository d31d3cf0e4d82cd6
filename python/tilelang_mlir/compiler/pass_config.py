"""The pass configs this compiler understands: one record per key.

`tl.compile(..., pass_configs={...})` validates its keys and values against
`PASS_CONFIGS` (`check_pass_configs`), the CUDA pipeline reads them, and the
documentation's pass-config reference is rendered from the same records
(`scripts/gen_reference.py`), so the three cannot drift apart. TileLang's
own `PassConfigKey` names that are not ours are translated before the check
(`compiler/compile.py`, `TILELANG_PASS_CONFIGS`).

A record: `name` (the key), `type` ("bool", "int" or "path"), `default`
(the value when the key is absent; `default_text` says it in words where it
depends on the chip), `targets` (where it has an effect), `meaning`, and for
ints the accepted values (`minimum`, `maximum`, `multiple_of`, `zero_ok`:
0 is accepted below the minimum, meaning off).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Optional


@dataclass(frozen=True)
class PassConfig:
    name: str
    type: str
    default: Any
    targets: str
    meaning: str
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    multiple_of: Optional[int] = None
    zero_ok: bool = False
    default_text: Optional[str] = None

    def accepted(self) -> str:
        """The accepted values, in words."""
        if self.type == "bool":
            return "True or False"
        if self.type == "path":
            return "a folder path"
        words = "an int"
        if self.multiple_of:
            words = f"a multiple of {self.multiple_of}"
        if self.minimum is not None and self.maximum is not None:
            words += f" from {self.minimum} to {self.maximum}"
        elif self.minimum is not None:
            words += f" >= {self.minimum}"
        if self.zero_ok:
            words = "0 (off) or " + words
        return words

    def default_words(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default is None:
            return "unset"
        return repr(self.default)

    def check(self, value: Any) -> None:
        """Raises ValueError naming the key when `value` is not accepted."""
        if self.type == "bool":
            ok = isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))
        elif self.type == "path":
            ok = isinstance(value, (str, os.PathLike))
        else:
            ok = isinstance(value, int) and not isinstance(value, bool)
            if ok and not (self.zero_ok and value == 0):
                ok = ((self.minimum is None or value >= self.minimum)
                      and (self.maximum is None or value <= self.maximum)
                      and (not self.multiple_of or value % self.multiple_of == 0))
        if not ok:
            raise ValueError(f"pass config {self.name!r} must be {self.accepted()}, "
                             f"got {value!r}")


_CUDA = "CUDA targets"
_CP_ASYNC = "CUDA targets, cp.async pipelines"
_WS = "sm_90a, warp-specialized kernels"


def _records(*records: PassConfig) -> Dict[str, PassConfig]:
    return {r.name: r for r in records}


PASS_CONFIGS: Dict[str, PassConfig] = _records(
    PassConfig("tl.trace_dir", "path", None, "every target",
               "Write the IR after every pass, numbered, into this folder (the lower trace; "
               "`TILELANG_MLIR_TRACE` does the same; `tl.tools.trace_report` shows it as "
               "diffs). A compile with it always runs the passes."),
    PassConfig("tl.disable_cache", "bool", False, "every target",
               "Compile even if a cached kernel exists, and do not cache it."),
    PassConfig("tl.layout_plot_dir", "path", None, _CUDA,
               "Write a picture (PNG) of every fragment layout and shared-memory placement "
               "into this folder (`tl.tools.plot_layout`). A compile with it always runs the "
               "passes."),
    PassConfig("tl.disable_safe_memory_legalize", "bool", False, "every target",
               "Leave element loads and stores of global buffers unchecked. By default an "
               "access whose indices the compiler cannot prove in range is guarded: an "
               "out-of-range load reads 0 (or `T.annotate_safe_value`'s value) and an "
               "out-of-range store is dropped (tile-legalize-safe-access; TileLang's "
               "`TL_DISABLE_SAFE_MEMORY_ACCESS`)."),
    PassConfig("tl.disable_warp_specialized", "bool", False, "sm_90a",
               "Pipeline with cp.async groups instead of a TMA producer warpgroup "
               "(tile-warp-specialize)."),
    PassConfig("tl.cluster_size", "int", 2, "sm_90a", "Blocks per cluster sharing multicast "
               "TMA copies; 1 turns clusters off.", minimum=1, maximum=8),
    PassConfig("tl.disable_tma_store", "bool", False, _WS,
               "Write the accumulator with direct stores instead of shared memory and TMA "
               "stores."),
    PassConfig("tl.enable_loop_thread_index", "bool", False, _CUDA,
               "Recompute the thread-dependent addresses of a loop body in the loop instead "
               "of letting LLVM hoist them out of it and hold them in registers across it: "
               "fewer registers and spills, more instructions (convert-tile-to-nvvm "
               "loop-thread-index=true)."),
    PassConfig("tl.producer_registers", "int", 24, _WS,
               "The registers a thread of the TMA producer warpgroup keeps (setmaxnreg); "
               "the consumers get what it releases, up to 240 (convert-tile-to-nvvm "
               "producer-registers).", minimum=24, maximum=256, multiple_of=8),
    PassConfig("tl.persistent_sms", "int", None, _WS,
               "A constant grid of more tiles than this runs as a persistent kernel; it "
               "launches one block per multiprocessor of the device it runs on; 0 turns it "
               "off. Grids of three dimensions and tiles of differing work (causal "
               "attention's) become persistent only when the tile's copies before the loop "
               "can be issued early, on two tile slots.", minimum=0,
               default_text="the chip's multiprocessor count (132 on the H100 and H200)"),
    PassConfig("tl.producer_tile_copies", "bool", False,
               "sm_90a, warp-specialized kernels that are not persistent",
               "The TMA producer also issues the copies before the pipelined loop into "
               "buffers of their own (attention's K and V in the backward, Q in the "
               "forward), once, and the consumers wait for them instead of copying with "
               "their own threads (tile-warp-specialize producer-tile-copies=true)."),
    PassConfig("tl.early_tile_release", "bool", False,
               "sm_90a, persistent warp-specialized kernels",
               "Where nothing uses the tile copies' buffers after the pipelined loop, the "
               "consumers free them right after it (the next tile's copies land during the "
               "epilogue), on one slot where two do not fit in shared memory "
               "(tile-warp-specialize early-tile-release=true)."),
    PassConfig("tl.enable_pingpong", "bool", False, "sm_90a",
               "Consumer warpgroups take turns at the gemms of attention-like loops, one turn "
               "for both gemms of a rotated iteration (tile-warp-specialize pingpong=true). "
               "Alone it is slower on the H200's FlashAttention; with `tl.enable_rotate` it "
               "is the fastest schedule of two consumer warpgroups (the `PASS_CONFIGS` of "
               "`tilelang_mlir.kernels.attention.flash_attn`)."),
    PassConfig("tl.enable_rotate", "bool", False, "sm_90a",
               "Rotate attention-like consumer loops so that S = Q K^T of the next tile and "
               "O += P V of this one are in flight while the softmax runs; K and V get "
               "barrier rings of their own (tile-warp-specialize rotate=true). Off by "
               "default: three consumer warpgroups spill with it."),
    PassConfig("tl.rotate_sched_barrier", "bool", False, "sm_90a, with tl.enable_rotate",
               "A zero nanosleep before the rotated loop's wait for O += P V, so that ptxas "
               "keeps the softmax between the two waits."),
    PassConfig("tl.disable_lop3", "bool", False, _CUDA,
               "Leave (x & M) | C with constant M and C as two logic ops instead of one "
               "lop3.b32 (turns off tile-fuse-lop3)."),
    PassConfig("tl.exp2_emulation", "int", 0, _CUDA,
               "Compute the last of every N exp2s of a thread's elements with a cubic on "
               "the FMA pipe instead of the special-function unit (relative error 8.6e-5; "
               "below -126 gives 2^-126, from 128 on about 2^128, not 0 and inf; "
               "tile-emulate-exp2).", minimum=2, maximum=64, zero_ok=True),
    PassConfig("tl.enable_early_copies", "bool", False, _CP_ASYNC,
               "A step of a pipelined loop issues its copies right after its wait, before "
               "its consumers, instead of after them: one more copy group in flight in the "
               "same shared memory (tile-pipeline copies-first=true). Excludes "
               "`tl.pipeline_reuse_slots`."),
    PassConfig("tl.pipeline_reuse_slots", "bool", False, _CP_ASYNC,
               "num_stages - 1 shared buffers instead of num_stages; a step's copy goes "
               "into the buffer its own consumers read, right after the last of them and a "
               "barrier (tile-pipeline reuse-slots=true). Excludes "
               "`tl.enable_early_copies`."),
    PassConfig("tl.pipeline_group_per_copy", "bool", False, _CP_ASYNC,
               "Every copy of a step commits a group of its own, and each consumer waits "
               "only for the buffers it reads, right before it, instead of the step waiting "
               "for all its buffers at its top (tile-pipeline group-per-copy=true)."),
    PassConfig("tl.disable_barrier_merge", "bool", False, _CUDA,
               "Keep every barrier the lowering emits around shared scratch, and one "
               "scratch region for all ops, instead of successive ops taking turns over two "
               "regions and tile-merge-barriers erasing the barriers that then order "
               "nothing."),
    PassConfig("tl.narrow_index", "bool", False, _CUDA,
               "Narrow integer arithmetic the range analysis proves fits in 32 bits "
               "(shared-memory offsets, swizzles, loop indices) from 64 bits "
               "(arith-int-range-narrowing)."),
)


def check_pass_configs(pass_configs: Dict[str, Any]) -> None:
    """Raises ValueError for a key that is not in `PASS_CONFIGS` (naming the
    known ones) or a value its record does not accept."""
    for key, value in pass_configs.items():
        record = PASS_CONFIGS.get(key)
        if record is None:
            raise ValueError(f"unknown pass config {key!r}; known: "
                             + ", ".join(sorted(PASS_CONFIGS)))
        if value is not None or record.type != "path":
            record.check(value)
