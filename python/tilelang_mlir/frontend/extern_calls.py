"""The C side of T.call_extern: the C++ types of its arguments, the wrapper
each call signature gets (`__tl_extern_<k>`) and the prelude the program's
CUDA sources compile under (TileLang's type names). The compiler's
compiler/extern.py compiles and links them.

A wrapper's parameters are the result's slot (a pointer; none when the call
has no result) and the arguments: pointers, and 32/64-bit integers (floats
travel as their bits), so that the PTX prototypes LLVM and NVRTC write for
it agree."""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

from ..base import dtypes as dt
from ..base.errors import TileLangError

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
