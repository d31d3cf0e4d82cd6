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
    table: Dict[str, PassConfig] = {}
    for r in records:
        if r.name in table:  # a second entry would silently replace the first
            raise ValueError(f"pass config {r.name!r} is listed twice")
        table[r.name] = r
    return table


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
    PassConfig("tl.sync_threads_whole_block", "bool", False, _CUDA,
               "The program's `T.sync_threads()` inside a branch over a range of threads "
               "(`if tx < 128:`, a role) is a barrier of the whole block, which each "
               "branch reaches at its own call (`__syncthreads()`; how one role publishes "
               "shared memory to the others) instead of a barrier of the branch's threads "
               "(TileLang's `TL_DISABLE_THREAD_STORAGE_SYNC` sets it; `tile.barrier "
               "{block}`)."),
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
    PassConfig("tl.pipeline_sync_copies", "bool", False, _CP_ASYNC,
               "The copies of pipelined loops stay synchronous loads and stores instead of "
               "cp.async (tile-pipeline async-copies=false); the buffers are still "
               "multi-buffered. TileLang's `tl.enable_async_copy=False`."),
    PassConfig("tl.disable_barrier_merge", "bool", False, _CUDA,
               "Keep every barrier the lowering emits around shared scratch, and one "
               "scratch region for all ops, instead of successive ops taking turns over two "
               "regions and tile-merge-barriers erasing the barriers that then order "
               "nothing."),
    PassConfig("tl.disable_wgmma", "bool", False, "sm_90a",
               "T.gemm uses mma.sync instead of warpgroup MMA (wgmma); warp specialization, "
               "which feeds wgmma, is off with it (TileLang's TL_DISABLE_WGMMA)."),
    PassConfig("tl.kernel_source_dir", "path", None, "every target",
               "Write the final code of every compiled kernel (PTX, LLVM IR or AMDGPU "
               "assembly, `<kernel>.ptx` / `.ll` / `.s`) into this folder (TileLang's "
               "cuda.kernels_output_dir)."),
    PassConfig("tl.print_tile_ir", "bool", False, "every target",
               "Print the tile IR of every compiled kernel (TileLang's tl.ast_print_enable)."),
    PassConfig("tl.precise_math", "bool", False, "GPU targets",
               "float32 (and float16, bfloat16) exp, exp2, log, log2, log10, sin, cos and "
               "tanh computed in float64 and rounded once instead of on the special-function "
               "units, rsqrt as 1 / sqrt in float64 (tile-precise-math): correctly rounded in practice, "
               "several times slower. The fast functions asked for by name (T.__exp, ...) "
               "stay fast. TileLang's `tl.disable_fast_math` / `tl.enable_fast_math=False`."),
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


# ---------------------------------------------------------------------------
# TileLang's keys
# ---------------------------------------------------------------------------
#
# TileLang's `PassConfigKey` values (every release from 0.1.6 to 0.1.15) that
# are not this compiler's own, and what each does here (`normalize` applies
# them before `check_pass_configs`; compat/transform.py serves them as
# `tilelang.PassConfigKey`, scripts/gen_reference.py renders the table):
# - "maps": sets `ours` (our keys) to the value's truth;
# - "no-op": accepted and changes nothing, for `reason`; `refused(value)`, when
#   given, names the values we cannot honour (refused with `reason`);
# - "refuse": a false value is accepted, a true one refused with `reason`;
# - "convert": `convert(value)` gives our keys (or raises naming the key).


@dataclass(frozen=True)
class TileLangKey:
    action: str
    reason: str
    ours: tuple = ()
    refused: Optional[Any] = None  # a predicate on the value (no-op keys)
    convert: Optional[Any] = None  # value -> {our key: value} (convert keys)

    def words(self) -> str:
        """What the key does here, in words (the reference table)."""
        if self.action == "maps":
            return "sets " + ", ".join(f"`{k}`" for k in self.ours) + ": " + self.reason
        if self.action == "refuse":
            return "a true value is refused: " + self.reason
        if self.action == "convert":
            return self.reason
        if self.refused is not None:
            return "accepted, changes nothing; " + self.reason
        return "accepted, changes nothing: " + self.reason


def _truthy(v) -> bool:
    return bool(v)


def _falsy(v) -> bool:
    return not v


def _compile_flags(value) -> Dict[str, Any]:
    from .compile import check_compile_flags

    check_compile_flags(value)
    return {}


def _index_bitwidth(value) -> Dict[str, Any]:
    if value not in (32, 64):
        raise ValueError(f"pass config 'tl.config_index_bitwidth' must be 32 or 64, got "
                         f"{value!r}")
    return {"tl.narrow_index": True} if value == 32 else {}


def _async_copy(value) -> Dict[str, Any]:
    return {} if value else {"tl.pipeline_sync_copies": True}


def _dump_ir(value) -> Dict[str, Any]:
    return {"tl.trace_dir": "./dump_ir/"} if value else {}


def _dump_ir_path(value) -> Dict[str, Any]:
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"pass config 'tl.dump_ir_path' must be a folder path, got {value!r}")
    return {"__dump_ir_path": os.fspath(value)}


_SIMPLIFY_OPTIONS = ("transitively_prove_inequalities", "convert_boolean_to_and_of_ors",
                     "apply_constraints_to_boolean_branches",
                     "propagate_knowns_to_prove_conditional",
                     "propagate_knowns_to_simplify_expressions", "enable_simplify_let_inline")


def _simplify(value) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"pass config 'tl.Simplify' takes a dict of options "
                         f"({', '.join(_SIMPLIFY_OPTIONS)}), got {value!r}")
    for k in value:
        name = str(getattr(k, "value", k))
        if name not in _SIMPLIFY_OPTIONS:
            raise ValueError(f"'tl.Simplify' has no option {name!r}; its options: "
                             f"{', '.join(_SIMPLIFY_OPTIONS)}")
    return {}


def _simplify_option(name: str):
    def convert(value):
        raise ValueError(f"{name!r} is an option inside the dict of pass config 'tl.Simplify' "
                         f"({{'tl.Simplify': {{{name!r}: ...}}}}), not a pass config itself")

    return convert


def _cost_model(value) -> Dict[str, Any]:
    if value not in (None, "io-aware", "register-count"):
        raise ValueError(f"pass config 'tl.layout_cost_model' must be 'io-aware' or "
                         f"'register-count', got {value!r}")
    return {}


def _kernels_dir(value) -> Dict[str, Any]:
    if not value:
        return {}
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"pass config 'cuda.kernels_output_dir' must be a folder path, got "
                         f"{value!r}")
    return {"tl.kernel_source_dir": os.fspath(value)}


def _add_lower_pass(value) -> Dict[str, Any]:
    if value:
        raise NotImplementedError("not supported by tilelang-mlir: pass config "
                                  "'tirx.add_lower_pass' (it adds TVM passes; this compiler's "
                                  "pipeline is MLIR's)")
    return {}


_TVM_PASS = ("a setting of TVM's TIR passes, which this compiler does not run; its own "
             "pipeline gives the same results")
_NO_SUCH_WARNING = "this compiler has no such check or warning, which is what the key asks"
_NO_SUCH_PASS = "this compiler has no such pass, which is what the key asks"

TILELANG_PASS_CONFIGS: Dict[str, TileLangKey] = {
    "tl.disable_tma_lower": TileLangKey(
        "maps", "TMA copies exist here only in warp-specialized pipelines (sm_90a) and in the "
        "accumulator's TMA store: both are turned off",
        ours=("tl.disable_warp_specialized", "tl.disable_tma_store")),
    "tl.enable_fast_math": TileLangKey(
        "convert", "false (given) sets `tl.precise_math`; true, or left out, keeps the "
        "special-function approximations (ex2.approx, rsqrt.approx...: what --use_fast_math "
        "gives), this compiler's default", convert=lambda v: {} if v else
        {"tl.precise_math": True}),
    "tl.disable_fast_math": TileLangKey(
        "convert", "true sets `tl.precise_math` (IEEE-accurate transcendental functions)",
        convert=lambda v: {"tl.precise_math": True} if v else {}),
    "tl.enable_ptxas_verbose_output": TileLangKey(
        "no-op", "ptxas's register and spill report is always kept: kernel.ptxas_info"),
    "tl.ptxas_register_usage_level": TileLangKey(
        "no-op", "no ptxas options are passed; register limits come from the "
        "warp-specialization pass (setmaxnreg)"),
    "tl.disable_thread_storage_sync": TileLangKey(
        "maps", "as in TileLang, the program's T.sync_threads() stays a barrier of the "
        "whole block inside a branch over a range of threads, where it would otherwise "
        "synchronize that range only. Barriers are still inserted where "
        "tile-insert-barriers finds a shared-memory hazard that the program's own "
        "barriers over the same threads do not order; none goes inside a branch or loop "
        "whose condition differs between threads (one goes before it, as TileLang hoists "
        "its syncs)", ours=("tl.sync_threads_whole_block",)),
    "tl.enable_aggressive_shared_memory_merge": TileLangKey(
        "no-op", "shared memory is placed by this compiler's own allocation planner"),
    "tl.layout_visualization_enable": TileLangKey(
        "refuse", "layout pictures are written with the pass config tl.layout_plot_dir=FOLDER "
        "(tl.tools.plot_layout)"),
    "tl.layout_visualization_formats": TileLangKey(
        "no-op", "only meaningful with tl.layout_visualization_enable; pictures are PNG "
        "(tl.layout_plot_dir)"),
    "tl.Simplify": TileLangKey(
        "convert", "its options tune TVM's arithmetic simplifier; the dict is checked and "
        "changes nothing (this compiler's canonicalization gives the same results)",
        convert=_simplify),
    **{opt: TileLangKey("convert", "an option inside tl.Simplify's dict",
                        convert=_simplify_option(opt)) for opt in _SIMPLIFY_OPTIONS},
    "tl.disable_buffer_init_check": TileLangKey("no-op", _NO_SUCH_WARNING),
    "tl.disable_data_race_check": TileLangKey(
        "no-op", "this compiler has no data-race check; a false value (asking for the check) "
        "is refused", refused=_falsy),
    "tl.disable_prelower_semantic_check": TileLangKey(
        "no-op", "this compiler's checks reject only programs it cannot compile; they stay "
        "on"),
    "tl.device_compile_flags": TileLangKey(
        "convert", "nvcc flags, accepted where they only steer C++ compilation "
        "(check_compile_flags), refused otherwise", convert=_compile_flags),
    "tl.emit_line_directives": TileLangKey(
        "no-op", "this compiler writes no CUDA C++ to put #line directives in; its errors point "
        "at the Python lines"),
    "tl.config_index_bitwidth": TileLangKey(
        "convert", "32 sets tl.narrow_index (32-bit index arithmetic where it is proven to fit); "
        "64 is what indices are here", convert=_index_bitwidth),
    "tl.enable_reducer_plan_verbose": TileLangKey(
        "no-op", "a log of TileLang's reducer plans; reducers here lower one way"),
    "tl.layout_cost_model": TileLangKey(
        "convert", "the value is checked ('io-aware' or 'register-count'); this compiler's "
        "layout inference has its own cost model", convert=_cost_model),
    "tl.reducer_force_baseline": TileLangKey(
        "no-op", "reducers here lower one way, which gives the baseline plan's results"),
    "tl.disable_vectorize_256": TileLangKey(
        "no-op", "this compiler never emits 256-bit loads or stores (sm_90a's widest are 128 "
        "bits)"),
    "tl.enable_async_copy": TileLangKey(
        "convert", "false sets `tl.pipeline_sync_copies` (the copies of pipelined loops stay "
        "synchronous, no cp.async)", convert=_async_copy),
    "tl.enable_lower_ldgstg": TileLangKey(
        "no-op", "global loads and stores are always ld.global / st.global vector "
        "instructions here"),
    "tl.enable_lower_ldgstg_predicated": TileLangKey(
        "no-op", "guarded global loads and stores are always predicated ld.global / st.global "
        "here"),
    "tl.enable_vectorize_planner_verbose": TileLangKey(
        "no-op", "a log of TileLang's vectorize planner, which this compiler does not have"),
    "tl.debug_merge_shared_memory_allocations": TileLangKey(
        "no-op", "a debug log of TileLang's shared-memory merge pass, which this compiler does "
        "not have"),
    "tl.disable_shared_memory_reuse": TileLangKey(
        "refuse", "this compiler's shared-memory planner always reuses the space of buffers "
        "whose lifetimes do not overlap"),
    "tl.disable_shuffle_elect": TileLangKey(
        "refuse", "warp-specialized kernels here always elect the issuing thread with "
        "elect.sync"),
    "tl.disable_loop_unswitching": TileLangKey("no-op", _NO_SUCH_PASS),
    "tl.loop_unswitching_allow_non_trivial_else": TileLangKey("no-op", _NO_SUCH_PASS),
    "tl.if_stmt_binding_inline_replayable_binds": TileLangKey("no-op", _NO_SUCH_PASS),
    "tl.force_let_inline": TileLangKey(
        "no-op", "let bindings are values of the IR here; LLVM decides what to inline"),
    "tl.ast_print_enable": TileLangKey(
        "convert", "a true value sets tl.print_tile_ir (this compiler prints its tile IR)",
        convert=lambda v: {"tl.print_tile_ir": True} if v else {}),
    "tl.storage_rewrite_detect_inplace": TileLangKey("no-op", _TVM_PASS),
    "tir.enable_equiv_terms_in_cse_tir": TileLangKey("no-op", _TVM_PASS),
    "tirx.disable_cse_tir": TileLangKey("no-op", _TVM_PASS),
    "tirx.Simplify": TileLangKey("no-op", _TVM_PASS),
    "tirx.disable_storage_rewrite": TileLangKey("no-op", _TVM_PASS),
    "tirx.disable_vectorize": TileLangKey("no-op", _TVM_PASS),
    "tirx.use_async_copy": TileLangKey(
        "convert", "false sets `tl.pipeline_sync_copies` (the copies of pipelined loops stay "
        "synchronous, no cp.async)", convert=_async_copy),
    "tirx.enable_debug": TileLangKey("no-op", _TVM_PASS),
    "tirx.merge_static_smem": TileLangKey(
        "no-op", "shared memory is one allocation placed by this compiler's planner"),
    "tirx.add_lower_pass": TileLangKey(
        "convert", "refused unless empty: it adds TVM passes", convert=_add_lower_pass),
    "tirx.noalias": TileLangKey(
        "no-op", "kernel arguments are assumed not to alias; a false value is refused",
        refused=_falsy),
    "cuda.kernels_output_dir": TileLangKey(
        "convert", "sets tl.kernel_source_dir: the final code of every kernel is written there "
        "(PTX here, not CUDA C++)", convert=_kernels_dir),
    "tl.disable_out_of_bound_warning": TileLangKey("no-op", _NO_SUCH_WARNING),
    "tl.enable_dump_ir": TileLangKey(
        "convert", "sets tl.trace_dir (the IR after every pass) to tl.dump_ir_path, default "
        "./dump_ir/", convert=_dump_ir),
    "tl.dump_ir_path": TileLangKey(
        "convert", "the folder of tl.enable_dump_ir", convert=_dump_ir_path),
    "tl.pass_profile": TileLangKey(
        "refuse", "this compiler has no per-pass timing report (tl.trace_dir writes the IR "
        "after every pass)"),
    "tl.pass_profile_threshold_ms": TileLangKey(
        "no-op", "only meaningful with tl.pass_profile"),
    "tl.dynamic_alignment": TileLangKey(
        "no-op", "symbolic sizes are never assumed to be multiples of anything here (every "
        "access is guarded), which gives the results for any alignment"),
    "tl.disable_dynamic_tail_split": TileLangKey(
        "no-op", "loops over symbolic sizes are guarded, not split; results are the same"),
    "tl.enable_auto_schedule": TileLangKey(
        "no-op", "Ascend's scheduler; it has no effect on the targets here (nor in TileLang)"),
    "tl.enable_auto_warp_specialization": TileLangKey(
        "no-op", "this compiler warp-specializes pipelined sm_90a kernels itself "
        "(tl.disable_warp_specialized turns it off)"),
    "tl.enable_fp32x2_reduction": TileLangKey(
        "no-op", "packed FP32x2 reductions exist on SM100 and newer, which this compiler does "
        "not target (TileLang does not use them below SM100 either)"),
}


def normalize(pass_configs: Optional[Dict[Any, Any]]) -> Dict[str, Any]:
    """`pass_configs` with our keys only: enum keys (TileLang's
    `PassConfigKey`) become their strings and TileLang's keys are applied
    (TILELANG_PASS_CONFIGS); an unknown key is a ValueError naming the
    known ones, a value we cannot honour a NotImplementedError."""
    out: Dict[str, Any] = {}
    dump_dir = None
    for key, value in (pass_configs or {}).items():
        name = getattr(key, "value", key)
        if not isinstance(name, str):
            raise ValueError(f"pass config keys are strings, got {key!r}")
        if name in PASS_CONFIGS:
            out[name] = value
            continue
        entry = TILELANG_PASS_CONFIGS.get(name)
        if entry is None:
            known = ", ".join(sorted(PASS_CONFIGS) + sorted(TILELANG_PASS_CONFIGS))
            raise ValueError(f"unknown pass config {name!r}; known: {known}")
        if entry.action == "maps":
            for k in entry.ours:
                out[k] = bool(value) or bool(out.get(k, False))
        elif (entry.action == "refuse" and value) or (
                entry.action == "no-op" and entry.refused is not None and entry.refused(value)):
            raise NotImplementedError(f"not supported by tilelang-mlir: pass config "
                                      f"{name}={value!r}: {entry.reason}")
        elif entry.action == "convert":
            extra = dict(entry.convert(value))
            dump_dir = extra.pop("__dump_ir_path", dump_dir)
            out.update(extra)
    if dump_dir is not None and "tl.trace_dir" in out and \
            (pass_configs or {}).get("tl.trace_dir") is None:
        out["tl.trace_dir"] = dump_dir
    return out
