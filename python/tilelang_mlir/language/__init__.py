"""The tile language: `import tilelang_mlir.language as T`.

Names and meanings follow TileLang where they exist.

This package's modules are the T.* surface and the values a tile program
computes with; they import only the bottom layer (`tilelang_mlir.base`). The
frontend, above them, runs a program and hands T.* operations its builder
through `state`. This file, the `T` namespace, is the one place that reaches
up: it also offers the frontend's decorators `T.prim_func` and `T.macro`.
"""

from ..frontend.prim_func import macro, prim_func  # the T namespace: see above
from .allocate import (allocate, alloc_buffer, alloc_fragment, alloc_global, alloc_local,
                       alloc_reducer, alloc_shared, alloc_var, finalize_reducer, reducer_init,
                       reducer_update)
from .annotations import (annotate_compile_flags, annotate_layout, annotate_pass_configs,
                          annotate_restrict_buffers, annotate_safe_value, device_assert,
                          disable_warp_group_reg_alloc, make_padded_layout,
                          make_swizzled_layout, no_set_max_nreg, print, use_swizzle)
from .copy import async_copy, atomic_add, c2d_im2col, clear, copy, fill, im2col, transpose
from .eager import const, empty
from ..base.dtypes import ALL_NAMES as _DTYPE_NAMES, DType, as_dtype as _as_dtype
from .dtypes import dtype
from .gemm import GemmWarpPolicy, gemm, gemm_sp, wait_wgmma, wgmma_gemm
from .kernel import (Kernel, get_block_binding, get_block_bindings, get_block_extent,
                     get_block_extents, get_thread_extent, get_thread_extents)
from .layout import Fragment, Layout, reshape, view
from .loops import (Parallel, Persistent, Pipelined, Serial, Unroll, Vectorized, grid,
                    launch_thread, loop_break, parallel, serial, thread_binding, unroll,
                    vectorized)
from .math import (Cast, abs, acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and,
                   bitwise_not, bitwise_or, bitwise_xor, cast, ceil, ceildiv, clamp, clz,
                   copysign, cos, cosh, erf, exp, exp2, exp10, fabs, fast_rcp, floor, floordiv,
                   floormod, fmod, hypot, if_then_else, infinity, isfinite, isinf, isnan, ldexp,
                   log, log10, log1p, log2, max, max_value, min, min_value, nearbyint,
                   nextafter, popcount, pow, reinterpret, round, rsqrt, shift_left,
                   shift_right, sigmoid, sin, sinh, sqrt, tan, tanh, trunc, truncdiv,
                   truncmod, hadd2, hsub2, hmul2, hfma2, pack2, unpack2, __exp, __exp10,
                   __log, __log2, __log10, __sin, __cos, __tan, ieee_add, ieee_sub, ieee_mul,
                   ieee_fmaf, ieee_fdiv, ieee_frcp, ieee_fsqrt, ieee_frsqrt, Select, align_up,
                   index_to_coordinates, linear_index)
from .random import rng_init, rng_rand, rng_rand_float
from .reduce import (cummax, cumsum, reduce, reduce_absmax, reduce_abssum, reduce_bitand,
                     reduce_bitor, reduce_bitxor, reduce_max, reduce_min, reduce_sum)
from .roles import (access_ptr, alloc_barrier, annotate_consumer_reg_alloc,
                    annotate_producer_reg_dealloc, barrier_arrive, barrier_wait,
                    cp_async_barrier_noinc, dec_max_nreg, fence_proxy_async,
                    get_thread_binding, get_thread_bindings, inc_max_nreg, mbarrier_arrive,
                    mbarrier_expect_tx, mbarrier_wait_parity, ptx_commit_group, ptx_cp_async,
                    ptx_wait_group, set_max_nreg, shuffle_elect, sync_threads, tma_copy, ws)
from .tir import (Broadcast, PrimExpr, Ramp, Shuffle, assume, extract_lane, atomic_max, atomic_min, attr, call_extern, call_intrin,
                  call_pure_extern, comm_reducer, dp4a, evaluate, func_attr, get_let_value,
                  has_let_value, import_source, let, make_tensor, sync_grid,
                  tvm_thread_allreduce)
from .logical import all_of, any_of
from .meta import inline, meta_class
from .tile_schedule import BaseTileScheduler, PersistentTileScheduler
from .distributed import signal, wait
from .types import (Buffer, FragmentBuffer, LocalBuffer, Ref, SharedBuffer, StridedTensor,
                    SymmetricTensor, Tensor, Var, dynamic, symbolic)

# Every dtype name of TileLang's T namespace (T.float16, T.half, T.int4,
# T.float8_e4m3fn, T.float16x2, ...): base/dtypes.py's table.
for _name in _DTYPE_NAMES:
    globals()[_name] = _as_dtype(_name)
del _name
# T.ptr: TileLang's element type of tensors of device pointers (T.make_tensor);
# known by name only.
ptr = _as_dtype("handle")
