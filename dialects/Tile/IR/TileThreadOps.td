//===- TileThreadOps.td - per-thread, warp and atomic operations -*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
// The operations of a thread of a GPU block that TileLang programs write in
// the SIMT style (`tx = T.get_thread_binding(); B[tx] = T.shfl_xor(x, 1)`):
// warp shuffles, votes and reductions, block barriers with a vote, one-lane
// election, and the atomics of every kind. Included by TileOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_THREAD_OPS_TD
#define TILE_THREAD_OPS_TD

//===----------------------------------------------------------------------===//
// Kinds
//===----------------------------------------------------------------------===//

def Tile_ShuffleKind : I32EnumAttr<"ShuffleKind", "which lane a shuffle reads", [
    I32EnumAttrCase<"idx", 0>,
    I32EnumAttrCase<"Xor", 1, "xor">,
    I32EnumAttrCase<"up", 2>,
    I32EnumAttrCase<"down", 3>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_ShuffleKindAttr : EnumAttr<Tile_Dialect, Tile_ShuffleKind, "shuffle">;

def Tile_VoteKind : I32EnumAttr<"VoteKind", "what a warp vote computes", [
    I32EnumAttrCase<"any", 0>,
    I32EnumAttrCase<"all", 1>,
    I32EnumAttrCase<"ballot", 2>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_VoteKindAttr : EnumAttr<Tile_Dialect, Tile_VoteKind, "vote">;

def Tile_MatchKind : I32EnumAttr<"MatchKind", "what a warp match computes", [
    I32EnumAttrCase<"any", 0>,
    I32EnumAttrCase<"all", 1>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_MatchKindAttr : EnumAttr<Tile_Dialect, Tile_MatchKind, "match">;

def Tile_BlockVoteKind : I32EnumAttr<"BlockVoteKind",
    "what a block barrier with a vote computes", [
    I32EnumAttrCase<"count", 0>,
    I32EnumAttrCase<"And", 1, "and">,
    I32EnumAttrCase<"Or", 2, "or">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_BlockVoteKindAttr : EnumAttr<Tile_Dialect, Tile_BlockVoteKind, "block_vote">;

def Tile_WarpReduceKind : I32EnumAttr<"WarpReduceKind",
    "the operator of a warp reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>,
    I32EnumAttrCase<"BitAnd", 3, "bitand">,
    I32EnumAttrCase<"BitOr", 4, "bitor">,
    I32EnumAttrCase<"BitXor", 5, "bitxor">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_WarpReduceKindAttr : EnumAttr<Tile_Dialect, Tile_WarpReduceKind, "warp_reduce">;

def Tile_AtomicKind : I32EnumAttr<"AtomicKind",
    "the update of an atomic read-modify-write", [
    I32EnumAttrCase<"add", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>,
    I32EnumAttrCase<"BitAnd", 3, "bitand">,
    I32EnumAttrCase<"BitOr", 4, "bitor">,
    I32EnumAttrCase<"BitXor", 5, "bitxor">,
    I32EnumAttrCase<"exchange", 6>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_AtomicKindAttr : EnumAttr<Tile_Dialect, Tile_AtomicKind, "atomic">;

def Tile_MemoryOrder : I32EnumAttr<"MemoryOrder",
    "the C++ memory order of an atomic operation", [
    I32EnumAttrCase<"relaxed", 0>,
    I32EnumAttrCase<"consume", 1>,
    I32EnumAttrCase<"acquire", 2>,
    I32EnumAttrCase<"release", 3>,
    I32EnumAttrCase<"acq_rel", 4>,
    I32EnumAttrCase<"seq_cst", 5>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_MemoryOrderAttr : EnumAttr<Tile_Dialect, Tile_MemoryOrder, "memory_order"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tile_ScalarValue : AnyTypeOf<[AnySignlessInteger, AnyFloat]>;

//===----------------------------------------------------------------------===//
// Lanes and warps
//===----------------------------------------------------------------------===//

def Tile_WarpSizeOp : Tile_Op<"warp_size", [Pure, Tile_InKernel]> {
  let summary = "The threads of a warp (wave) of the target";
  let description = [{
    32 on NVIDIA GPUs, 64 on AMD GPUs (a wave). With `tile.thread_id` it
    gives TileLang's `T.get_lane_idx()` (`thread_id % warp_size`),
    `T.get_warp_idx()` and `T.get_warp_group_idx()`. The CPU backend runs a
    block as one thread of control and has no warps: it refuses the op.

    ```mlir
    %w = tile.warp_size : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_ShuffleOp : Tile_Op<"shuffle", [Tile_InKernel,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "Reads a value from another lane of the warp";
  let description = [{
    CUDA's `__shfl_sync` family (TileLang's `T.shfl_sync`, `T.shfl_xor`,
    `T.shfl_up`, `T.shfl_down`). The warp is split into segments of `width`
    lanes (a power of two, at most 32); lane `l` reads `value` from lane

    - `idx`: `offset % width` of its segment;
    - `xor`: `l ^ offset`;
    - `up`: `l - offset`, or keeps its own value when that lane is in an
      earlier segment;
    - `down`: `l + offset`, or keeps its own value past its segment's end.

    An `xor` source in a later segment keeps the lane's own value too. The
    threads of `mask` (bit `l`: lane `l`) take part and must all execute the
    op. Values of 8 to 64 bits: the bits move unchanged. On AMD GPUs the mask
    is ignored (a wave runs converged), as TileLang's HIP backend does.

    ```mlir
    %r = tile.shuffle xor %v, %c1, %c32, %mask : f32
    ```
  }];
  let arguments = (ins Tile_ShuffleKindAttr:$kind, Tile_ScalarValue:$value,
                       I32:$offset, I32:$width, I32:$mask);
  let results = (outs Tile_ScalarValue:$result);
  let assemblyFormat = [{
    $kind $value `,` $offset `,` $width `,` $mask attr-dict `:` type($value)
  }];
  let hasVerifier = 1;
}

def Tile_WarpVoteOp : Tile_Op<"warp_vote", [Tile_InKernel]> {
  let summary = "A vote of the lanes of a warp";
  let description = [{
    The lanes of `mask` that execute the op vote with `predicate`:
    `any` is 1 when some voted true, `all` is 1 when all did (i32, CUDA's
    `__any_sync` / `__all_sync`), `ballot` has bit `l` set when lane `l`
    voted true (i64: zero-extended from the 32 lanes of an NVIDIA warp,
    the 64 lanes of an AMD wave; `__ballot_sync`). On AMD GPUs the mask is
    ignored.

    ```mlir
    %b = tile.warp_vote ballot %p, %mask -> i64
    ```
  }];
  let arguments = (ins Tile_VoteKindAttr:$kind, I1:$predicate, I32:$mask);
  let results = (outs AnyTypeOf<[I32, I64]>:$result);
  let assemblyFormat = "$kind $predicate `,` $mask attr-dict `->` type($result)";
  let hasVerifier = 1;
}

def Tile_WarpMatchOp : Tile_Op<"warp_match", [Tile_InKernel]> {
  let summary = "Which lanes of a warp hold the same value";
  let description = [{
    CUDA's `__match_any_sync` (`any`: the lanes of `mask` whose `value`
    equals this lane's) and `__match_all_sync` (`all`: `mask` when all lanes
    of `mask` agree, 0 otherwise), as a 32-bit lane mask. Values of 32 or 64
    bits, compared bit for bit. NVIDIA only (sm_70 and newer).

    ```mlir
    %m = tile.warp_match any %v, %mask : i32
    ```
  }];
  let arguments = (ins Tile_MatchKindAttr:$kind, Tile_ScalarValue:$value, I32:$mask);
  let results = (outs I32:$result);
  let assemblyFormat = "$kind $value `,` $mask attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Tile_ActiveMaskOp : Tile_Op<"active_mask", [Tile_InKernel]> {
  let summary = "The lanes of the warp that execute this op";
  let description = [{
    Bit `l` is set when lane `l` is executing the op (CUDA's
    `__activemask()`, zero-extended to i64; on AMD GPUs the wave's
    execution mask).

    ```mlir
    %m = tile.active_mask -> i64
    ```
  }];
  let results = (outs I64:$result);
  let assemblyFormat = "attr-dict `->` type($result)";
}

def Tile_WarpReduceOp : Tile_Op<"warp_reduce", [Tile_InKernel,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "Reduces a value over the lanes of a warp";
  let description = [{
    Every lane of the warp gets `kind` over the `value`s of all lanes (all
    lanes must execute the op): TileLang's `T.warp_reduce_sum` (`sum`),
    `_max`, `_min`, `_bitand`, `_bitor`. Computed as TileLang's template
    does, in log2(warp size) steps of an `xor` shuffle, so that floating-point
    sums agree in every lane. Float max/min ignore a NaN of one side;
    `is_unsigned` compares integers as unsigned.

    ```mlir
    %s = tile.warp_reduce sum %v : f32
    ```
  }];
  let arguments = (ins Tile_WarpReduceKindAttr:$kind, Tile_ScalarValue:$value,
                       UnitAttr:$is_unsigned);
  let results = (outs Tile_ScalarValue:$result);
  let assemblyFormat = "$kind $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Tile_SyncWarpOp : Tile_Op<"sync_warp", [Tile_InKernel]> {
  let summary = "Synchronizes the lanes of a warp";
  let description = [{
    The lanes of `mask` wait for each other; memory accesses before it are
    visible to them after it (CUDA's `__syncwarp(mask)`). On AMD GPUs a wave
    runs converged and the op orders the wave's memory accesses only.

    ```mlir
    tile.sync_warp %mask
    ```
  }];
  let arguments = (ins I32:$mask);
  let assemblyFormat = "$mask attr-dict";
}

def Tile_BlockVoteOp : Tile_Op<"block_vote", [Tile_InKernel]> {
  let summary = "A barrier of the block that counts a predicate";
  let description = [{
    A barrier over all threads of the block (as `tile.barrier`), which
    returns to every thread: `count`, the number of threads whose
    `predicate` is true; `and`, 1 when all are; `or`, 1 when one is (CUDA's
    `__syncthreads_count`, `_and`, `_or`). Every thread of the block must
    execute it: it is refused inside a `tile.role` or `tile.parallel`.

    ```mlir
    %n = tile.block_vote count %p -> i32
    ```
  }];
  let arguments = (ins Tile_BlockVoteKindAttr:$kind, I1:$predicate);
  let results = (outs I32:$result);
  let assemblyFormat = "$kind $predicate attr-dict `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ElectOp : Tile_Op<"elect", [Tile_InKernel]> {
  let summary = "Elects one lane in each group of warps";
  let description = [{
    True in exactly one active lane (the lowest) of each warp whose index in
    the block is a multiple of `ceil(extent / 32)`; with `extent = 0`, in
    one lane of warp 0 only (TileLang's `T.shuffle_elect(extent)`:
    `elect.sync` on sm_90, the lowest active lane elsewhere).

    ```mlir
    %leader = tile.elect 128 -> i1
    ```
  }];
  let arguments = (ins I64Attr:$extent);
  let results = (outs I1:$result);
  let assemblyFormat = "$extent attr-dict `->` type($result)";
  let hasVerifier = 1;
}

def Tile_PartialBarrierOp : Tile_Op<"partial_barrier", [Tile_InKernel]> {
  let summary = "A hardware barrier named at run time";
  let description = [{
    `bar.sync id, threads` (TileLang's `T.sync_threads(id, threads)` with
    values computed at run time, or with id 0): the executing threads wait
    at hardware barrier `id` (0 to 15) until `threads` threads (a multiple
    of the warp size; all of the block's without it) have arrived. With
    `arrive` (`T.named_barrier_arrive`), the threads arrive without waiting
    (`bar.arrive`). Shared-memory writes before the barrier are visible to
    the waiting threads after it. A kernel whose roles need barriers of
    their own may use only barrier ids known at compile time here. NVIDIA
    only; the CPU backend (one thread of control per block) has nothing to
    wait for.

    ```mlir
    tile.partial_barrier %id, %n : i32, i32
    tile.partial_barrier %id, %n arrive : i32, i32
    ```
  }];
  let arguments = (ins I32:$id, Optional<I32>:$threads, UnitAttr:$arrive);
  let assemblyFormat = [{
    $id (`,` $threads^)? (`arrive` $arrive^)? attr-dict `:` type($id) (`,` type($threads)^)?
  }];
  let hasVerifier = 1;
}

def Tile_ThreadReturnOp : Tile_Op<"thread_return", [Tile_InKernel]> {
  let summary = "Ends the executing thread";
  let description = [{
    The executing thread exits the kernel here (TileLang's
    `T.thread_return()`, CUDA's `return` in a kernel: PTX `exit`, AMD
    `s_endpgm`); the block's barriers no longer wait for it. Typically under
    a condition on the thread's index or its data. The CPU backend runs a
    block as one thread of control and refuses it.

    ```mlir
    tile.thread_return
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Launch-level synchronization
//===----------------------------------------------------------------------===//

def Tile_PdlTriggerOp : Tile_Op<"pdl_trigger", [Tile_InKernel]> {
  let summary = "Lets the next kernel of the stream start (PDL)";
  let description = [{
    Programmatic dependent launch (TileLang's `T.pdl_trigger`): once every
    block of this kernel has run it (or exited), the kernel launched next
    on the stream with programmatic stream serialization may start before
    this one ends (`griddepcontrol.launch_dependents`, sm_90 and newer).
    Its writes are visible to that kernel after the kernel's `tile.pdl_wait`
    (which waits for this whole kernel). The CPU backend runs kernels
    in order: nothing to do there. Refused on older chips and on AMD GPUs,
    as TileLang refuses them.

    ```mlir
    tile.pdl_trigger
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_PdlWaitOp : Tile_Op<"pdl_wait", [Tile_InKernel]> {
  let summary = "Waits for the kernels this one depends on (PDL)";
  let description = [{
    Programmatic dependent launch (TileLang's `T.pdl_sync`): waits until
    the kernels this launch depends on have completed and their memory is
    visible (`griddepcontrol.wait`, sm_90 and newer). A kernel with this op
    is launched with programmatic stream serialization, so that it may
    start while the previous kernel of the stream still runs. The CPU
    backend runs kernels in order: the wait is always satisfied there.

    ```mlir
    tile.pdl_wait
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_GridSyncOp : Tile_Op<"grid_sync", [Tile_InKernel]> {
  let summary = "A barrier of every thread of the grid";
  let description = [{
    All threads of all blocks of the grid wait here; their memory accesses
    before it are visible to all after it (TileLang's `T.sync_grid`:
    cooperative groups' `this_grid().sync()`). The kernel is launched
    cooperatively (all its blocks resident at once: the launch fails with
    an error naming the limit when the grid cannot be). Every thread of
    every block must execute it: refused inside a `tile.role` or a
    `tile.parallel`. NVIDIA only; the CPU backend runs blocks one after
    another and refuses it.

    ```mlir
    tile.grid_sync
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Thread block clusters (sm_90)
//===----------------------------------------------------------------------===//

def Tile_ClusterStep : I32EnumAttr<"ClusterStep",
    "a step of a cluster barrier", [
    I32EnumAttrCase<"arrive", 0>,
    I32EnumAttrCase<"arrive_relaxed", 1>,
    I32EnumAttrCase<"wait", 2>
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tile";
}
def Tile_ClusterStepAttr : EnumAttr<Tile_Dialect, Tile_ClusterStep, "cluster_step">;

def Tile_ClusterBarrierOp : Tile_Op<"cluster_barrier", [Tile_InKernel]> {
  let summary = "A step of the barrier of the blocks of a cluster";
  let description = [{
    The kernel runs in thread block clusters (its `tile.cluster` attribute,
    TileLang's `T.ClusterKernel` / `T.Kernel(cluster_dims=...)`). `arrive`:
    the executing threads arrive at the cluster's barrier, releasing their
    memory accesses (`barrier.cluster.arrive`; `arrive_relaxed` orders
    nothing); `wait`: they wait until every thread of every block of the
    cluster arrived (`barrier.cluster.wait`). TileLang's
    `T.cluster_arrive`, `T.cluster_arrive_relaxed`, `T.cluster_wait`; an
    arrive then a wait is `T.cluster_sync`. Every thread of the block
    executes it. sm_90 and newer.

    ```mlir
    tile.cluster_barrier arrive
    tile.cluster_barrier wait
    ```
  }];
  let arguments = (ins Tile_ClusterStepAttr:$step);
  let assemblyFormat = "$step attr-dict";
  let hasVerifier = 1;
}

def Tile_ClusterRankOp : Tile_Op<"cluster_rank", [Pure, Tile_InKernel]> {
  let summary = "The rank of the block in its cluster";
  let description = [{
    The linear index of the executing block among the blocks of its
    cluster (`%cluster_ctarank`; TileLang's `T.block_rank_in_cluster()`),
    0 in a kernel without clusters.

    ```mlir
    %r = tile.cluster_rank : i32
    ```
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_BarrierArriveRankOp : Tile_Op<"barrier_arrive_rank", [Tile_InKernel]> {
  let summary = "Arrives on a barrier of another block of the cluster";
  let description = [{
    Every executing thread arrives once on `barriers[index]` of the block
    of rank `rank` in the cluster (its shared memory mapped through the
    cluster: `mapa` then `mbarrier.arrive.release.cluster`), releasing its
    memory accesses at cluster scope (TileLang's `T.mbarrier_arrive(bar,
    cta_id)` on a `T.alloc_cluster_barrier`). sm_90 and newer.

    ```mlir
    tile.barrier_arrive_rank %bars[%c0], %rank : memref<1xi64, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$barriers, Index:$index, I32:$rank);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $rank attr-dict `:` type($barriers)
  }];
}

//===----------------------------------------------------------------------===//
// Tensors from addresses
//===----------------------------------------------------------------------===//

def Tile_MakeTensorOp : Tile_Op<"make_tensor", [Pure]> {
  let summary = "A global tensor at an address held in memory or passed in";
  let description = [{
    The row-major (contiguous) global tensor of the result's shape and
    element type whose first element is at device address `address` (an
    i64: a `T.ptr` argument, or an element of a tensor of pointers);
    `sizes` give its dynamic dimensions, in order (TileLang's
    `T.make_tensor(ptr, shape, dtype)`). It is read and written like a
    kernel argument, except by TMA, whose tensor maps are made from the
    arguments. Nothing checks that the address holds such a tensor: the
    program vouches for it, as in TileLang.

    ```mlir
    %A = tile.make_tensor %ptr [%m] : i64 -> memref<?x64xf16>
    ```
  }];
  let arguments = (ins I64:$address, Variadic<Index>:$sizes);
  let results = (outs Tile_AnyBuffer:$result);
  let assemblyFormat = [{
    $address (`[` $sizes^ `]`)? attr-dict `:` type($address) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw", [Tile_InKernel]> {
  let summary = "An atomic read-modify-write of one element";
  let description = [{
    Updates `dst[offsets]` with `value` atomically with respect to every
    other thread and block: `add`, `max`, `min`, `bitand`, `bitor`, `bitxor`
    (integers) or `exchange`. `max` (`min`) replaces the element only when
    `value` is greater (smaller): a NaN value never does and a NaN element
    stays, as C++'s `atomic_ref::fetch_max` does; `is_unsigned` compares
    integers as unsigned. With a
    result, returns the element as it was before (TileLang's
    `return_prev=True`). `memory_order` (C++'s names; relaxed when absent)
    orders the thread's other accesses around it, at device scope. An
    offset outside the destination drops the update (the result is then 0).

    Outside a `tile.parallel` the op is executed by every thread of the
    block (or role) that runs it, as TileLang's scalar atomics are: a
    thread-uniform `add` of `v` adds `v` once per thread. The CPU backend
    runs a block as one thread of control and repeats such an update once
    per thread of the block, which gives the same memory; a result there
    would differ per thread and is refused.

    ```mlir
    tile.atomic_rmw max %v -> %out[%i] : f32 -> memref<1024xf32>
    %old = tile.atomic_rmw add %v -> %out[%i] {memory_order = #tile.memory_order<acq_rel>}
        : i32 -> memref<1024xi32> -> i32
    ```
  }];
  let arguments = (ins Tile_AtomicKindAttr:$kind, Tile_ScalarValue:$value,
                       Tile_AnyBuffer:$dst, Variadic<Index>:$offsets,
                       OptionalAttr<Tile_MemoryOrderAttr>:$memory_order,
                       UnitAttr:$is_unsigned);
  let results = (outs Optional<Tile_ScalarValue>:$result);
  let assemblyFormat = [{
    $kind $value `->` $dst `[` $offsets `]` attr-dict `:` type($value) `->` type($dst)
    (`->` type($result)^)?
  }];
  let hasVerifier = 1;
}

def Tile_AtomicLoadOp : Tile_Op<"atomic_load", [Tile_InKernel]> {
  let summary = "An atomic load of one element";
  let description = [{
    Reads `src[offsets]` atomically with `memory_order` (relaxed, consume,
    acquire or seq_cst) at device scope (TileLang's `T.atomic_load`). An
    offset outside the source reads 0.

    ```mlir
    %v = tile.atomic_load %flag[%c0] {memory_order = #tile.memory_order<acquire>}
        : memref<1xi32> -> i32
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$src, Variadic<Index>:$offsets,
                       Tile_MemoryOrderAttr:$memory_order);
  let results = (outs Tile_ScalarValue:$result);
  let assemblyFormat = [{
    $src `[` $offsets `]` attr-dict `:` type($src) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicStoreOp : Tile_Op<"atomic_store", [Tile_InKernel]> {
  let summary = "An atomic store of one element";
  let description = [{
    Writes `value` to `dst[offsets]` atomically with `memory_order`
    (relaxed, release or seq_cst) at device scope (TileLang's
    `T.atomic_store`), by every thread that executes it (all store the
    same element; outside a `tile.parallel` this is every thread of the
    block). An offset outside the destination drops the store.

    ```mlir
    tile.atomic_store %one -> %flag[%c0] {memory_order = #tile.memory_order<release>}
        : i32 -> memref<1xi32>
    ```
  }];
  let arguments = (ins Tile_ScalarValue:$value, Tile_AnyBuffer:$dst,
                       Variadic<Index>:$offsets,
                       Tile_MemoryOrderAttr:$memory_order);
  let assemblyFormat = [{
    $value `->` $dst `[` $offsets `]` attr-dict `:` type($value) `->` type($dst)
  }];
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// External device functions
//===----------------------------------------------------------------------===//

def Tile_CallExternOp : Tile_Op<"call_extern", [Tile_InKernel,
    AttrSizedOperandSegments]> {
  let summary = "A call of a device function of the program's CUDA source";
  let description = [{
    The executing thread calls the device function `callee`, defined by the
    CUDA C++ source the program brings (TileLang's `T.import_source`, kept
    in the module attribute `tile.extern_sources`; the CUDA backend compiles
    it with NVRTC and links it into the kernel's PTX). Scalar arguments
    (32- and 64-bit integers and floats) are passed by value; a buffer
    argument passes the address of its element at `indices` (a pointer
    into the thread's local copy, shared or global memory), whose
    `index_counts` entry is the buffer's rank; `access` says per argument
    whether the callee reads it (1), writes it (2) or both (3), 0 for a
    scalar. The callee's first parameter is where it stores the result, if
    the op has one.

    ```mlir
    tile.call_extern "__tl_extern_0"(%q, %d) [%c0, %c0]
        {index_counts = array<i64: 1, 1>, access = array<i64: 1, 2>}
        : memref<4xi8, #tile.scope<local>>, memref<8xf16, #tile.scope<local>>
    ```
  }];
  let arguments = (ins StrAttr:$callee, Variadic<AnyType>:$args,
                       Variadic<Index>:$indices,
                       DenseI64ArrayAttr:$index_counts,
                       DenseI64ArrayAttr:$access);
  let results = (outs Optional<Tile_ScalarValue>:$result);
  let assemblyFormat = [{
    $callee `(` $args `)` `[` $indices `]` attr-dict `:` type($args)
    (`->` type($result)^)?
  }];
  let hasVerifier = 1;
}

#endif // TILE_THREAD_OPS_TD
