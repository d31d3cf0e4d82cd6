"""`tilelang.PassConfigKey` (also `tilelang.transform.PassConfigKey` and
`tilelang.transform.pass_config`): every member of every TileLang release
from 0.1.6 to 0.1.15, with TileLang's strings as values, plus this
compiler's own keys. `tilelang.compile(..., pass_configs={PassConfigKey.X:
v})` accepts each; what each TileLang key does here (sets our keys, changes
nothing for a stated reason, or refuses the values we cannot honour) is the
table TILELANG_PASS_CONFIGS of compiler/pass_config.py, which
`PassConfigKey.X.meaning` quotes and docs/reference/pass_configs renders.

`tilelang.transform.PassContext` is `tvm.transform.PassContext` (its
config applies to the compiles inside it); TileLang's TVM passes
(`tilelang.transform.Simplify`, ...) are out of scope.
"""

from __future__ import annotations

import enum

from ..compiler.pass_config import PASS_CONFIGS, TILELANG_PASS_CONFIGS
from .tvm_transform import PassContext  # noqa: F401


class PassConfigKey(str, enum.Enum):
    """Pass config keys: TileLang's (values as TileLang spells them) and
    this compiler's own."""

    TL_SIMPLIFY = "tl.Simplify"
    TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES = "transitively_prove_inequalities"
    TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS = "convert_boolean_to_and_of_ors"
    TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES = "apply_constraints_to_boolean_branches"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL = "propagate_knowns_to_prove_conditional"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS = \
        "propagate_knowns_to_simplify_expressions"
    TL_SIMPLIFY_ENABLE_LET_INLINE = "enable_simplify_let_inline"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_FAST_MATH = "tl.disable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_ENABLE_PTXAS_VERBOSE_OUTPUT = "tl.enable_ptxas_verbose_output"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tirx.add_lower_pass"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    # Members of earlier (0.1.6) and later (0.1.15) releases.
    TL_DYNAMIC_ALIGNMENT = "tl.dynamic_alignment"
    TL_DISABLE_DYNAMIC_TAIL_SPLIT = "tl.disable_dynamic_tail_split"
    TL_ENABLE_AUTO_SCHEDULE = "tl.enable_auto_schedule"
    TL_ENABLE_AUTO_WARP_SPECIALIZATION = "tl.enable_auto_warp_specialization"
    TL_ENABLE_FP32X2_REDUCTION = "tl.enable_fp32x2_reduction"
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
        if self.value in PASS_CONFIGS:
            return PASS_CONFIGS[self.value].meaning
        return TILELANG_PASS_CONFIGS[self.value].words()


__all__ = ["PassConfigKey", "PassContext"]
