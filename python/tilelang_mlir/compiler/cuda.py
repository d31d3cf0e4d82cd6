"""The CUDA path of the compiler: pass pipeline, PTX, launch description, cubin.

    tile IR -> tile-pipeline -> tile-layout-inference -> tile-insert-barriers
            -> convert-tile-to-nvvm (gpu.module + gpu.launch_func)
            -> NVVM/LLVM dialect -> PTX (gpu-module-to-binary, LLVM NVPTX)
            -> cubin (ptxas)

The host function is never compiled: the runtime launches the cubin itself,
so the launch (grid as expressions over symbolic sizes and scalar arguments,
block, dynamic shared memory) is read off the `gpu.launch_func`
(`launch.py`, shared with the ROCm backend).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Dict, List, Tuple

from ..base import chips
from ..base.artifact import CompiledArtifact
from ..base.errors import CompilationError, TileLangError
from ..base.target import Target
from .backend import Backend
from .launch import extract_launch, launch_of
from .pipeline import Stage, safe_access


def ptx_features(target: Target) -> str:
    """The PTX version LLVM is asked for (`+ptx81`): the chip table's
    (base/chips.py says why each chip takes its version)."""
    return f"+ptx{target.chip.ptx_version}"


# Blocks of a persistent sm_90a kernel at compile time: the multiprocessors of
# the chip's reference part (chip table: 132, an H100 SXM or H200). A grid
# with more tiles than this loops over them; at launch the runtime gives it
# one block per multiprocessor of the device.
PERSISTENT_SMS = chips.chip("sm_90a").sms


def cuda_stages(target: Target, pass_configs: dict = None) -> List[Stage]:
    chip = target.arch
    pass_configs = pass_configs or {}
    # Warpgroup MMA, setmaxnreg and TMA pipelines exist on the arch-specific
    # Hopper target (the chip table's wgmma).
    wgmma = target.chip.wgmma and not pass_configs.get("tl.disable_wgmma", False)
    specialize = wgmma and not pass_configs.get("tl.disable_warp_specialized", False)
    gm = lambda p: f"gpu.module({p})"  # noqa: E731
    cluster = int(pass_configs.get("tl.cluster_size", 2))
    persistent = int(pass_configs.get("tl.persistent_sms", target.chip.sms or PERSISTENT_SMS))
    pingpong = "true" if pass_configs.get("tl.enable_pingpong", False) else "false"
    rotate = "true" if pass_configs.get("tl.enable_rotate", False) else "false"
    sched = "true" if pass_configs.get("tl.rotate_sched_barrier", False) else "false"
    tiles = "true" if pass_configs.get("tl.producer_tile_copies", False) else "false"
    release = "true" if pass_configs.get("tl.early_tile_release", False) else "false"
    merge_off = bool(pass_configs.get("tl.disable_barrier_merge", False))
    early = bool(pass_configs.get("tl.enable_early_copies", False))
    reuse = bool(pass_configs.get("tl.pipeline_reuse_slots", False))
    grouped = bool(pass_configs.get("tl.pipeline_group_per_copy", False))
    # Turing (sm_75) has no cp.async: pipelined loops copy synchronously
    # (the stages still overlap the loads' latency with the gemm).
    turing = target.chip.arch < 80
    sync_copies = bool(pass_configs.get("tl.pipeline_sync_copies")) or turing
    if early and reuse:
        raise TileLangError("tl.enable_early_copies and tl.pipeline_reuse_slots exclude each "
                            "other: a copy into the buffer its step reads must follow the "
                            "readers")
    pipeline = ([f"func.func(tile-warp-specialize{{cluster-size={cluster} "
                 f"persistent-sms={persistent} pingpong={pingpong} rotate={rotate} rotate-sched-barrier={sched} "
                 f"producer-tile-copies={tiles} early-tile-release={release}}})"]
                if specialize else []) + [
        f"func.func(tile-pipeline{{copies-first={'true' if early else 'false'}"
        f" reuse-slots={'true' if reuse else 'false'}"
        f" group-per-copy={'true' if grouped else 'false'}"
        f" async-copies={'false' if sync_copies else 'true'}}})",
        "canonicalize", "cse"]
    # Index arithmetic is 64-bit (index-bitwidth=64), and every 64-bit
    # or/xor/shift is two instructions on the GPU; shared-memory offsets and
    # swizzles fit in 32 bits, which the integer range analysis proves from
    # the block size. Opt-in while it is measured (the dequant benchmark
    # compiles both).
    narrow = ([gm("int-range-optimizations"),
               gm("arith-int-range-narrowing{int-bitwidths-supported=32}"),
               "canonicalize", "cse"] if pass_configs.get("tl.narrow_index") else [])
    return [
        # Casts get the tile rules first (saturating float -> int, fp8 in
        # integer arithmetic: ConversionUtils.h), as on every target.
        Stage("tile-opt", ["func.func(tile-check-uninitialized)", "func.func(tile-legalize-conversions)", "lower-affine", "canonicalize", "cse"]
                          + (["func.func(tile-precise-math)"]
                             if (pass_configs or {}).get("tl.precise_math") else [])
                          + safe_access(pass_configs)),
        Stage("pipelined", pipeline),
        Stage("layout", [f"func.func(tile-layout-inference{{wgmma={'true' if wgmma else 'false'}"
                         f"{' mma-sm75=true' if turing else ''}}})",
                         "func.func(tile-insert-barriers)"]),
        Stage("gpu", [f"convert-tile-to-nvvm{{chip={chip} features={ptx_features(target)} "
                      f"tma-store={'false' if pass_configs.get('tl.disable_tma_store') else 'true'} "
                      f"loop-thread-index={'true' if pass_configs.get('tl.enable_loop_thread_index') else 'false'}"
                      # (the pass's default, 24, unless asked)
                      + (f" producer-registers={pass_configs['tl.producer_registers']}"
                         if "tl.producer_registers" in pass_configs else "")
                      + (" scratch-slots=1" if merge_off else "") + "}",
                      gm("tile-fold-divisible-index"), "canonicalize", "cse"] + narrow
                     # Barriers that order no shared or global access the
                     # previous one does not (after the canonicalization
                     # that folds the scratch views' offsets).
                     + ([] if merge_off else [gm("tile-merge-barriers")])
                     # Part of the exp2s on the FMA pipe (the special-function
                     # unit bounds attention at head dim 64).
                     + ([gm(f"tile-emulate-exp2{{every={int(pass_configs['tl.exp2_emulation'])}}}")]
                        if pass_configs.get("tl.exp2_emulation") else [])
                     # Narrow integers (quantized weights) to f16/bf16 by the
                     # magic-number trick instead of I2F (quarter rate).
                     + [gm("tile-fast-int-to-float"), gm("canonicalize")]
                     # (x & M) | C with two constants: one LOP3, not two.
                     + ([] if pass_configs.get("tl.disable_lop3") else [gm("tile-fuse-lop3")])),
        Stage("nvvm", [gm("convert-nvgpu-to-nvvm"), gm("convert-scf-to-cf"),
                       gm("convert-gpu-to-nvvm{index-bitwidth=64}"),
                       # What convert-gpu-to-nvvm leaves of math (math.absi
                       # on i8/i16/i64) becomes LLVM intrinsics.
                       gm("convert-math-to-llvm"),
                       # An NVVM op the chip lacks is an error here, before
                       # LLVM's instruction selection would abort on it.
                       gm("tile-check-nvvm-chip"),
                       gm("convert-nvvm-to-llvm"), gm("canonicalize"), gm("cse"),
                       gm("reconcile-unrealized-casts"), gm("tile-finalize-kernel-params")]),
        Stage("binary", ["gpu-module-to-binary{format=isa}"]),
    ]


# ---------------------------------------------------------------------------
# Reading the result
# ---------------------------------------------------------------------------

_ASSEMBLY_RE = re.compile(r'assembly = "((?:[^"\\]|\\.)*)"', re.S)


def _unescape(text: str) -> str:
    """Decodes an MLIR string literal body (\\XX hex escapes, \\\\, \\")."""
    out = bytearray()
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            nxt = text[i + 1]
            if nxt in '\\"':
                out.append(ord(nxt))
                i += 2
                continue
            if nxt == "n":
                out.append(10)
                i += 2
                continue
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
            continue
        out.extend(ch.encode())
        i += 1
    return out.decode()


def extract_ptx(module) -> Tuple[str, str]:
    """The (kernel name, PTX) of the gpu.binary in `module`."""
    for op in module.body.operations:
        if op.operation.name == "gpu.binary":
            name = op.operation.attributes["sym_name"].value
            m = _ASSEMBLY_RE.search(str(op.operation.attributes["objects"]))
            if not m:
                raise CompilationError("the GPU binary holds no PTX assembly")
            return name, _unescape(m.group(1))
    raise CompilationError("the compiled module holds no GPU binary")


# ---------------------------------------------------------------------------
# ptxas
# ---------------------------------------------------------------------------


def find_ptxas() -> str:
    """ptxas from $TILELANG_MLIR_PTXAS, the PATH, CUDA_HOME, or the
    nvidia-cuda-nvcc wheel."""
    candidates = []
    if os.environ.get("TILELANG_MLIR_PTXAS"):
        candidates.append(os.environ["TILELANG_MLIR_PTXAS"])
    which = shutil.which("ptxas")
    if which:
        candidates.append(which)
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", "ptxas"))
    try:
        import nvidia  # namespace of the nvidia-cuda-nvcc wheel (nvidia/cu13/bin/ptxas)

        for base in list(getattr(nvidia, "__path__", [])):
            for sub in ("cu13", "cuda_nvcc"):
                candidates.append(os.path.join(base, sub, "bin", "ptxas"))
    except ImportError:
        pass
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise CompilationError(
        "ptxas not found: install the CUDA toolkit (ptxas on PATH or in CUDA_HOME/bin) or "
        "the nvidia-cuda-nvcc wheel (pip install nvidia-cuda-nvcc), or set TILELANG_MLIR_PTXAS")


_PTXAS_INFO = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def ptxas_timeout():
    """Seconds ptxas may run: TILELANG_MLIR_PTXAS_TIMEOUT, else TileLang's
    TILELANG_COMPILE_TIMEOUT_SECONDS (its nvcc timeout); None (no limit)
    when unset, empty or 0. A value that is not a non-negative number is an
    error naming the variable."""
    for name in ("TILELANG_MLIR_PTXAS_TIMEOUT", "TILELANG_COMPILE_TIMEOUT_SECONDS"):
        text = os.environ.get(name, "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value >= 0 or value == float("inf"):
            raise CompilationError(f"{name}={text!r} is not a non-negative number of seconds")
        return value or None
    return None


def assemble(ptx: str, arch: str) -> Tuple[bytes, str]:
    """Runs ptxas; returns the cubin and its resource report."""
    ptxas = find_ptxas()
    with tempfile.TemporaryDirectory(prefix="tilelang-ptxas-") as d:
        src, out = os.path.join(d, "kernel.ptx"), os.path.join(d, "kernel.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        timeout = ptxas_timeout()
        try:
            proc = subprocess.run([ptxas, f"-arch={arch}", "-O3", "-v", src, "-o", out],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CompilationError(f"ptxas did not finish within {timeout:g} s for {arch} "
                                   "(TILELANG_MLIR_PTXAS_TIMEOUT / "
                                   "TILELANG_COMPILE_TIMEOUT_SECONDS)") from None
        if proc.returncode != 0:
            raise CompilationError(f"ptxas failed for {arch}:\n{proc.stderr.strip()}"
                                   + _ptxas_hint(ptx, proc.stderr))
        with open(out, "rb") as f:
            return f.read(), proc.stderr.strip()


_INSUFFICIENT = re.compile(r"Insufficient registers \((\d+)\).*register target of (\d+)")
_MAXNTID = re.compile(r"\.(?:maxntid|reqntid)\s+(\d+)")


def _ptxas_hint(ptx: str, stderr: str) -> str:
    """What a known ptxas failure means for the tile program."""
    m = _INSUFFICIENT.search(stderr)
    if not m:
        return ""
    cap, need = int(m.group(1)), int(m.group(2))
    threads = _MAXNTID.search(ptx)
    block = f"{threads.group(1)} threads a block" if threads else "this block size"
    return (f"\nThe kernel needs at least {need} registers per thread, but with {block} "
            f"(65536 registers a multiprocessor) each thread gets {cap} at launch. Use fewer "
            f"threads or a smaller tile (a warp-specialized sm_90a kernel adds a producer "
            f"warpgroup of 128 threads to the block).")


def resource_report(info: str) -> Dict[str, int]:
    """Registers and spill bytes from a ptxas -v report."""
    regs = _PTXAS_INFO.search(info)
    spills = _SPILLS.search(info)
    return {"registers": int(regs.group(1)) if regs else -1,
            "spill_stores": int(spills.group(1)) if spills else 0,
            "spill_loads": int(spills.group(2)) if spills else 0}


# ---------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------


class CUDABackend(Backend):
    """`cuda:<chip>`: PTX through LLVM's NVPTX backend, a cubin from ptxas;
    runs through the CUDA driver (`runtime/cuda.py`)."""

    kind = "cuda"

    def stages(self, target, pass_configs: dict) -> List[Stage]:
        return cuda_stages(target, pass_configs)

    def lower(self, func, module, runner, target, pass_configs: dict, out_idx,
              stages: Dict[str, str]) -> CompiledArtifact:
        from .extern import link_sources, module_sources

        sources = module_sources(module)
        all_stages = self.stages(target, pass_configs)
        stages.update(runner.run(module, all_stages[:-1]))
        plot_dir = pass_configs.get("tl.layout_plot_dir")
        if plot_dir:
            from ..tools.layout import save_layout_plots

            save_layout_plots(stages["layout"], str(plot_dir))
        launch = extract_launch(module, func.params)
        stages.update(runner.run(module, all_stages[-1:]))
        entry, ptx = extract_ptx(module)
        if sources:  # T.import_source: NVRTC's functions linked in
            ptx = link_sources(ptx, sources, target.arch)
        cubin, report = assemble(ptx, target.arch)
        return CompiledArtifact(func.name, func.params, out_idx, target, stages, ptx,
                                launch_of(entry, launch), cubin, report)

    def executable(self, artifact: CompiledArtifact):
        from ..runtime.cuda import executable_of

        return executable_of(artifact)

    def kernel(self, artifact: CompiledArtifact):
        from ..runtime.loader import kernel_of

        return kernel_of(artifact)
