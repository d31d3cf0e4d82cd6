"""The ROCm (AMD) target: pipeline, LLVM IR, code object.

The MLIR/LLVM build the compiler links has no AMDGPU code generator, so the
GPU module is lowered to the LLVM dialect here (convert-tile-to-rocdl, then
MLIR's GPU-to-ROCDL conversion), translated to LLVM IR, and handed to
llvmlite (LLVM 22 with the AMDGPU target) for assembly and a relocatable
object; ld.lld from the ziglang wheel links the object into an HSA code
object (a shared ELF with the kernel and its `.kd` descriptor). There is no
HIP runtime in this package: ROCm kernels compile only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

from ..base.artifact import CompiledArtifact
from ..base.errors import CompilationError
from ..base.target import Target
from .backend import Backend
from .launch import extract_launch, launch_of
from .pipeline import Stage, safe_access, translate_to_llvmir

ROCM_EXTRA = "pip install 'llvmlite==0.50.0' 'ziglang==0.17.1' (or tilelang-mlir[rocm])"


def rocm_stages(target: Target, pass_configs: dict = None) -> List[Stage]:
    chip = target.arch
    gm = lambda p: f"gpu.module({p})"  # noqa: E731
    return [
        Stage("tile-opt", ["func.func(tile-check-uninitialized)", "func.func(tile-legalize-conversions)", "lower-affine", "canonicalize", "cse"]
                          + (["func.func(tile-precise-math)"]
                             if (pass_configs or {}).get("tl.precise_math") else [])
                          + safe_access(pass_configs)),
        Stage("pipelined", ["func.func(tile-pipeline)", "canonicalize", "cse"]),
        Stage("layout", ["func.func(tile-layout-inference{mma=false mfma=true})",
                         "func.func(tile-insert-barriers)"]),
        Stage("gpu", [f"convert-tile-to-rocdl{{chip={chip}}}", "canonicalize", "cse"]),
        Stage("rocdl", [gm("convert-scf-to-cf"), gm("convert-math-to-llvm"),
                        gm(f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth=64}}"),
                        gm("canonicalize"), gm("cse"), gm("reconcile-unrealized-casts")]),
    ]


def gpu_module_llvm_ir(module) -> Tuple[str, str]:
    """(kernel name, LLVM IR) of the module's one gpu.module."""
    found = []
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            found.append(op)
    if len(found) != 1:
        raise CompilationError(f"expected one gpu.module, found {len(found)}")
    gpu_module = found[0].operation
    entry = None
    for op in gpu_module.regions[0].blocks[0].operations:
        if op.operation.name == "llvm.func" and "rocdl.kernel" in op.operation.attributes:
            entry = op.operation.attributes["sym_name"].value
    if entry is None:
        raise CompilationError("the gpu.module has no kernel function")
    return entry, translate_to_llvmir(gpu_module, module.context, "the GPU module")


def codegen(llvm_ir: str, arch: str) -> Tuple[str, bytes]:
    """(assembly, relocatable object) for the AMD `arch`, through llvmlite."""
    try:
        import llvmlite.binding as llvm
    except ImportError:
        raise CompilationError(f"ROCm targets need llvmlite's AMDGPU code generator: "
                               f"{ROCM_EXTRA}") from None
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    triple = "amdgcn-amd-amdhsa"
    target = llvm.Target.from_triple(triple)
    machine = target.create_target_machine(cpu=arch, opt=3, reloc="pic", codemodel="default")

    try:
        # LLVM's O3 pipeline first (promotes the per-thread arrays to
        # registers, as the NVPTX route does inside MLIR), once.
        m = llvm.parse_assembly(llvm_ir)
        m.triple = triple
        m.data_layout = str(machine.target_data)
        m.verify()
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(m, builder)
        optimized = str(m)
        # Code generation consumes the module: each output parses the
        # optimized IR again (cheap next to O3 and instruction selection).
        asm = machine.emit_assembly(llvm.parse_assembly(optimized))
        obj = machine.emit_object(llvm.parse_assembly(optimized))
    except RuntimeError as e:
        raise CompilationError(f"AMDGPU code generation for {arch} failed: {e}") from None
    return asm, obj


def link(obj: bytes) -> bytes:
    """The HSA code object (ld.lld -shared) of a relocatable AMDGPU object."""
    try:
        import ziglang  # noqa: F401  (ships ld.lld)
    except ImportError:
        raise CompilationError(f"linking an AMD code object needs ld.lld: {ROCM_EXTRA}") from None
    with tempfile.TemporaryDirectory(prefix="tilelang-hsaco-") as d:
        src, out = os.path.join(d, "kernel.o"), os.path.join(d, "kernel.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        proc = subprocess.run([sys.executable, "-m", "ziglang", "ld.lld", "-shared",
                               "--no-undefined", src, "-o", out], capture_output=True, text=True)
        if proc.returncode != 0:
            missing = sorted(set(re.findall(r"undefined symbol: (\S+)", proc.stderr)))
            hint = ""
            if any(s.startswith(("__ocml", "__ockl")) for s in missing):
                hint = (" (these are ROCm device-library functions, which this build does not "
                        "link: the kernel uses a math function or print that needs them)")
            raise CompilationError("linking the AMD code object failed"
                                   + (f": undefined {', '.join(missing)}{hint}" if missing else "")
                                   + f"\n{proc.stderr.strip()}")
        with open(out, "rb") as f:
            return f.read()


_RESOURCE = {
    "vgprs": re.compile(r"\.vgpr_count:\s+(\d+)"),
    "agprs": re.compile(r"\.agpr_count:\s+(\d+)"),
    "sgprs": re.compile(r"\.sgpr_count:\s+(\d+)"),
    "scratch_bytes": re.compile(r"\.private_segment_fixed_size:\s+(\d+)"),
    "static_lds_bytes": re.compile(r"\.group_segment_fixed_size:\s+(\d+)"),
}


def resource_report(asm: str) -> Dict[str, int]:
    """Registers, scratch (spill) bytes and static LDS from the code object
    metadata in the assembly (-1 where absent)."""
    report = {}
    for key, pattern in _RESOURCE.items():
        m = pattern.search(asm)
        report[key] = int(m.group(1)) if m else -1
    return report


class ROCmBackend(Backend):
    """`rocm:<chip>`: LLVM IR through llvmlite's AMDGPU backend, an HSA code
    object from ld.lld; compiles only (`runtime/rocm.py`)."""

    kind = "rocm"

    def stages(self, target, pass_configs: dict) -> List[Stage]:
        return rocm_stages(target, pass_configs)

    def lower(self, func, module, runner, target, pass_configs: dict, out_idx,
              stages: Dict[str, str]) -> CompiledArtifact:
        stages.update(runner.run(module, self.stages(target, pass_configs)))
        launch = extract_launch(module, func.params)
        entry, llvm_ir = gpu_module_llvm_ir(module)
        stages["llvm"] = llvm_ir
        asm, obj = codegen(llvm_ir, target.arch)
        return CompiledArtifact(func.name, func.params, out_idx, target, stages, asm,
                                launch_of(entry, launch), link(obj))

    def executable(self, artifact: CompiledArtifact):
        from ..runtime.rocm import CompileOnly

        return CompileOnly(artifact.name, str(artifact.target))
