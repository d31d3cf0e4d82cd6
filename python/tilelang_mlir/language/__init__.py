"""The tile language: `import tilelang_mlir.language as T`.

Names and meanings follow TileLang where they exist.

This package's modules are the T.* surface and the values a tile program
computes with; they import only the bottom layer (`tilelang_mlir.base`). The
frontend, above them, runs a program and hands T.* operations its builder
through `state`. This file, the `T` namespace, is the one place that reaches
up: it also offers the frontend's decorators `T.prim_func` and `T.macro`.
"""

from ..frontend.prim_func import PrimFunc, macro, prim_func  # the T namespace: see above
from ..frontend.eager import EagerFunction as _EagerFunction
from ..frontend import host_eval as _host_eval  # noqa: F401 - T.* outside programs
from .allocate import (allocate, alloc_buffer, alloc_fragment, alloc_global, alloc_local,
                       alloc_reducer, alloc_shared, alloc_var, finalize_reducer, reducer_init,
                       reducer_update)
from .annotations import (annotate_compile_flags, annotate_layout, annotate_pass_configs,
                          annotate_restrict_buffers, annotate_safe_value, device_assert,
                          disable_warp_group_reg_alloc, make_padded_layout,
                          make_swizzled_layout, no_set_max_nreg, print, use_swizzle)
from .atomic import (atomic_add, atomic_addx2, atomic_addx4, atomic_load, atomic_max,
                     atomic_min, atomic_or, atomic_store)
from .copy import async_copy, c2d_im2col, clear, copy, copy_cluster, fill, im2col, transpose
from .eager import const, empty
from ..base.dtypes import ALL_NAMES as _DTYPE_NAMES, DType, as_dtype as _as_dtype
from .dtypes import (AnyDType, dtype, get_tvm_dtype, is_f8f6f4_family, is_float4,
                     is_float4_e2m1_unpacked, is_float4_e2m1fn, validate_gemm_ab_dtypes)
from .gemm import (GemmWarpPolicy, gemm, gemm_sp, wait_wgmma, warpgroup_fence_operand,
                   warpgroup_wait, wgmma_gemm)
from .kernel import (ClusterKernel, Kernel, KernelLaunchFrame, get_block_binding,
                     get_block_bindings, get_block_extent, get_block_extents,
                     get_thread_extent, get_thread_extents)
from .launch import (annotate_l2_hit_ratio, annotate_min_blocks_per_sm, block_rank_in_cluster,
                     cluster_arrive, cluster_arrive_relaxed, cluster_sync, cluster_wait,
                     pdl_sync, pdl_trigger, sync_global, sync_grid)
from .layout import Fragment, Layout, reshape, view
from .loops import (Parallel, Persistent, Pipelined, Serial, Unroll, Vectorized, grid,
                    launch_thread, loop_break, break_loop, continue_loop, parallel, serial, thread_binding, unroll,
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
                   add2, sub2, mul2, fma2, max2, min2, abs2,
                   index_to_coordinates, linear_index)
from .random import rng_init, rng_rand, rng_rand_float
from .reduce import (cummax, cumsum, reduce, reduce_absmax, reduce_abssum, reduce_bitand,
                     reduce_bitor, reduce_bitxor, reduce_max, reduce_min, reduce_sum)
from .roles import (access_ptr, alloc_barrier, alloc_cluster_barrier,
                    annotate_consumer_reg_alloc, annotate_producer_reg_dealloc, barrier_arrive,
                    barrier_wait,
                    cp_async_barrier_noinc, dec_max_nreg, fence_proxy_async,
                    get_thread_binding, get_thread_bindings, inc_max_nreg, mbarrier_arrive,
                    mbarrier_arrive_expect_tx, mbarrier_expect_tx, mbarrier_wait_parity,
                    named_barrier_arrive, ptx_arrive_cluster_barrier, ptx_commit_group, ptx_cp_async,
                    ptx_wait_group, set_max_nreg, sync_threads, tma_copy, tma_store_arrive,
                    tma_store_wait, tvm_access_ptr, type_annotation, ws)
from .loads import (__ffs, __fns, __ldg, ldg32, ldg64, ldg128, ldg256, lds32, lds64, lds128,
                    stg32, stg64, stg128, stg256, sts32, sts64, sts128)
from .warp import (activemask, all_sync, any_sync, ballot, ballot_sync, get_lane_idx,
                   get_warp_group_idx, get_warp_idx, get_warp_idx_sync, match_all_sync,
                   match_any_sync, shfl_down, shfl_sync, shfl_up, shfl_xor, shuffle_elect,
                   sync_warp, syncthreads_and, syncthreads_count, syncthreads_or, thread_return,
                   warp_reduce_bitand, warp_reduce_bitor, warp_reduce_max, warp_reduce_min,
                   warp_reduce_sum)
from .tir import (Broadcast, Else, If, PrimExpr, Then, While, Ramp, Shuffle, address_of, assume, attr, call_extern,
                  call_intrin, call_pure_extern, comm_reducer, dp4a, evaluate, extract_lane,
                  func_attr,
                  get_let_value, has_let_value, import_source, let, make_tensor,
                  make_tensor_from_addr, Ptr, tvm_thread_allreduce, likely, var, meta_var,
                  broadcast, ramp)
from .logical import all_of, any_of
from .meta import inline, meta_class
from .tile_schedule import BaseTileScheduler, PersistentTileScheduler
from .distributed import signal, wait
from .types import (Buffer, FragmentBuffer, LocalBuffer, Ref, SharedBuffer, StridedTensor,
                    SymmetricTensor, Tensor, Var, dynamic, symbolic, JITFunc)

JITFunc.register(_EagerFunction)  # an eager-style @jit function is one

# Every dtype name of TileLang's T namespace (T.float16, T.half, T.int4,
# T.float8_e4m3fn, T.float16x2, ...): base/dtypes.py's table.
for _name in _DTYPE_NAMES:
    globals()[_name] = _as_dtype(_name)
# TVM's script names of the wider bfloat16 vectors (TileLang's own table
# stops at bfloat16x2), and TVM's `T.boolean` (the bool dtype: `T.boolean(x)`
# casts, `T.boolean()` in a program is a variable T.let binds).
for _name in ("bfloat16x4", "bfloat16x8", "bfloat16x16", "bfloat16x32", "bfloat16x64"):
    globals()[_name] = _as_dtype(_name)
del _name
boolean = _as_dtype("bool")
# TVM's name of T.ceildiv.
cdiv = ceildiv
# T.ptr: TileLang's element type of tensors of device pointers (T.make_tensor);
# known by name only.
ptr = _as_dtype("handle")
