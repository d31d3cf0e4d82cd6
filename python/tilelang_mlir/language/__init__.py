"""The tile language: `import tilelang_mlir.language as T`.

Names and meanings follow TileLang where they exist.

This package's modules are the T.* surface and the values a tile program
computes with; they import only the bottom layer (`tilelang_mlir.base`). The
frontend, above them, runs a program and hands T.* operations its builder
through `state`. This file, the `T` namespace, is the one place that reaches
up: it also offers the frontend's decorators `T.prim_func` and `T.macro`.
"""

from ..frontend.prim_func import macro, prim_func  # the T namespace: see above
from .allocate import alloc_fragment, alloc_local, alloc_shared, alloc_var
from .annotations import (annotate_layout, device_assert, make_padded_layout,
                          make_swizzled_layout, print, use_swizzle)
from .copy import atomic_add, clear, copy, fill
from .eager import const, empty
from ..base.dtypes import (DType, bfloat16, float8_e4m3, float8_e5m2, float16, float32,
                           float64, int8, int16, int32, int64, uint8)
from ..base.dtypes import boolean as bool  # noqa: A001 (T.bool, as in TileLang)
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
