"""The tile language: `import tilelang_mlir.language as T`.

Names and meanings follow TileLang where they exist.
"""

from ..frontend.prim_func import macro, prim_func
from .allocate import alloc_fragment, alloc_local, alloc_shared, alloc_var
from .annotations import (annotate_layout, device_assert, make_padded_layout,
                          make_swizzled_layout, print, use_swizzle)
from .copy import atomic_add, clear, copy, fill
from .dtypes import (DType, bfloat16, float8_e4m3, float8_e5m2, float16, float32,
                     float64, int8, int16, int32, int64, uint8)
from .dtypes import boolean as bool  # noqa: A001 (T.bool, as in TileLang)
from .gemm import GemmWarpPolicy, gemm, gemm_sp, wait_wgmma
from .kernel import Kernel
from .loops import Parallel, Pipelined, serial, unroll, vectorized
from .math import (abs, cast, ceil, ceildiv, cos, erf, exp, exp2, floor, floordiv,
                   floormod, if_then_else, infinity, log, log2, max, max_value, min,
                   min_value, pow, reinterpret, rsqrt, sigmoid, sin, sqrt, tanh, truncdiv,
                   hadd2, hsub2, hmul2, hfma2, pack2, unpack2)
from .reduce import (cumsum, reduce, reduce_absmax, reduce_abssum, reduce_max,
                     reduce_min, reduce_sum)
from .types import Buffer, Tensor, dynamic, symbolic

float8_e4m3fn = float8_e4m3
half = float16
float = float32  # noqa: A001
