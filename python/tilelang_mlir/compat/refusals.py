"""The TileLang names tilelang-mlir refuses, each with the reason and what
to do instead.

One registry for the error messages of the compat route (`tilelang.X.name`
and `T.name` that are refused raise an error quoting the reason here) and
for the surface report (`compat/surface.py`, docs/compat.md): a name listed
in `compat/surface.json` is implemented, refused here, or pending
(`compat/pending.py`).

A refusal is allowed only for TVM's IR and pass APIs, instructions of
hardware this compiler does not target (Blackwell tcgen05/TMEM/CLC, SM120
block-scaled MMA, Ascend, Metal, WebGPU) and TileLang's adapter internals
(tvm_ffi, cython, NVRTC, CuTeDSL). `REFUSED[surface]` maps a name to its
reason; the reasons are the constants below, so that the report can group
names by reason.
"""

from __future__ import annotations

from typing import Dict, Optional

# --- the reasons -----------------------------------------------------------

TVM_EXPR_NODE = ("a TVM IR expression node: tilelang-mlir has no TVM IR; write the expression "
                 "with Python operators and T.* functions")
TVM_BUILDER = ("TVM's TIR script builder (blocks, frames, buffer declarations, thread "
               "environment): declare buffers with T.Tensor and T.alloc_*, launch with "
               "T.Kernel, and use Python control flow and T.Parallel / T.serial loops")
TVM_RUNTIME = ("a TVM runtime or lowering intrinsic (packed calls, stacks, structs, "
               "workspaces, LLVM intrinsics by id, quantized multiply): tilelang-mlir has no "
               "TVM runtime")
TVM_LOWERED = ("a TVM-internal intrinsic that TVM's passes produce: use T.shfl_*, "
               "T.activemask, T.sync_threads or the T.* vector operations instead")
TVM_WMMA = "TVM's WMMA intrinsics: T.gemm emits the tensor-core instructions"
TIR_PTX = ("a PTX-level TIR intrinsic over raw buffer pointers and descriptors (TVM IR): "
           "T.gemm, T.copy, T.tma_copy, T.wgmma_gemm and the T.mbarrier_* operations emit "
           "these instructions")
RAW_TMA_BYTES = ("it announces the bytes of TMA loads that a program issues itself through "
                 "T.tma_load or TileLang's C++ TMA helpers over T.create_tma_descriptor, "
                 "PTX-level TIR intrinsics (TVM IR) refused here: T.tma_copy announces its "
                 "own bytes on its barrier")
EMITTER = ("TileLang's tensor-core intrinsic emitters generate TVM IR: use T.gemm / "
           "T.gemm_sp")
BLACKWELL = ("a Blackwell (sm_100) tcgen05 / TMEM / CLC / TMA-gather instruction: hardware "
             "this compiler does not target (sm_75 to sm_90a, CDNA 2-4)")
SM120 = "SM120 block-scaled MMA: hardware this compiler does not target"
SVE = "Arm SVE scalable vectors (TVM's vscale): the CPU target has fixed-width vectors"
TVM_PASSES = ("TileLang's TVM lowering engine and passes: tilelang-mlir compiles with its own "
              "MLIR pipeline; use tilelang.compile / tilelang.jit")
TVM_ANALYSIS = ("an analysis or rewrite of TVM IR (PrimFunc blocks, buffer regions, scopes): "
                "tilelang-mlir has no TVM IR")
ADAPTER = ("TileLang's execution-backend internals (tvm_ffi, cython, NVRTC, CuTeDSL "
           "adapters, their kernel caches and library generators): tilelang-mlir launches "
           "its own code")
CARVER_TVM = ("the carver's TVM schedule search (roller policies, TIR templates and "
              "analyses): use tilelang.carver.CUDA/CDNA for device facts and "
              "tilelang.carver.MatmulTemplate for GEMM configurations")
NO_CXX = ("CUDA C++ source: tilelang-mlir emits PTX itself and has no CUDA C++ compiler in "
          "its toolchain; write the kernel as a tile program (T.Kernel), or launch CUDA C++ "
          "with torch.utils.cpp_extension")
OTHER_HW = "hardware this compiler does not target (Ascend, Metal, WebGPU)"
WS_SCHEDULE = ("TileLang's manual warp-specialization schedule: TVM FFI nodes (roles, "
               "pipelines, per-role instruction order) that its MaterializeWSSchedule TVM pass "
               "consumes: tilelang-mlir warp-specializes T.Pipelined loops itself "
               "(tile-warp-specialize), or write the roles explicitly with `with T.ws(...)`, "
               "T.alloc_barrier, T.barrier_arrive / T.barrier_wait and T.set_max_nreg")


def _names(text: str):
    return text.split()


def _table(*groups) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for reason, names in groups:
        for n in _names(names):
            if n in out:
                raise AssertionError(f"refusals: {n} listed twice")
            out[n] = reason
    return out


# --- tilelang.language (T.*) -------------------------------------------------

LANGUAGE = _table(
    (TVM_EXPR_NODE, """BufferLoad Call CallEffectKind CommReducer IterVar Let ProducerLoad
        Reduce Range StringImm"""),
    (TVM_BUILDER, """Assert axis bind block_name_suffix_context buffer
        buffer_decl buffer_store buffer_var decl_buffer env_thread func_name
        func_ret init iter_var match_buffer reads writes sblock
        sblock_alloc_buffer sblock_attr target arg handle void index_map
        where ret lookup_param undef"""),
    (TVM_RUNTIME, """TVMBackendAllocWorkspace TVMBackendFreeWorkspace anylist_getitem
        anylist_resetitem anylist_setitem_call_cpacked anylist_setitem_call_packed
        call_cpacked call_cpacked_lowered call_packed call_packed_lowered call_kernel
        tvm_call_cpacked tvm_call_cpacked_lowered tvm_call_packed tvm_call_packed_lowered
        tvm_stack_alloca tvm_stack_make_array tvm_stack_make_shape tvm_struct_get
        tvm_struct_set tvm_throw_last_error tvm_tuple tvm_thread_invariant
        start_profile_intrinsic end_profile_intrinsic handle_add_byte_offset isnullptr
        call_llvm_intrin call_llvm_pure_intrin llvm_lookup_intrinsic_id q_multiply_shift
        q_multiply_shift_per_axis create_barriers ignore_loop_partition
        vectorcombine vectorhigh vectorlow"""),
    (TVM_LOWERED, """tvm_warp_shuffle tvm_warp_shuffle_down tvm_warp_shuffle_up
        tvm_warp_activemask tvm_storage_sync"""),
    (TVM_WMMA, """tvm_bmma_sync tvm_fill_fragment tvm_load_matrix_sync tvm_mma_sync
        tvm_store_matrix_sync"""),
    (TIR_PTX, """ptx_arrive_barrier ptx_arrive_barrier_expect_tx ptx_cp_async_barrier
        ptx_init_barrier_thread_count ptx_cp_async_bulk ptx_fence_barrier_init ptx_ldmatrix
        ptx_mma ptx_mma_sp ptx_wait_barrier ptx_wgmma_rs ptx_wgmma_ss ptx_wgmma_sp_rs
        ptx_wgmma_sp_ss ptx_mma_sm70 mma_fill mma_store alloc_descriptor alloc_wgmma_desc
        initialize_wgmma_descriptor increase_descriptor_offset compute_gmma_descriptor
        WGMMADescriptorParams wgmma_mma wgmma_gemm_sp warpgroup_arrive warpgroup_commit_batch
        tma_load
        create_tma_descriptor"""),
    (EMITTER, """TensorCoreIntrinEmitter TensorCoreIntrinEmitterWithLadderTransform
        WGMMATensorCoreIntrinEmitter SparseTensorCoreIntrinEmitter
        WGSparseTensorCoreIntrinEmitter"""),
    (BLACKWELL, """alloc_tcgen05_instr_desc alloc_tcgen05_instruction_desc
        alloc_tcgen05_smem_desc alloc_tmem deallocate_tmem initialize_tcgen05_descriptor
        TCGEN05DescriptorParams TCGEN05TensorCoreIntrinEmitter compute_umma_descriptor
        clc_get_first_ctaid_x clc_get_first_ctaid_y clc_get_first_ctaid_z clc_is_canceled
        clc_try_cancel clc_try_cancel_multicast ptx_tcgen05_mma_blockscaled_ss
        ptx_tcgen05_mma_ss ptx_tcgen05_mma_ts tcgen05_after_thread_sync
        tcgen05_before_thread_sync tcgen05_cp_warpx4 tcgen05_gemm tcgen05_gemm_blockscaled
        tcgen05_gemm_sp tcgen05_mma tcgen05_mma_arrive tcgen05_mma_blockscaled
        tcgen05_sf_warp_transpose tma_load_2sm tma_gather4 tma_gather4_bytes tma_scatter4"""),
    (SM120, """ptx_mma_block_scale make_blockscaled_gemm_layout mma_gemm_blockscaled
        TensorCoreIntrinEmitterSM120"""),
    (SVE, "get_active_lane_mask vscale"),
    (WS_SCHEDULE, """WarpSpecialize WarpSpecializeFrame WSID WSInstr WSOpRef WSPipeline
        WSRole WSSchedule WSScope WSSync WSSyncKind annotate_ws_schedule ws_op"""),
    (NO_CXX, "CUDASourceCodeKernel"),
    (RAW_TMA_BYTES, "mbarrier_expect_tx"),
)

# --- host modules ------------------------------------------------------------

TOP = _table(
    (TVM_PASSES, """lower register_cuda_postproc register_hip_postproc register_c_postproc
        engine analysis ir"""),
    (OTHER_HW, "metal webgpu"),
    ("TileLang's native-library loading (libtilelang, Windows DLL search paths): "
     "tilelang-mlir's native code is its own Python extension",
     "libinfo get_windows_runtime_dll_dirs prepend_dll_search_path"),
)

UTILS = _table(
    (TVM_ANALYSIS, """array_reduce get_buffer_region_from_load get_prim_func_name is_fragment
        is_full_region is_global is_local is_shared is_shared_dynamic is_tensor_memory
        retrieve_shape retrieve_stride retrive_ptr_from_buffer_region side_effect
        to_buffer_region"""),
)

PROFILER = _table(
    (ADAPTER, "BaseKernelAdapter"),
    ("TileLang's kernel parameter record of its TVM adapters: a compiled kernel's "
     "parameters are `kernel.params` (tilelang_mlir.base.signature.Param)", "KernelParam"),
)

CARVER = _table(
    (CARVER_TVM, """BlockInfo DefaultPolicy Edge ElementwiseTemplate FlashAttentionTemplate
        GEMVTemplate GeneralReductionTemplate IterInfo OutputNode PrimFuncNode
        TensorCorePolicy collect_block_iter_vars_used_in_access_region
        collect_vars_used_in_prim_expr detect_dominant_read get_block get_output_blocks
        is_broadcast_epilogue normalize_prim_func try_inline try_inline_contiguous_spatial"""),
    (OTHER_HW, "RDNA"),
)

VOLTA = "Volta (sm_70) tensor-core layouts: hardware this compiler does not target (sm_75 on)"

LAYOUT = _table(
    (BLACKWELL, "make_tcgen05mma_swizzled_layout"),
    (VOLTA, "make_volta_swizzled_layout"),
    ("CuTe layout algebra over TVM layouts (tilelang.layout.cute): T.Layout / T.Fragment "
     "describe layouts here", "cute"),
)

INTRINSICS = _table(
    (EMITTER, """TensorCoreIntrinEmitter TensorCoreIntrinEmitterWithLadderTransform
        WGMMATensorCoreIntrinEmitter"""),
    (BLACKWELL, "TCGEN05TensorCoreIntrinEmitter TCGEN05DescriptorParams"),
    (TIR_PTX, "WGMMADescriptorParams"),
    ("AMD MFMA layouts of TileLang's ROCm emitters (TVM IR): T.gemm lays out MFMA "
     "operands itself", "make_mfma_swizzle_layout"),
)

TOOLS = _table(
    ("TileLang's performance analyzer of TVM PrimFuncs: time the kernel with "
     "tilelang.profiler.do_bench", "Analyzer AnalysisResult ARCH_CONFIGS"),
)

JIT = _table(
    (ADAPTER, "cached"),
)

CACHE = _table(
    (ADAPTER, """CuTeDSLKernelCache CythonKernelCache KernelCache NVRTCKernelCache
        TVMFFIKernelCache TorchKernelCache cached"""),
)

ENV_MODULE = _table(
    ("TileLang's own build tree and third-party header paths (CUTLASS, composable kernel, "
     "its templates, TVM's library): tilelang-mlir compiles without them",
     """COMPOSABLE_KERNEL_INCLUDE_DIR COMPOSABLE_KERNEL_NOT_FOUND_MESSAGE CUTLASS_INCLUDE_DIR
        CUTLASS_NOT_FOUND_MESSAGE THIRD_PARTY_ROOT TILELANG_TEMPLATE_PATH TL_LIBS TL_ROOT
        TL_TEMPLATE_NOT_FOUND_MESSAGE TVM_LIBRARY_NOT_FOUND_MESSAGE ck_inc_path
        cutlass_inc_path dev_lib_root tl_dev_root tl_template_path tvm_path DEV
        get_cuda_dll_search_dirs get_windows_runtime_dll_dirs prepend_dll_search_path
        prepend_pythonpath TILELANG_HIP_SAVE_TEMP_FILES"""),
    (TVM_PASSES, "parse_pass_profile_threshold_ms resolve_pass_profile_threshold_ms"),
)

ENV_OBJECT = _table(
    ("TileLang's own build tree and third-party header paths: tilelang-mlir compiles "
     "without them", """COMPOSABLE_KERNEL_INCLUDE_DIR CUTLASS_INCLUDE_DIR TILELANG_TEMPLATE_PATH
        TVM_IMPORT_PYTHON_PATH TVM_LIBRARY_PATH TVM_PYTHON_PATH SKIP_LOADING_TILELANG_SO
        TILELANG_PACKAGE_PATH TILELANG_HIP_SAVE_TEMP_FILES"""),
    (TVM_PASSES, """TILELANG_PASS_DIFF TILELANG_PASS_DIFF_OUTPUT get_pass_diff_mode
        TILELANG_PASS_PROFILE TILELANG_PASS_PROFILE_THRESHOLD_MS is_pass_profile_enabled
        get_pass_profile_threshold_ms TILELANG_LAYOUT_COST_MODEL
        get_default_layout_cost_model is_running_autodd"""),
)

JIT_KERNEL = _table(
    (ADAPTER, "adapter backend backend_context execution_backend_spec torch_function "
              "from_database"),
    ("the TVM PrimFunc a kernel was compiled from: kernel.mlir('tile') gives this compiler's "
     "IR of it", "prim_func from_tilelang_function"),
    ("SASS disassembly needs cuobjdump/nvdisasm, which tilelang-mlir's toolchain does not "
     "ship: kernel.get_kernel_source() gives the PTX, kernel.cubin the binary",
     "show_sass export_sass"),
)

AUTOTUNER = _table(
    ("TileLang's tuner internals over its TVM elaboration (cached reference latencies "
     "and input tensors of the run in flight): AutoTuner.run() returns the latency, "
     "reference latency and config",
     "jit_compile jit_elaborate jit_input_tensors ref_input_tensors ref_latency_cache "
     "set_kernel_parameters"),
)

PROFILER_CLASS = _table(
    (ADAPTER, "adapter with_default_adapter"),
)

REFUSED: Dict[str, Dict[str, str]] = {
    "tilelang": TOP,
    "tilelang.language": LANGUAGE,
    "tilelang.utils": UTILS,
    "tilelang.profiler": PROFILER,
    "tilelang.carver": CARVER,
    "tilelang.layout": LAYOUT,
    "tilelang.intrinsics": INTRINSICS,
    "tilelang.tools": TOOLS,
    "tilelang.jit": JIT,
    "tilelang.cache": CACHE,
    "tilelang.env": ENV_MODULE,
    "tilelang.env.env": ENV_OBJECT,
    "tilelang.JITKernel": JIT_KERNEL,
    "tilelang.autotuner.AutoTuner": AUTOTUNER,
    "tilelang.Profiler": PROFILER_CLASS,
}

# Refused names that are served as a function whose call raises the
# refusal (a TileLangError at the program's line, naming what to write
# instead) rather than refused at the attribute access.
AT_CALL: Dict[str, frozenset] = {
    "tilelang.language": frozenset({"mbarrier_expect_tx"}),
}

# Module paths (of any release from 0.1.6 to 0.1.15) that the compat route
# does not serve, by prefix; the longest matching prefix gives the reason.
# A module path that matches none and is not served is a gap
# (test_compat_surface.py fails on it).
MODULE_PREFIXES: Dict[str, str] = {
    "tilelang.ascend": OTHER_HW,
    "tilelang.metal": OTHER_HW,
    "tilelang.webgpu": OTHER_HW,
    "tilelang.backend.metal": OTHER_HW,
    "tilelang.transform.metal": OTHER_HW,
    "tilelang.cache.ascend_binary_cache": OTHER_HW,
    "tilelang.layout.ascend": OTHER_HW,
    "tilelang.carver.arch.driver.ascend_driver": OTHER_HW,
    "tilelang.carver.arch.metal": OTHER_HW,
    "tilelang.intrinsics.metal_macro_generator": OTHER_HW,
    "tilelang.analysis": TVM_ANALYSIS,
    "tilelang.engine": TVM_PASSES,
    "tilelang.transform": TVM_PASSES,
    "tilelang.ir": "TVM IR nodes of TileLang's operators: tilelang-mlir has no TVM IR",
    "tilelang.tileop": ("TileLang's tile operators as TVM IR nodes and their per-instruction "
                        "gemm lowerings: T.gemm / T.copy here"),
    "tilelang.primitives": EMITTER,
    "tilelang.intrinsics": EMITTER,
    "tilelang.cuda": ("TileLang's CUDA backend internals (codegen, pass pipeline, intrinsic "
                      "emitters over TVM IR)"),
    "tilelang.rocm": ("TileLang's ROCm backend internals (codegen, MFMA/WMMA emitters over "
                      "TVM IR): T.gemm emits MFMA on rocm targets"),
    "tilelang.cpu": "TileLang's CPU backend internals (TVM codegen): target='cpu' here",
    "tilelang.backend": ("TileLang's backend registry over TVM (codegen, pass pipelines, "
                         "execution backends)"),
    "tilelang.jit.adapter": ADAPTER,
    "tilelang.jit.abi": ADAPTER,
    "tilelang.jit.execution_backend": ADAPTER,
    "tilelang.jit.exceptions": ADAPTER,
    "tilelang.cache": ADAPTER,
    "tilelang.contrib": ("TVM's contrib tools (hipcc, nvrtc, cutedsl, dlpack, cc, msvc, "
                         "bisheng): tilelang.contrib.nvcc has the compute-capability queries"),
    "tilelang.carver": CARVER_TVM,
    "tilelang.tools": ("TileLang's tools over TVM passes (lower trace, pass timing and "
                       "visualizer, iket, compile-only, analyzer): tilelang.tools.plot_layout "
                       "is served"),
    "tilelang.utils": TVM_ANALYSIS,
    "tilelang.language": ("a module of TileLang's TVM script frontend with no T.* names: "
                          "import tilelang.language as T"),
    "tilelang.quantize": ("TileLang's quantization helpers build TVM IR expressions: write "
                          "the unpacking with T.* bit operations"),
    "tilelang.common": TVM_PASSES,
    "tilelang.instrumentation": TVM_PASSES,
    "tilelang.autodd": ("TileLang's delta-debugging reducer of TVM programs: "
                        "tilelang-mlir's trace (tl.trace_dir) shows every pass"),
    "tilelang.libinfo": "TileLang's native-library lookup: tilelang-mlir has its own",
    "tilelang.errors": ("TileLang's TVM error types: tilelang-mlir raises TileLangError and "
                        "its subclasses (tilelang_mlir.base.errors)"),
    "tilelang.version": "TileLang's build metadata: tilelang.__version__ is served",
    "tilelang.dtypes": ("TileLang's dtype table over TVM's DataType: tilelang.language.dtypes "
                        "and T.<dtype> are served"),
    "tilelang.profiler.msprof": OTHER_HW,
    "tilelang.profiler.torch_bench": ("TileLang's torch-profiler timing backend: "
                                      "tilelang.profiler.do_bench(backend='event'|'cudagraph')"),
    "tilelang.profiler.wall": ("TileLang's wall-clock timing backend: tilelang.profiler."
                               "do_bench times with CUDA events, or the wall clock without a "
                               "GPU"),
    "tilelang.testing.perf_regression": ("TileLang's performance-regression harness: "
                                         "tilelang.testing's markers and helpers are served"),
    "tilelang.layout.cute": "CuTe layout algebra over TVM layouts",
    "tilelang.layout.partial_fragment": ("TileLang's partial fragment layouts over TVM layout "
                                         "nodes: T.Fragment describes fragment layouts here"),
    "tilelang.autotuner.grouped_compile": ADAPTER,
    "tilelang.jit.env": ("TileLang's JIT workspace folders of its C++ build: this compiler "
                         "keeps kernels in its cache (tilelang.env.env.TILELANG_CACHE_DIR)"),
    "tvm": ("TVM's IR, passes and runtime are out of scope: the TVM names served are "
            "tvm.DataType, tvm.tir / tvm.tirx (const, PrimExpr, IntImm, FloatImm, Var, the T "
            "operations), tvm.testing, "
            "tvm.target.Target, tvm.transform.PassContext (its config) and tvm.error"),
    "tilelang.tvm": ("TVM's IR, passes and runtime are out of scope: the TVM names served are "
                     "tvm.DataType, tvm.tir / tvm.tirx (const, PrimExpr, IntImm, FloatImm, "
                     "Var), tvm.target.Target, tvm.transform.PassContext (its config) and "
                     "tvm.error"),
}


def reason(surface: str, name: str) -> Optional[str]:
    """Why `name` of `surface` (e.g. "tilelang.language", "tilelang.utils",
    "tilelang.JITKernel") is refused, or None."""
    return REFUSED.get(surface, {}).get(name)


def module_reason(module: str) -> Optional[str]:
    """Why the module path `module` is not served (the longest listed
    prefix), or None."""
    best = None
    for prefix in MODULE_PREFIXES:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best):
                best = prefix
    return MODULE_PREFIXES[best] if best else None


# The rules that allow a refusal (issue 43, docs/compat.md); every refusal
# message names its rule as "(out of scope: <rule>)", which
# scripts/tilelang_conformance.py reads to count a test that stops at one.
RULE_TVM = "TVM's IR and pass APIs"
RULE_HARDWARE = "hardware this compiler does not target"
RULE_INTERNALS = "TileLang's adapter and build internals"

_RULE_OF = {TVM_EXPR_NODE: RULE_TVM, TVM_BUILDER: RULE_TVM, TVM_RUNTIME: RULE_TVM,
            TVM_LOWERED: RULE_TVM, TVM_WMMA: RULE_TVM, TIR_PTX: RULE_TVM, EMITTER: RULE_TVM,
            TVM_PASSES: RULE_TVM, TVM_ANALYSIS: RULE_TVM, RAW_TMA_BYTES: RULE_TVM, WS_SCHEDULE: RULE_TVM, CARVER_TVM: RULE_TVM,
            BLACKWELL: RULE_HARDWARE, SM120: RULE_HARDWARE, SVE: RULE_HARDWARE,
            OTHER_HW: RULE_HARDWARE, VOLTA: RULE_HARDWARE,
            ADAPTER: RULE_INTERNALS, NO_CXX: RULE_INTERNALS}


def rule(why: str) -> str:
    """The rule a refusal reason falls under: the table above for the
    shared reasons; a reason written for one name says which by its words
    (hardware, TVM), else it is about TileLang's own internals."""
    if why in _RULE_OF:
        return _RULE_OF[why]
    if "hardware" in why:
        return RULE_HARDWARE
    if "TVM" in why or "TIR" in why:
        return RULE_TVM
    return RULE_INTERNALS


def refusal(label: str, why: str) -> str:
    """The error text of a refused name or module path."""
    return f"not supported by tilelang-mlir: {label} ({why}) (out of scope: {rule(why)})"


def message(surface: str, name: str) -> str:
    """The error text for an access to `surface`.`name`: its refusal, or
    why it is absent. A name of a host module that TileLang's surface does
    not list (a module's internals: `tilelang.contrib.nvcc.compile_cuda`)
    has its module path's refusal."""
    label = f"T.{name}" if surface == "tilelang.language" else f"{surface}.{name}"
    why = reason(surface, name)
    if why is None and surface != "tilelang.language" and surface.startswith("tilelang."):
        from .pending import pending_scope

        if pending_scope(surface, name) is None and not _listed(surface, name):
            why = module_reason(f"{surface}.{name}")
    if why is None:
        from .pending import pending_scope

        scope = pending_scope(surface, name)
        why = ("not implemented yet" if scope else "no such name in TileLang's surface")
        return f"not supported by tilelang-mlir: {label} ({why})"
    return refusal(label, why)


def is_surface_name(surface: str, name: str) -> bool:
    """Whether `name` is a public name of `surface` (compat/surface.json),
    refused or pending included."""
    from .pending import pending_scope

    return reason(surface, name) is not None or pending_scope(surface, name) is not None \
        or _listed(surface, name)


def _listed(surface: str, name: str) -> bool:
    """Whether `name` is a public name of `surface` in compat/surface.json."""
    from .surface import load

    entry = load()["surfaces"].get(surface)
    return entry is not None and name in entry["names"]
