"""The tile language: `import tilelang_mlir.language as T`.

Names and meanings follow TileLang where they exist.

This package's modules are the T.* surface and the values a tile program
computes with; they import only the bottom layer (`tilelang_mlir.base`). The
frontend, above them, runs a program and hands T.* operations its builder
through `state`. This file, the `T` namespace, is the one place that reaches
up: it also offers the frontend's decorators `T.prim_func` and `T.macro`.
"""

from ..frontend.prim_func import macro, prim_func  # the T namespace: see above
from .allocate import (allocate, alloc_buffer, alloc_fragment, alloc_global, alloc_local, alloc_reducer,
                       alloc_shared, alloc_var, finalize_reducer)
from .annotations import (annotate_compile_flags, annotate_layout, annotate_pass_configs,
                          annotate_safe_value, device_assert, disable_warp_group_reg_alloc,
                          make_padded_layout, make_swizzled_layout, no_set_max_nreg, print,
                          use_swizzle)
from .atomic import (atomic_add, atomic_addx2, atomic_addx4, atomic_load, atomic_max,
                     atomic_min, atomic_or, atomic_store)
from .copy import clear, copy, fill, im2col
from .eager import const, empty
from ..base.dtypes import ALL_NAMES as _DTYPE_NAMES, DType, as_dtype as _as_dtype
from .dtypes import dtype
from .gemm import GemmWarpPolicy, gemm, gemm_sp, wait_wgmma, wgmma_gemm
from .kernel import (ClusterKernel, Kernel, get_block_binding, get_block_bindings,
                     get_block_extent, get_block_extents, get_thread_extent,
                     get_thread_extents)
from .launch import (annotate_l2_hit_ratio, annotate_min_blocks_per_sm, block_rank_in_cluster,
                     cluster_arrive, cluster_arrive_relaxed, cluster_sync, cluster_wait,
                     pdl_sync, pdl_trigger, sync_global, sync_grid)
from .layout import Fragment, Layout, reshape, view
from .loops import (Parallel, Persistent, Pipelined, Serial, Unroll, Vectorized, grid,
                    launch_thread, loop_break, parallel, serial, thread_binding, unroll,
                    vectorized)
from .math import (Cast, abs, bitwise_and, bitwise_not, bitwise_or, bitwise_xor, cast, ceil,
                   ceildiv, clamp, cos, erf, exp, exp2, floor, floordiv, floormod,
                   if_then_else, infinity, log, log2, max, max_value, min, min_value, pow,
                   reinterpret, rsqrt, shift_left, shift_right, sigmoid, sin, sqrt, tanh,
                   truncdiv, hadd2, hsub2, hmul2, hfma2, pack2, unpack2, Select, align_up,
                   index_to_coordinates, linear_index)
from .reduce import (cumsum, reduce, reduce_absmax, reduce_abssum, reduce_max,
                     reduce_min, reduce_sum)
from .roles import (access_ptr, alloc_barrier, alloc_cluster_barrier,
                    annotate_consumer_reg_alloc, annotate_producer_reg_dealloc, barrier_arrive,
                    barrier_wait,
                    cp_async_barrier_noinc, dec_max_nreg, fence_proxy_async,
                    get_thread_binding, get_thread_bindings, inc_max_nreg, mbarrier_arrive,
                    mbarrier_arrive_expect_tx, mbarrier_expect_tx, mbarrier_wait_parity,
                    named_barrier_arrive, ptx_arrive_cluster_barrier, ptx_commit_group, ptx_cp_async,
                    ptx_wait_group, set_max_nreg, sync_threads, tma_copy, ws)
from .loads import (__ffs, __ldg, ldg32, ldg64, ldg128, ldg256, lds32, lds64, lds128,
                    stg32, stg64, stg128, stg256, sts32, sts64, sts128)
from .warp import (activemask, all_sync, any_sync, ballot, ballot_sync, get_lane_idx,
                   get_warp_group_idx, get_warp_idx, get_warp_idx_sync, match_all_sync,
                   match_any_sync, shfl_down, shfl_sync, shfl_up, shfl_xor, shuffle_elect,
                   sync_warp, syncthreads_and, syncthreads_count, syncthreads_or, thread_return,
                   warp_reduce_bitand, warp_reduce_bitor, warp_reduce_max, warp_reduce_min,
                   warp_reduce_sum)
from .tir import (Broadcast, PrimExpr, Ramp, Shuffle, address_of, assume, attr, call_extern,
                  call_intrin, call_pure_extern, comm_reducer, dp4a, evaluate, extract_lane,
                  func_attr,
                  get_let_value, has_let_value, import_source, let, make_tensor,
                  make_tensor_from_addr, Ptr, tvm_thread_allreduce)
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
