"""CUDA C++ device functions a program brings (TileLang's `T.import_source`
and `T.call_extern` of a function it defines).

The program's sources are kept in the module attribute `tile.extern_sources`;
each distinct call signature gets a C wrapper of its own (`__tl_extern_<k>`,
generated here) that the kernel calls through `tile.call_extern`: its
parameters are the result's slot (a pointer) and the arguments, pointers and
32/64-bit integers only (floats travel as their bits), so that the PTX
prototypes LLVM and NVRTC write for it agree. The CUDA backend compiles
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
import hashlib
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from ..base import dtypes as dt
from ..base.errors import CompilationError, TileLangError

# The C++ type of a buffer element behind a pointer argument, and of a
# result, by dtype name: TileLang's names (half_t, bfloat16_t, fp8_e4_t, ...)
# as the prelude below defines them.
_ELEMENT_CTYPES = {
    "float16": "half_t", "bfloat16": "bfloat16_t", "float32": "float", "float64": "double",
    "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int", "uint32": "uint", "int64": "int64_t", "uint64": "uint64_t",
    "float8_e4m3fn": "fp8_e4_t", "float8_e4m3": "fp8_e4_t", "float8_e5m2": "fp8_e5_t",
    "bool": "bool",
}

# Scalar arguments: (C++ type the callee sees, integer type it travels as,
# the conversion from those bits).
_SCALAR_CTYPES = {
    "int32": ("int", "int", "{}"),
    "uint32": ("uint", "uint", "{}"),
    "int64": ("int64_t", "int64_t", "{}"),
    "uint64": ("uint64_t", "uint64_t", "{}"),
    "float32": ("float", "uint", "__uint_as_float({})"),
    "float64": ("double", "uint64_t", "__longlong_as_double((long long){})"),
}

PRELUDE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned int uint;
typedef __half half_t;
typedef __nv_bfloat16 bfloat16_t;
typedef __nv_fp8_e4m3 fp8_e4_t;
typedef __nv_fp8_e5m2 fp8_e5_t;

// Two halves (bfloat16s) packed into 32 bits, x in the low half.
static __device__ __forceinline__ unsigned __pack_half2(const half_t x, const half_t y) {
  return (unsigned)__half_as_ushort(x) | ((unsigned)__half_as_ushort(y) << 16);
}
static __device__ __forceinline__ unsigned __pack_nv_bfloat162(const bfloat16_t x,
                                                               const bfloat16_t y) {
  return (unsigned)__bfloat16_as_ushort(x) | ((unsigned)__bfloat16_as_ushort(y) << 16);
}

template <typename T> struct __tl_is_void { enum { value = 0 }; };
template <> struct __tl_is_void<void> { enum { value = 1 }; };
// Calls f(); stores its value (converted) in *r unless it returns void.
template <typename R, typename F>
static __device__ __forceinline__ void __tl_call(R *r, F f) {
  if constexpr (__tl_is_void<decltype(f())>::value) {
    f();
  } else {
    *r = (R)f();
  }
}
"""

WRAPPER_PREFIX = "__tl_extern_"


def element_ctype(dtype, what: str) -> str:
    name = dt.as_dtype(dtype).name
    if name not in _ELEMENT_CTYPES:
        raise TileLangError(f"{what}: a {name} buffer has no C++ element type here "
                            f"(pointers to {', '.join(sorted(_ELEMENT_CTYPES))})")
    return _ELEMENT_CTYPES[name]


def scalar_ctype(dtype, what: str) -> Tuple[str, str, str]:
    name = dt.as_dtype(dtype).name
    if name not in _SCALAR_CTYPES:
        raise TileLangError(f"{what}: a {name} scalar cannot be passed to an external function "
                            f"here (scalars are {', '.join(sorted(_SCALAR_CTYPES))}; cast it, "
                            "or pass a buffer element with T.access_ptr)")
    return _SCALAR_CTYPES[name]


def wrapper(index: int, callee: str, result: Optional[str],
            params: Sequence[Tuple[str, str]]) -> Tuple[str, str]:
    """(name, C++ source) of the wrapper calling `callee`. `params`: per
    argument ("ptr", element C type) or ("scalar", dtype name); `result`:
    the result's dtype name (its slot is the first parameter), or None (a
    value the function returns is dropped)."""
    name = f"{WRAPPER_PREFIX}{index}"
    decls = [f"{element_ctype(result, 'T.call_extern result')} *__r"] if result else []
    args = []
    for k, (kind, ctype) in enumerate(params):
        if kind == "ptr":
            decls.append(f"{ctype} *a{k}")
            args.append(f"a{k}")
        else:
            seen, bits, conv = _SCALAR_CTYPES[ctype]
            decls.append(f"{bits} a{k}")
            args.append(f"({seen})" + conv.format(f"a{k}"))
    call = f"{callee}({', '.join(args)})"
    inner = (f"__tl_call(__r, [&]() {{ return {call}; }});" if result else f"(void){call};")
    body = f'extern "C" __device__ void {name}({", ".join(decls)}) {{\n  {inner}\n}}\n'

    return name, body


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
    raise TileLangError("T.import_source needs NVRTC to compile the program's CUDA C++: "
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
            raise CompilationError("the program's CUDA C++ source (T.import_source) does not "
                                   f"compile for {arch}:\n{text}")
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


def digest(sources: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()[:16]


__all__ = ["PRELUDE", "WRAPPER_PREFIX", "compile_ptx", "element_ctype", "link",
           "link_sources", "module_sources", "nvrtc", "scalar_ctype", "wrapper"]
