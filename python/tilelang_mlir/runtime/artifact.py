"""Ahead-of-time artifacts of CUDA and CPU kernels: save a compiled kernel
to a folder, load it back on a machine without the compiler (no MLIR
needed: numpy, torch and, for CUDA, cuda-python's driver bindings).

The folder holds

- `manifest.json`: the format version, the kernel's name and entry point,
  the target ("cuda:sm_90a"), the parameters, `out_idx`, the launch
  configuration (block, grid expressions, dynamic shared memory bytes, the
  TMA tensor maps the kernel takes before its parameters) and the file names
  of the code;
- `<name>.cubin`: the code the runtime loads;
- `<name>.ptx`: the PTX it was assembled from (for reading; optional).

The manifest carries the sha256 of the cubin and the PTX, and its own
(`manifest_sha256`, over every other field), so that an edited or truncated
artifact is refused rather than launched. Manifests written before these
fields load without the check.

A CPU kernel's folder (format version 3) holds `<name>.so`, a shared
library with the kernel's C-interface entry, the runtime routines it may
call and the kernel's signature (runtime/cpu.py), linked when the kernel is
saved, and `<name>.ll`, its LLVM IR (for reading). Loading checks that the
library's signature is the manifest's, digests or not.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any, Dict, Optional

from ..base.signature import Param, int_scalars_of, symbols_of

FORMAT = "tilelang_mlir.kernel"
# Version 2 adds "tensormaps" (a list of {"param", "box", "swizzle"}). A
# kernel without tensor maps is written as version 1, which older runtimes
# read; one with tensor maps as version 2, which they refuse rather than
# launch without the maps.
FORMAT_VERSION = 2
# Version 3: a CPU kernel ("library": a shared library with the kernel's
# C-interface entry and the runtime routines, runtime/cpu.py). CUDA kernels
# keep versions 1 and 2.
CPU_FORMAT_VERSION = 3
READ_VERSIONS = (1, 2, 3)
MANIFEST = "manifest.json"

_COMMON = ("format_version", "name", "entry", "target", "params", "out_idx")
_REQUIRED = _COMMON + ("block", "grid", "shared_bytes", "cubin")
_REQUIRED_CPU = _COMMON + ("library",)


def _file_stem(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name).lstrip(".")
    return stem or "kernel"


def _write(path: str, data, mode: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, mode) as f:
        f.write(data)
    os.replace(tmp, path)


def save(kernel, path: str) -> None:
    """Writes `kernel` (a CUDA or CPU kernel) into the folder `path`,
    creating it.

    Existing files of the same names are replaced.
    """
    if getattr(kernel, "device", None) == "cpu":
        return _save_cpu(kernel, path)
    if getattr(kernel, "device", None) != "cuda" or getattr(kernel, "cubin", None) is None:
        raise NotImplementedError(
            f"only CUDA and CPU kernels can be saved as artifacts; kernel {kernel.name!r} "
            f"targets {kernel.target}")
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    stem = _file_stem(kernel.name)
    cubin_file = stem + ".cubin"
    ptx_file = stem + ".ptx" if kernel.ptx is not None else None
    from ..base.version import __version__

    tensormaps = [dict(m) for m in getattr(kernel, "tensormaps", None) or []]
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION if tensormaps else 1,
        "tilelang_mlir_version": __version__,
        "name": kernel.name,
        "entry": kernel.entry,
        "target": str(kernel.target),
        "params": [p.to_json() for p in kernel.params],
        "out_idx": list(kernel.out_idx),
        "block": list(kernel.block),
        "grid": list(kernel.grid),
        "shared_bytes": kernel.shared_bytes,
        "tensormaps": tensormaps,
        "cubin": cubin_file,
        "cubin_sha256": hashlib.sha256(kernel.cubin).hexdigest(),
        "ptx": ptx_file,
    }
    if ptx_file is not None:
        manifest["ptx_sha256"] = hashlib.sha256(kernel.ptx.encode()).hexdigest()
    manifest["manifest_sha256"] = _manifest_digest(manifest)
    _write(os.path.join(path, cubin_file), bytes(kernel.cubin), "wb")
    if ptx_file is not None:
        _write(os.path.join(path, ptx_file), kernel.ptx, "w")
    # The manifest last: a folder with a manifest is complete.
    _write(os.path.join(path, MANIFEST), json.dumps(manifest, indent=2) + "\n", "w")


def _save_cpu(kernel, path: str) -> None:
    """A CPU kernel: its shared library (from the executable that runs it:
    the compiler's JIT links one, a loaded kernel has its own) and its LLVM
    IR."""
    library_of = getattr(kernel._executable, "shared_library", None)
    if library_of is None:
        raise NotImplementedError(f"kernel {kernel.name!r} cannot be saved: its executable "
                                  "makes no shared library")
    from .cpu import signature_of

    library = library_of(signature_of(kernel.name, kernel.params, kernel.out_idx))
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    stem = _file_stem(kernel.name)
    library_file, source_file = stem + ".so", stem + ".ll"
    from ..base.version import __version__

    manifest = {
        "format": FORMAT,
        "format_version": CPU_FORMAT_VERSION,
        "tilelang_mlir_version": __version__,
        "name": kernel.name,
        "entry": kernel.name,
        "target": str(kernel.target),
        "params": [p.to_json() for p in kernel.params],
        "out_idx": list(kernel.out_idx),
        "library": library_file,
        "library_sha256": hashlib.sha256(library).hexdigest(),
        "source": source_file if kernel.get_source() else None,
    }
    if manifest["source"] is not None:
        manifest["source_sha256"] = hashlib.sha256(kernel.get_source().encode()).hexdigest()
        _write(os.path.join(path, source_file), kernel.get_source(), "w")
    manifest["manifest_sha256"] = _manifest_digest(manifest)
    _write(os.path.join(path, library_file), bytes(library), "wb")
    _write(os.path.join(path, MANIFEST), json.dumps(manifest, indent=2) + "\n", "w")


def _manifest_digest(manifest: Dict[str, Any]) -> str:
    from .cache import digest

    return digest({k: v for k, v in manifest.items() if k != "manifest_sha256"})


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _file_in(path: str, manifest_path: str, field: str, value: Any) -> str:
    if (not isinstance(value, str) or not value or os.path.basename(value) != value
            or value in (".", "..")):
        raise ValueError(f"{manifest_path}: {field!r} must be a file name in the artifact's "
                         f"folder, got {value!r}")
    full = os.path.join(path, value)
    if not os.path.isfile(full):
        raise ValueError(f"{manifest_path}: {field!r} names {value!r}, which is missing from "
                         f"{path}")
    return full


def read_manifest(path: str) -> Dict[str, Any]:
    """Reads and validates `path`/manifest.json; raises ValueError naming the
    file for anything malformed (FileNotFoundError if there is none)."""
    from .cuda import check_grid, check_tensormaps

    mpath = os.path.join(path, MANIFEST)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no kernel artifact at {path}: not a folder")
    if not os.path.isfile(mpath):
        raise FileNotFoundError(f"no kernel artifact at {path}: {MANIFEST} is missing")
    try:
        with open(mpath) as f:
            m = json.load(f)
    except ValueError as e:
        raise ValueError(f"{mpath} is not valid JSON: {e}") from None
    if not isinstance(m, dict):
        raise ValueError(f"{mpath}: the manifest must be a JSON object")
    sealed = m.get("manifest_sha256")
    m["manifest_intact"] = sealed is None or sealed == _manifest_digest(m)
    if m.get("format", FORMAT) != FORMAT:
        raise ValueError(f"{mpath}: not a tilelang_mlir kernel manifest (format "
                         f"{m.get('format')!r})")
    cpu = m.get("target") == "cpu"
    missing = [k for k in (_REQUIRED_CPU if cpu else _REQUIRED) if k not in m]
    if missing:
        raise ValueError(f"{mpath}: missing field(s) {', '.join(missing)}")
    version = m["format_version"]
    if isinstance(version, bool) or version not in READ_VERSIONS:
        raise ValueError(f"{mpath}: unknown format version {version!r} (this tilelang_mlir "
                         f"reads versions {', '.join(map(str, READ_VERSIONS))})")
    for key in ("name", "entry", "target"):
        if not isinstance(m[key], str) or not m[key]:
            raise ValueError(f"{mpath}: {key!r} must be a non-empty string, got {m[key]!r}")
    if not m["target"].startswith("cuda") and not cpu:
        raise ValueError(f"{mpath}: target {m['target']!r} is neither a CUDA target nor "
                         "'cpu'; only CUDA and CPU kernels are loaded from artifacts")
    if cpu != (version == CPU_FORMAT_VERSION):
        raise ValueError(f"{mpath}: format version {version} is not that of a "
                         f"{m['target']} kernel")
    if not isinstance(m["params"], list):
        raise ValueError(f"{mpath}: 'params' must be a list")
    params = []
    for i, d in enumerate(m["params"]):
        try:
            p = Param.from_json(d)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{mpath}: parameter {i} ({d!r}) is malformed: {e}") from None
        if p.kind not in ("tensor", "scalar") or not all(
                isinstance(s, str) or (_is_int(s) and s >= 0) for s in p.shape):
            raise ValueError(f"{mpath}: parameter {i} ({d!r}) is malformed: kind must be "
                             "'tensor' or 'scalar', shape entries ints or symbol names")
        params.append(p)
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        raise ValueError(f"{mpath}: parameter names repeat: {names}")
    out_idx = m["out_idx"]
    if not isinstance(out_idx, list) or not all(
            _is_int(i) and 0 <= i < len(params) and params[i].kind == "tensor"
            for i in out_idx) or len(set(out_idx)) != len(out_idx):
        raise ValueError(f"{mpath}: 'out_idx' must list distinct indices of tensor "
                         f"parameters, got {out_idx!r}")
    if cpu:
        m["params"] = params
        m["library_path"] = _file_in(path, mpath, "library", m["library"])
        source = m.get("source")
        m["source_path"] = _file_in(path, mpath, "source", source) if source is not None else None
        return m
    block = m["block"]
    if (not isinstance(block, list) or not 1 <= len(block) <= 3
            or not all(_is_int(b) and b >= 1 for b in block)):
        raise ValueError(f"{mpath}: 'block' must be 1 to 3 positive ints, got {block!r}")
    if not _is_int(m["shared_bytes"]) or m["shared_bytes"] < 0:
        raise ValueError(f"{mpath}: 'shared_bytes' must be a non-negative int, got "
                         f"{m['shared_bytes']!r}")
    try:
        check_grid(m["grid"], symbols_of(params), int_scalars_of(params))
    except ValueError as e:
        raise ValueError(f"{mpath}: {e}") from None
    try:
        m["tensormaps"] = check_tensormaps(m.get("tensormaps", []), params, m["name"])
    except ValueError as e:
        raise ValueError(f"{mpath}: 'tensormaps': {e}") from None
    m["params"] = params
    m["cubin_path"] = _file_in(path, mpath, "cubin", m["cubin"])
    ptx = m.get("ptx")
    m["ptx_path"] = _file_in(path, mpath, "ptx", ptx) if ptx is not None else None
    return m
