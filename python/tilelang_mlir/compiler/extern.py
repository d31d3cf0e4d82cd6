"""CUDA C++ device functions a program brings (TileLang's `T.import_source`
and `T.call_extern` of a function it defines).

The program's sources are kept in the module attribute `tile.extern_sources`,
with a C wrapper per call signature (frontend/extern_calls.py) that the
kernel calls through `tile.call_extern`. The CUDA backend compiles
prelude + sources + wrappers with NVRTC (relocatable device code: every
wrapper stays in the PTX) and splices its functions into the kernel's PTX
before ptxas.

NVRTC comes from the CUDA toolkit or the `nvidia-cuda-nvrtc` wheel (PyTorch's
CUDA wheels install it); its headers (cuda_fp16.h, ...) from the toolkit or
the `nvidia-cuda-runtime` wheel.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
from typing import List, Sequence, Tuple

from ..base.errors import CompilationError, TileLangError
from ..frontend.extern_calls import PRELUDE

# ---------------------------------------------------------------------------
# NVRTC
# ---------------------------------------------------------------------------

def _nvidia_dirs() -> List[str]:
    dirs = []
    try:
        import nvidia  # namespace package of NVIDIA's CUDA wheels

        for base in getattr(nvidia, "__path__", []):
            dirs.extend(sorted(glob.glob(os.path.join(base, "*"))))
    except ImportError:
        pass
    return dirs


def _cuda_homes() -> List[str]:
    homes = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")]
    return [h for h in homes if h] + ["/usr/local/cuda"]


_NVRTC = None


def nvrtc():
    """The NVRTC library (ctypes), found in NVIDIA's wheels, the CUDA
    toolkit or the loader's path."""
    global _NVRTC
    if _NVRTC is not None:
        return _NVRTC
    candidates = []
    for d in _nvidia_dirs():
        candidates += sorted(glob.glob(os.path.join(d, "lib", "libnvrtc.so*")), reverse=True)
    for h in _cuda_homes():
        candidates += sorted(glob.glob(os.path.join(h, "lib64", "libnvrtc.so*")), reverse=True)
    candidates += ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    for c in candidates:
        if "builtins" in os.path.basename(c) or "alt" in os.path.basename(c):
            continue
        try:
            # NVRTC opens its builtins library by name: load the one beside it
            # first (a wheel's directory is not on the loader's path).
            for builtins in sorted(glob.glob(os.path.join(os.path.dirname(c),
                                                          "libnvrtc-builtins.so*"))):
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
            lib = ctypes.CDLL(c)
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            _NVRTC = lib
            return lib
        except OSError:
            continue
    raise TileLangError("T.import_source and T.call_extern need NVRTC to compile the "
                        "program's CUDA C++: "
                        "install the CUDA toolkit or the nvidia-cuda-nvrtc wheel (pip install "
                        "nvidia-cuda-nvrtc; PyTorch's CUDA wheels bring it)")


def include_dirs() -> List[str]:
    """Where cuda_fp16.h and its siblings are."""
    dirs = [os.path.join(d, "include") for d in _nvidia_dirs()]
    dirs += [os.path.join(h, "include") for h in _cuda_homes()]
    return [d for d in dirs if os.path.isfile(os.path.join(d, "cuda_fp16.h"))]


def compile_ptx(source: str, arch: str) -> str:
    """PTX of `source` for `arch` (sm_90a, ...) by NVRTC, as relocatable
    device code; errors carry NVRTC's log."""
    lib = nvrtc()
    prog = ctypes.c_void_p()

    def check(rc, what):
        if rc != 0:
            raise CompilationError(f"NVRTC {what} failed: "
                                   f"{lib.nvrtcGetErrorString(rc).decode()}")

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"tilelang_extern.cu",
                                 0, None, None), "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}", "-rdc=true",
                "-std=c++17", "--use_fast_math", "-default-device"]
        opts += [f"-I{d}" for d in include_dirs()]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if rc != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            text = log.value.decode(errors="replace").strip()
            raise CompilationError("the program's CUDA C++ (its T.import_source and the "
                                   "wrappers of its T.call_extern calls) does not compile for "
                                   f"{arch} (a function that is not a CUDA device builtin "
                                   f"needs the T.import_source of its definition):\n{text}")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
        return buf.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ---------------------------------------------------------------------------
# Linking into the kernel's PTX
# ---------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b.*$", re.M)
_DEFINITION = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.func\s*(?:\([^)]*\)\s*)?([\w$]+)",
                         re.M)


def _extern_decls(ptx: str) -> List[Tuple[str, Tuple[int, int]]]:
    """(name, span) of the top-level `.extern .func` declarations: the name
    is the identifier left when the parameter lists (a return list may come
    first) are taken out."""
    out = []
    for m in re.finditer(r"^\.extern \.func\b", ptx, re.M):
        end = ptx.index(";", m.end())
        head = re.sub(r"\([^)]*\)", " ", ptx[m.end():end])
        idents = re.findall(r"[A-Za-z_$][\w$]*", head)
        out.append((idents[-1] if idents else "", (m.start(), end + 1)))
    return out


def _drop(text: str, spans) -> str:
    for a, b in sorted(spans, reverse=True):
        text = text[:a] + text[b:]
    return text


def link(kernel_ptx: str, extern_ptx: str) -> str:
    """The kernel's PTX with NVRTC's functions in place of its external
    declarations of them: NVRTC's module (less its header and the
    declarations the kernel makes too, such as vprintf's) goes after the
    kernel's header, before anything that calls it."""
    body = _HEADER.sub("", extern_ptx)
    defined = set(_DEFINITION.findall(body))
    kernel_ptx = _drop(kernel_ptx, [span for name, span in _extern_decls(kernel_ptx)
                                    if name in defined])
    declared = {name for name, _ in _extern_decls(kernel_ptx)}
    body = _drop(body, [span for name, span in _extern_decls(body) if name in declared])
    headers = list(_HEADER.finditer(kernel_ptx))
    at = headers[-1].end() if headers else 0
    return (kernel_ptx[:at] + "\n\n// T.import_source (NVRTC)\n" + body.strip() + "\n"
            + kernel_ptx[at:])


def link_sources(kernel_ptx: str, sources: Sequence[str], arch: str) -> str:
    """The kernel's PTX with the program's CUDA sources linked in."""
    extern_ptx = compile_ptx(PRELUDE + "\n".join(sources), arch)
    return link(kernel_ptx, extern_ptx)


def module_sources(module) -> List[str]:
    """The sources kept on `module` (`tile.extern_sources`), in order."""
    attrs = module.operation.attributes
    if "tile.extern_sources" not in attrs:
        return []
    return [str(a.value) for a in attrs["tile.extern_sources"]]


__all__ = ["compile_ptx", "link", "link_sources", "module_sources", "nvrtc"]
