"""Kernels from artifacts: what `tl.load` and the compiler's backends build
a `Kernel` with.

`load` reads a folder `Kernel.save` wrote (runtime/artifact.py checks it);
`kernel_of` runs a CUDA `CompiledArtifact`; `make_kernel` a cubin with loose
launch data. Nothing here needs MLIR, the frontend or the compiler.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from typing import Any, Dict, Optional, Sequence

from ..base.artifact import CompiledArtifact, Launch
from ..base.target import parse_target
from .artifact import MANIFEST, read_manifest
from .cuda import CUDAExecutable, executable_of
from .kernel import Kernel


def load(path: str, sync: Optional[bool] = None) -> Kernel:
    """Loads a kernel saved with `Kernel.save` / `save` from the folder
    `path` (or its manifest.json). Needs neither MLIR nor a GPU to load; the
    cubin is loaded onto the GPU at the first call.

    `sync=True` synchronizes and checks errors after every launch (default:
    the TILELANG_MLIR_SYNC environment variable).
    """
    path = os.fspath(path)
    if os.path.basename(path) == MANIFEST and os.path.isfile(path):
        path = os.path.dirname(path) or "."
    m = read_manifest(path)
    mpath = os.path.join(path, MANIFEST)
    try:
        target = parse_target(m["target"])
    except ValueError as e:
        raise ValueError(f"{mpath}: {e}") from None
    if target.kind == "cpu":
        return _load_cpu(m, mpath)
    with open(m["cubin_path"], "rb") as f:
        cubin = f.read()
    digest = m.get("cubin_sha256")
    if digest is not None and hashlib.sha256(cubin).hexdigest() != digest:
        raise ValueError(f"{mpath}: {m['cubin_path']} does not match the manifest's "
                         "cubin_sha256 (the file was changed or truncated)")
    ptx = None
    if m["ptx_path"] is not None:
        with open(m["ptx_path"]) as f:
            ptx = f.read()
        digest = m.get("ptx_sha256")
        if digest is not None and hashlib.sha256(ptx.encode()).hexdigest() != digest:
            raise ValueError(f"{mpath}: {m['ptx_path']} does not match the manifest's "
                             "ptx_sha256 (the file was changed or truncated)")
    try:
        kernel = make_kernel(m["name"], m["params"], m["out_idx"], target, cubin=cubin,
                             entry=m["entry"], block=m["block"], grid=m["grid"],
                             shared_bytes=m["shared_bytes"], ptx=ptx, sync=sync,
                             tensormaps=m["tensormaps"])
    except TypeError as e:
        raise TypeError(f"{mpath}: {e}") from None
    # Last, so that a malformed field is named by the checks above.
    if not m["manifest_intact"]:
        raise ValueError(f"{mpath} does not match its manifest_sha256: the manifest was "
                         "edited after it was saved (save the kernel again, or remove the "
                         "field to load it unchecked)")
    return kernel


def _read_checked(path: str, digest: Optional[str], mpath: str, field: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if digest is not None and hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{mpath}: {path} does not match the manifest's {field}_sha256 (the "
                         "file was changed or truncated)")
    return data


def _load_cpu(m: Dict[str, Any], mpath: str) -> Kernel:
    """A saved CPU kernel: its shared library loaded with ctypes."""
    from .cpu import SharedLibraryExecutable, signature_of

    library = _read_checked(m["library_path"], m.get("library_sha256"), mpath, "library")
    source = ""
    if m["source_path"] is not None:
        source = _read_checked(m["source_path"], m.get("source_sha256"), mpath,
                               "source").decode()
    if not m["manifest_intact"]:
        raise ValueError(f"{mpath} does not match its manifest_sha256: the manifest was "
                         "edited after it was saved (save the kernel again, or remove the "
                         "field to load it unchecked)")
    artifact = CompiledArtifact(m["name"], m["params"], m["out_idx"], "cpu", {}, source)
    # The library must be this kernel's (also where no digest says so): one of
    # another kernel would be called with arguments of the wrong shapes.
    signature = signature_of(m["entry"], m["params"], m["out_idx"])
    try:
        exe = SharedLibraryExecutable(m["library_path"], m["entry"], library, signature)
    except ValueError as e:
        raise ValueError(f"{mpath}: {e}") from None
    return Kernel(artifact, exe)


def kernel_of(artifact: CompiledArtifact, sync: Optional[bool] = None):
    """A `Kernel` running the CUDA `artifact` (what the compiler and
    `tl.load` build)."""
    exe = executable_of(artifact, sync)
    return Kernel(_normalized(artifact, exe), exe)


def _normalized(artifact: CompiledArtifact, exe: CUDAExecutable) -> CompiledArtifact:
    """`artifact` with the launch data as the executable checked them (the
    block padded to three extents, the tensor maps normalized)."""
    launch = Launch.of(exe.entry, exe.grid, exe.block, exe.shared_bytes, exe.tensormaps)
    return replace(artifact, launch=launch, binary=exe.cubin)


def make_kernel(name: str, params: Sequence, out_idx: Sequence[int], target, *, cubin: bytes,
                entry: str, block: Sequence[int], grid: Sequence[dict], shared_bytes: int,
                ptx: Optional[str] = None, stages: Optional[Dict[str, str]] = None,
                sync: Optional[bool] = None, tensormaps: Sequence[dict] = ()):
    """A `Kernel` running `cubin`, from loose launch data (checked here).

    `target` is a Target or a target string ("cuda:sm_90a"); `stages` the IR
    of the pipeline's stages when there is any (none for loaded artifacts);
    `tensormaps` the TMA tensor maps the kernel takes before its parameters.
    """
    exe = CUDAExecutable(cubin, entry, block, shared_bytes, grid, params, name=name, sync=sync,
                         tensormaps=tensormaps)
    artifact = CompiledArtifact(name, tuple(params), tuple(out_idx), target,
                                dict(stages or {}), ptx or "")
    return Kernel(_normalized(artifact, exe), exe)
