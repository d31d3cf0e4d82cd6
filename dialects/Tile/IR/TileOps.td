//===- TileOps.td - tile dialect operations ----------------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_OPS_TD
#define TILE_OPS_TD

include "dialects/Tile/IR/TileDialect.td"
include "dialects/Tile/IR/TileAttrs.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tile_AnyBuffer : ConfinedType<MemRefOf<[AnySignlessInteger, AnyFloat, Index]>,
    [CPred<"::mlir::succeeded(::mlir::tile::getMemoryScope("
           "::llvm::cast<::mlir::MemRefType>($_self)))">],
    "memref of integer, float or index values in global memory or a "
    "#tile.scope memory space", "::mlir::MemRefType">;

def Tile_InKernel : PredOpTrait<"is nested in a tile.kernel",
    CPred<"$_op.getParentOfType<::mlir::tile::KernelOp>() != nullptr">>;

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

def Tile_YieldOp : Tile_Op<"yield", [Pure, Terminator,
    ParentOneOf<["KernelOp", "ParallelOp", "PipelinedOp",
                 "WarpSpecializeOp", "RoleOp"]>]> {
  let summary = "Terminator of tile regions";
  let description = [{
    Ends the body of `tile.kernel`, `tile.parallel`, `tile.pipelined`,
    `tile.role` and the regions of `tile.warp_specialize`. It is implicit in the custom syntax
    and carries no values.

    ```mlir
    tile.yield
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_KernelOp : Tile_Op<"kernel", [
    AutomaticAllocationScope, RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A grid of thread blocks running one tile program";
  let description = [{
    Launches its body once per thread block of a grid of up to three
    dimensions. The block arguments of the body are the block indices, one per
    grid dimension; `threads` gives the threads of a block (one to three
    extents, each in [1, 1024], at most 1024 in total; a count that is not
    a power of two leaves replicas in layouts). Everything the tile program
    allocates (shared memory, fragments) lives inside the kernel. Grid
    extents may be dynamic (symbolic sizes).

    ```mlir
    %n = arith.constant 8 : index
    tile.kernel blocks(%bx, %by) in (%n, %n) threads(128) {
      %s = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    }
    ```
  }];
  let arguments = (ins Variadic<Index>:$grid, DenseI64ArrayAttr:$threads);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$grid,
                   "::llvm::ArrayRef<int64_t>":$threads)>
  ];
  let extraClassDeclaration = [{
    /// The block indices, one per grid dimension.
    ::mlir::Block::BlockArgListType getBlockIndices() {
      return getBody().front().getArguments();
    }
    /// Total number of threads of one block.
    int64_t getNumThreads();
    /// Whether the program gives threads roles itself (tile.role).
    bool hasRoles();
  }];
}

//===----------------------------------------------------------------------===//
// Allocation
//===----------------------------------------------------------------------===//

class Tile_AllocOp<string mnemonic, string scope, list<Trait> traits = []>
    : Tile_Op<mnemonic, !listconcat(traits, [Tile_InKernel])> {
  let results = (outs Res<Tile_AnyBuffer, "",
                          [MemAlloc<AutomaticAllocationScopeResource>]>:$result);
  let hasVerifier = 1;
  code scopeName = scope;
}

def Tile_AllocSharedOp : Tile_AllocOp<"alloc_shared", "shared"> {
  let summary = "Allocates a tile in shared memory";
  let description = [{
    A buffer in the shared memory of the block, visible to all its threads.
    The result must have a static shape of positive extents, at most 2^20
    elements, and the `#tile.scope<shared>` memory space. The optional
    `swizzle` is normally left to layout inference.

    ```mlir
    %s = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %t = tile.alloc_shared {swizzle = #tile.swizzle<128>}
        : memref<64x64xf16, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins OptionalAttr<Tile_SwizzleAttr>:$swizzle);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_AllocBarrierOp : Tile_AllocOp<"alloc_barrier", "shared"> {
  let summary = "Allocates transaction barriers (mbarriers) in shared memory";
  let description = [{
    A one-dimensional array of barrier objects in shared memory, each
    expecting a number of arrivals per phase (see `tile.barrier_arrive`) and
    completing a phase when they have all arrived and every transaction byte
    announced with `expect_tx` has landed (`tile.copy ... via`). `arrivals`
    gives one count for every barrier, or one count per barrier. Initialized
    once by the kernel before any other use. The element type is i64 (the
    barrier's size); the buffer is not meant to be read or written directly.
    Emitted by `tile-warp-specialize`, and by programs that synchronize
    their own roles (`T.alloc_barrier`).

    ```mlir
    %full = tile.alloc_barrier arrivals(1) : memref<3xi64, #tile.scope<shared>>
    %bars = tile.alloc_barrier arrivals(128, 128, 256, 256)
        : memref<4xi64, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$arrivals);
  let assemblyFormat = [{
    `arrivals` `(` custom<Counts>($arrivals) `)` attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The arrivals barrier `i` expects per phase.
    int64_t getArrivalsOf(int64_t i) {
      ::llvm::ArrayRef<int64_t> a = getArrivals();
      return a.size() == 1 ? a[0] : a[i];
    }
  }];
}

def Tile_AllocFragmentOp : Tile_AllocOp<"alloc_fragment", "fragment"> {
  let summary = "Allocates a register tile distributed over the block";
  let description = [{
    A tile held in registers, distributed over the threads of the block. Its
    `layout` says which thread and register hold each element; layout
    inference fills it in from the ops that use the fragment (a gemm
    accumulator, a reduction, a parallel loop). Positive extents, at most
    2^17 elements (the register file of an SM holds 2^16 32-bit values).

    ```mlir
    %acc = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    ```
  }];
  let arguments = (ins OptionalAttr<Tile_FragmentLayoutAttr>:$layout);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_AllocLocalOp : Tile_AllocOp<"alloc_local", "local"> {
  let summary = "Allocates a small array private to each thread";
  let description = [{
    Every thread gets its own copy of the array (registers or local memory).
    Positive extents, at most 2^16 elements.

    ```mlir
    %l = tile.alloc_local : memref<8xf32, #tile.scope<local>>
    ```
  }];
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_AllocVarOp : Tile_AllocOp<"alloc_var", "var"> {
  let summary = "Allocates a scalar private to each thread";
  let description = [{
    A per-thread scalar variable, as a rank-0 memref; read and written with
    `memref.load` / `memref.store`.

    ```mlir
    %v = tile.alloc_var : memref<i32, #tile.scope<var>>
    ```
  }];
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Tile_CopyOp : Tile_Op<"copy", [Tile_InKernel, AttrSizedOperandSegments]> {
  let summary = "Copies a tile between any two scopes, bounds-safe";
  let description = [{
    Copies the region of `src` that starts at `src_offsets` and has extents
    `src_sizes` into the region of `dst` that starts at `dst_offsets` with
    extents `dst_sizes`. Regions of the same rank must have the same extents;
    regions of different ranks must have the same shape once their unit
    dimensions are dropped (a 1x128x32 slice of a 3-D tensor fills a 128x32
    tile). Elements are converted to the destination element type by the
    rules of `ConversionUtils.h` (floats to integers saturate, NaN gives 0;
    integers narrow by keeping the low bits). `src_element` / `dst_element`
    give a side's logical element type where the buffer's element type cannot
    say it: `ui8` over `i8` (unsigned bytes), `i1` over `i8` (booleans stored
    as bytes).

    The copy is bounds-safe: elements read outside `src` are zero, and
    elements written outside `dst` are dropped. This is what makes tiles of
    sizes that do not divide the problem work without guards in the program.

    With `via %bar[%i]` the copy is a TMA load from a kernel argument into
    shared memory, issued by one thread of the executing ones and completing
    on that barrier's transaction count; with `expect_tx`, that thread first
    announces the copy's bytes on the barrier, without arriving (TileLang's
    `T.tma_copy`: the program's own arrivals complete the phase).

    With `multicast_mask` (a copy `via` a barrier in a kernel of thread
    block clusters; TileLang's `T.copy_cluster(..., cluster_mask=M)`), bit
    r of the mask names block rank r of the cluster: the block of the
    lowest rank of the mask issues the copy, at its own source offsets,
    into the same place of every block of the mask (TMA multicast; it
    completes on the barrier at the same place in each of them), the other
    blocks of the mask issue nothing (they receive it), and the blocks
    outside the mask copy their own region as without a mask.

    ```mlir
    tile.copy %A[%row, %k] [128, 32] to %as[%c0, %c0] [128, 32]
        : memref<?x1024xf16> to memref<128x32xf16, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins
    Tile_AnyBuffer:$src, Variadic<Index>:$src_offsets,
    Tile_AnyBuffer:$dst, Variadic<Index>:$dst_offsets,
    Optional<Tile_AnyBuffer>:$barrier, Optional<Index>:$barrier_index,
    DenseI64ArrayAttr:$src_sizes, DenseI64ArrayAttr:$dst_sizes,
    UnitAttr:$async, OptionalAttr<I64Attr>:$multicast,
    OptionalAttr<TypeAttr>:$src_element, OptionalAttr<TypeAttr>:$dst_element,
    UnitAttr:$expect_tx, OptionalAttr<I64Attr>:$multicast_mask,
    OptionalAttr<Tile_EvictionAttr>:$eviction);
  let assemblyFormat = [{
    $src `[` $src_offsets `]` $src_sizes `to` $dst `[` $dst_offsets `]`
    $dst_sizes (`via` $barrier^ `[` $barrier_index `]`)? attr-dict `:`
    type($src) `to` type($dst) (`,` type($barrier)^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$src, "::mlir::ValueRange":$src_offsets,
                   "::mlir::Value":$dst, "::mlir::ValueRange":$dst_offsets,
                   "::llvm::ArrayRef<int64_t>":$src_sizes,
                   "::llvm::ArrayRef<int64_t>":$dst_sizes,
                   CArg<"bool", "false">:$async), [{
      build($_builder, $_state, src, src_offsets, dst, dst_offsets,
            ::mlir::Value(), ::mlir::Value(), src_sizes, dst_sizes, async,
            ::mlir::IntegerAttr(), ::mlir::TypeAttr(), ::mlir::TypeAttr(),
            /*expect_tx=*/false, ::mlir::IntegerAttr(),
            ::mlir::tile::EvictionAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The copied shape with unit dimensions dropped (same for both sides).
    ::llvm::SmallVector<int64_t> getSqueezedShape();
    /// The logical element type of each side: `src_element` / `dst_element`
    /// when present, else the buffer's element type.
    ::mlir::Type getSrcLogicalType();
    ::mlir::Type getDstLogicalType();
    /// Whether elements change on the way: different element types, or
    /// bytes that become booleans (anything else with the same storage type
    /// is a bit copy: int8 <-> uint8, bool -> bytes).
    bool convertsElements();
  }];
}

def Tile_ClusterCopyOp : Tile_Op<"cluster_copy", [Tile_InKernel,
    AttrSizedOperandSegments]> {
  let summary = "Copies a shared region into another block of the cluster";
  let description = [{
    In a kernel of thread block clusters (its `tile.cluster` attribute),
    copies the region of shared buffer `src` that starts at `src_offsets`
    with extents `src_sizes` into the region of shared buffer `dst` at
    `dst_offsets` (the same shape once unit dimensions are dropped, the
    same element type) in the shared memory of the block of rank `rank` of
    the cluster (distributed shared memory). Every thread of the block (or
    of the role) executes it. TileLang's `T.copy_cluster(src, dst,
    dst_block=rank, remote_barrier=...)`.

    Without `via`, the threads store the elements into the other block
    (`mapa`, `st.shared::cluster`); the program orders them before the
    other block's reads (`tile.cluster_barrier`). With `via %bar[%i]`, the
    copy completes on that barrier of block `rank` (the one at the same
    place as `%bar[%i]` here): its phase then counts one arrival for the
    copy, and the block waiting on it sees the data; the threads of the
    block synchronize before the copy reads the source. Where both regions are
    runs of bytes that are multiples of 16 bytes apart and long (unswizzled
    buffers), one thread arrives there announcing the bytes
    (`mbarrier.arrive.expect_tx`) and issues one bulk copy per run
    (`cp.async.bulk.shared::cluster.shared::cta`, completing the bytes on
    it); otherwise the threads store the elements, synchronize, and one
    thread arrives there (release at cluster scope).

    The source is read asynchronously by a bulk copy: the program must not
    overwrite it before the other block has seen the data.

    ```mlir
    tile.cluster_copy %s[%c0, %c0] [4, 32] to %d[%c0, %c0] [4, 32] rank(%one)
        via %bar[%c0] : memref<4x64xf32, #tile.scope<shared>>
        to memref<4x64xf32, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins
    Tile_AnyBuffer:$src, Variadic<Index>:$src_offsets,
    Tile_AnyBuffer:$dst, Variadic<Index>:$dst_offsets, I32:$rank,
    Optional<Tile_AnyBuffer>:$barrier, Optional<Index>:$barrier_index,
    DenseI64ArrayAttr:$src_sizes, DenseI64ArrayAttr:$dst_sizes);
  let assemblyFormat = [{
    $src `[` $src_offsets `]` $src_sizes `to` $dst `[` $dst_offsets `]`
    $dst_sizes `rank` `(` $rank `)` (`via` $barrier^ `[` $barrier_index `]`)?
    attr-dict `:` type($src) `to` type($dst) (`,` type($barrier)^)?
  }];
  let hasVerifier = 1;
}

def Tile_CpAsyncOp : Tile_Op<"cp_async", [Tile_InKernel,
    AttrSizedOperandSegments]> {
  let summary = "One thread's asynchronous copy of a few elements";
  let description = [{
    Each executing thread copies `elements` consecutive elements (4, 8 or 16
    bytes) of global `src` starting at `src_indices` into shared `dst`
    starting at `dst_indices` (consecutive along the last dimension of both;
    the start is a multiple of `elements` there), asynchronously: they land
    for the thread at a `tile.async_wait` after a `tile.async_commit`, or
    signal a barrier through `tile.barrier_arrive ... after_copies`.
    Elements read past the end of `src` are zero, and so are all of them
    where the optional `predicate` is false (cp.async's zero fill).
    TileLang's `T.ptx_cp_async`.

    ```mlir
    tile.cp_async %KV[%b, %r, %c] to %kv[%s, %i, %j] elements(8)
        : memref<?x?x512xf16> to memref<2x64x512xf16, #tile.scope<shared>>
    tile.cp_async %X[%r, %c] to %x[%i, %j] elements(8) if %ok
        : memref<?x?xf16> to memref<64x64xf16, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$src, Variadic<Index>:$src_indices,
                       Tile_AnyBuffer:$dst, Variadic<Index>:$dst_indices,
                       I64Attr:$elements, Optional<I1>:$predicate);
  let assemblyFormat = [{
    $src `[` $src_indices `]` `to` $dst `[` $dst_indices `]` `elements` `(`
    $elements `)` (`if` $predicate^)? attr-dict `:` type($src) `to` type($dst)
  }];
  let hasVerifier = 1;
}

def Tile_AsyncCommitOp : Tile_Op<"async_commit", [Tile_InKernel]> {
  let summary = "Closes a group of asynchronous copies";
  let description = [{
    Every `tile.copy {async}` issued by a thread since its previous commit
    forms one group. Emitted by the pipeliner.

    ```mlir
    tile.async_commit
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_AsyncWaitOp : Tile_Op<"async_wait", [Tile_InKernel]> {
  let summary = "Waits for groups of asynchronous copies";
  let description = [{
    Blocks the thread until at most `pending` of its most recent groups of
    asynchronous copies are still in flight; the copies of all older groups
    are then complete (for this thread: a block barrier makes them visible
    to the others). Emitted by the pipeliner.

    ```mlir
    tile.async_wait 1
    ```
  }];
  let arguments = (ins I64Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
  let hasVerifier = 1;
}

def Tile_BarrierOp : Tile_Op<"barrier", [Tile_InKernel]> {
  let summary = "Synchronizes the threads of a block";
  let description = [{
    All threads of the block wait here; shared-memory writes before it are
    visible to every thread after it. Inserted by the compiler where shared
    memory written by some threads is read by others, and written by the
    program (`T.sync_threads()`).

    Inside a `tile.role` it synchronizes the role's threads (a named
    barrier of the role), unless `block` is set: then it is a barrier of
    the whole block (`__syncthreads()`), which every role reaches at one
    of its own `tile.barrier {block}`s; how one role publishes shared
    memory to the others. TileLang's `T.sync_threads()` has this meaning
    under the pass config `tl.disable_thread_storage_sync`.

    ```mlir
    tile.barrier
    tile.barrier {block}
    ```
  }];
  let arguments = (ins UnitAttr:$block);
  let assemblyFormat = "attr-dict";
}

def Tile_BarrierWaitOp : Tile_Op<"barrier_wait", [Tile_InKernel]> {
  let summary = "Waits for a phase of a transaction barrier";
  let description = [{
    Every executing thread waits until the phase of barrier
    `barriers[index]` with parity `parity` (0 or 1) has completed: its
    arrivals have all come and its transaction bytes have landed. Shared
    memory written by those copies (and by threads before they arrived) is
    then visible. Waiting on the parity of the phase before the current one
    returns at once (how a producer passes its first round of `empty` slots).

    ```mlir
    tile.barrier_wait %full[%slot], %parity : memref<3xi64, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$barriers, Index:$index, Index:$parity);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $parity attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tile_BarrierArriveOp : Tile_Op<"barrier_arrive", [Tile_InKernel]> {
  let summary = "Arrives on a transaction barrier";
  let description = [{
    Without `expect_tx`: each warp of the executing threads arrives once on
    `barriers[index]`, after all its lanes got there (their earlier memory
    accesses are ordered before the arrival); with `per_thread`, every
    executing thread arrives once (TileLang's `T.barrier_arrive`: a barrier
    that a 128-thread role arrives on expects 128 arrivals), and with
    `after_copies` too, each thread's arrival comes when its earlier
    `tile.cp_async` copies have landed (`cp.async.mbarrier.arrive.noinc`;
    `T.cp_async_barrier_noinc`). With
    `expect_tx(bytes)`: one thread of the executing threads arrives and
    announces `bytes` more transaction bytes, which `tile.copy ... via` the
    same barrier deliver; with `per_thread` too, every executing thread
    arrives and announces `bytes` (`T.mbarrier_arrive_expect_tx`). With
    `cluster`, the arrival goes to the barrier at
    the same place in every block of the cluster.

    ```mlir
    tile.barrier_arrive %empty[%slot] : memref<3xi64, #tile.scope<shared>>
    tile.barrier_arrive %full[%slot] expect_tx(32768) : memref<3xi64, #tile.scope<shared>>
    tile.barrier_arrive %ready[%c0] per_thread : memref<1xi64, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$barriers, Index:$index,
                       OptionalAttr<I64Attr>:$expect_tx, UnitAttr:$cluster,
                       UnitAttr:$per_thread, UnitAttr:$after_copies);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`expect_tx` `(` $expect_tx^ `)`)?
    (`per_thread` $per_thread^)? (`after_copies` $after_copies^)? attr-dict
    `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def Tile_WarpSpecializeOp : Tile_Op<"warp_specialize", [Tile_InKernel,
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "Splits the threads of a block into a producer and consumers";
  let description = [{
    Adds `producer_threads` threads (a multiple of 128: whole warpgroups) to
    the block, numbered after the kernel's own threads. The added threads run
    the `producer` region, which may only issue copies through transaction
    barriers and wait and arrive on barriers; the kernel's threads run the
    `consumer` region, where fragments keep the layouts inferred for them.
    Barriers inside one region synchronize only that region's threads. The
    producer gives up registers to the consumers (`setmaxnreg`). With
    `cluster = [x, y, z]`, blocks are launched in clusters of that shape
    (the grid is a multiple of it) that share multicast copies; all blocks
    of a cluster synchronize after initializing their barriers and before
    exiting. Emitted by `tile-warp-specialize`.

    ```mlir
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 { ... }
    } consumer {
      scf.for %k = %c0 to %n step %c1 { ... }
    }
    ```
  }];
  let arguments = (ins I64Attr:$producer_threads,
                       OptionalAttr<DenseI64ArrayAttr>:$cluster);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  let assemblyFormat = [{
    `producer` `(` $producer_threads `)` $producer `consumer` $consumer attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Explicit warp specialization: roles, register budgets, fences
//===----------------------------------------------------------------------===//

def Tile_ThreadIdOp : Tile_Op<"thread_id", [Pure, Tile_InKernel]> {
  let summary = "The index of the executing thread in its block";
  let description = [{
    The linear index of the executing thread (x fastest) in
    `[0, threads)` of the enclosing `tile.kernel`, whatever role it runs
    (TileLang's `T.get_thread_binding()`).

    ```mlir
    %tx = tile.thread_id : index
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_RoleOp : Tile_Op<"role", [Tile_InKernel, RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"YieldOp">, NoRegionArguments]> {
  let summary = "A region run by a range of the block's threads";
  let description = [{
    Only threads `[begin, end)` of the block run the body (the other threads
    skip it; a program gives warpgroups roles with one `tile.role` per
    range). Inside, the tile ops are distributed over the role's
    `end - begin` threads, numbered from 0: a `tile.gemm` in a 128-thread
    role runs on that one warpgroup, a `tile.parallel` maps onto its
    threads, a fragment used in the role is laid out over them, and the
    barriers the compiler inserts synchronize only the role (a named
    barrier). A fragment belongs to at most one role. Roles do not nest;
    they synchronize with each other through `tile.alloc_barrier` barriers
    (or `tile.named_barrier`), which the program places: the compiler
    inserts no barrier between adjacent roles over disjoint threads (they
    run concurrently). A role after one that shares threads with it runs
    after it: the two groups are ordered by a block barrier where their
    shared-memory accesses conflict (TileLang's `if tx < 32:` block, then
    `if tx < 32: ... else: ...` reading what the first wrote). A kernel with roles specializes
    itself, so automatic warp specialization and software pipelining step
    aside (its `tile.pipelined` loops run as plain loops).

    ```mlir
    tile.role threads(0 to 128) {
      tile.gemm %as, %bs, %acc : ...
    }
    tile.role threads(128 to 256) {
      tile.copy %A[%r, %k] [64, 32] to %as[%c0, %c0] [64, 32] via %full[%c0] : ...
    }
    ```
  }];
  let arguments = (ins I64Attr:$begin, I64Attr:$end);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `threads` `(` $begin `to` $end `)` $body attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumThreads() { return getEnd() - getBegin(); }
  }];
}

def Tile_SetMaxNRegOp : Tile_Op<"set_max_nreg", [Tile_InKernel]> {
  let summary = "Changes the register budget of the executing warpgroups";
  let description = [{
    The executing warpgroups raise (`increase`) or lower their per-thread
    register budget to `count` (24 to 256, a multiple of 8): `setmaxnreg`
    on sm_90a, a no-op where registers are not reallocated. Lowered roles
    hand registers to the others; the budgets of all roles must fit in the
    register file (64K per block). TileLang's `T.set_max_nreg`.

    ```mlir
    tile.set_max_nreg 240 increase
    tile.set_max_nreg 40
    ```
  }];
  let arguments = (ins I64Attr:$count, UnitAttr:$increase);
  let assemblyFormat = "$count (`increase` $increase^)? attr-dict";
  let hasVerifier = 1;
}

def Tile_FenceProxyAsyncOp : Tile_Op<"fence_proxy_async", [Tile_InKernel]> {
  let summary = "Orders shared-memory writes before later asynchronous reads";
  let description = [{
    The executing thread's earlier writes to shared memory become visible to
    the asynchronous proxy (TMA, wgmma) of the operations that follow a
    synchronization (`fence.proxy.async.shared::cta`; TileLang's
    `T.fence_proxy_async`). A no-op on targets without an asynchronous proxy.

    ```mlir
    tile.fence_proxy_async
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_NamedBarrierOp : Tile_Op<"named_barrier", [Tile_InKernel]> {
  let summary = "Synchronizes a number of threads on a numbered barrier";
  let description = [{
    The executing threads wait at hardware barrier `id` (1 to 15; 0 is the
    whole block's) until `threads` threads (a multiple of the warp size)
    have arrived; shared-memory writes before it are then visible to all of
    them (`bar.sync id, threads`; TileLang's `T.sync_threads(id, threads)`).

    ```mlir
    tile.named_barrier 1, 256
    ```
  }];
  let arguments = (ins I64Attr:$id, I64Attr:$threads);
  let assemblyFormat = "$id `,` $threads attr-dict";
  let hasVerifier = 1;
}

def Tile_FillOp : Tile_Op<"fill", [Tile_InKernel]> {
  let summary = "Fills a tile buffer with a value";
  let description = [{
    Sets every element of `dst` to `value`, whose type is the element type of
    `dst`. `T.clear(buf)` is a fill with zero.

    ```mlir
    %zero = arith.constant 0.0 : f32
    tile.fill %acc, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$dst, AnyType:$value);
  let assemblyFormat = "$dst `,` $value attr-dict `:` type($dst) `,` type($value)";
  let hasVerifier = 1;
}

def Tile_AtomicAddOp : Tile_Op<"atomic_add", [Tile_InKernel]> {
  let summary = "Atomically adds a value or a tile into a buffer";
  let description = [{
    Adds `value` into `dst` at `offsets` atomically with respect to other
    blocks and threads. `value` is either a scalar (one element is updated)
    or a tile buffer (a region of its shape starting at `offsets` is updated,
    unit dimensions of `dst` dropped as for `tile.copy`). Out-of-range updates
    are dropped. A scalar add outside a `tile.parallel` is made by every
    thread of the block (or role) that runs it, as TileLang's scalar
    atomics are; the CPU backend repeats it once per thread.

    With `tma` (TileLang's `use_tma=True`) a shared tile is added into a
    global kernel argument as one bulk reduction by the tensor memory
    accelerator (`cp.reduce.async.bulk.tensor`, sm_90 and newer): the
    block's threads synchronize before it (their writes to the tile) and
    after it (the tile may be written again once the bulk read is done).
    Where there is no TMA, or the tile and destination do not fit its rules,
    the same adds are made element by element.

    ```mlir
    tile.atomic_add %v -> %out[%i] : f32 -> memref<1024xf32>
    tile.atomic_add %part -> %out[%row, %c0]
        : memref<64x64xf32, #tile.scope<fragment>> -> memref<?x64xf32>
    tile.atomic_add %tile -> %out[%row, %c0] {tma}
        : memref<64x64xf32, #tile.scope<shared>> -> memref<?x64xf32>
    ```
  }];
  let arguments = (ins AnyType:$value, Tile_AnyBuffer:$dst,
                       Variadic<Index>:$offsets, UnitAttr:$tma);
  let assemblyFormat = [{
    $value `->` $dst `[` $offsets `]` attr-dict `:` type($value) `->` type($dst)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Symmetric memory (several GPUs)
//===----------------------------------------------------------------------===//

def Tile_PeerOp : Tile_Op<"peer", [Tile_InKernel, MemoryEffects<[MemRead]>]> {
  let summary = "A rank's part of a symmetric buffer";
  let description = [{
    A symmetric buffer is allocated by every rank of a process group at the
    same size and mapped into every peer's address space (PyTorch's
    symmetric memory over NVLink). The kernel takes the local part as a
    function argument marked `tile.symmetric` and, next to it, the peer
    table: a 1-D i64 buffer whose element `r` is the address of rank `r`'s
    part. `tile.peer` is rank `rank`'s part, a buffer of the same shape
    read and written like any global buffer (copies, element accesses,
    signals); its layout has a dynamic offset (the distance between the two
    parts, in elements). A rank outside the table is not checked.

    ```mlir
    %p = tile.peer %buf, %peers[%r]
        : memref<4x256xf16>, memref<?xi64>
          -> memref<4x256xf16, strided<[256, 1], offset: ?>>
    ```
  }];
  let arguments = (ins AnyMemRef:$buffer, MemRefRankOf<[I64], [1]>:$peers,
                       Index:$rank);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $buffer `,` $peers `[` $rank `]` attr-dict `:` type($buffer) `,`
    type($peers) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type of a peer view of `buffer`: its shape and element type with
    /// identity strides and a dynamic offset.
    static ::mlir::MemRefType viewType(::mlir::MemRefType buffer);
  }];
}

def Tile_SignalOp : Tile_Op<"signal", [Tile_InKernel]> {
  let summary = "Sets or adds to a flag, releasing the block's writes";
  let description = [{
    Once every thread of the block has reached it, one thread updates the
    integer flag `flags[indices]` (`set` stores `value`, `add` adds it
    atomically) with release semantics at system scope: whoever sees the
    new value with a `tile.wait` (any block, any GPU, the host) also sees
    every write the block made before the signal. `flags` is a global
    buffer, typically a peer's part of a symmetric buffer (`tile.peer`).
    Not allowed inside `tile.parallel` or a role.

    ```mlir
    tile.signal add %one -> %f[%rank] : i32 -> memref<8xi32, strided<[1], offset: ?>>
    ```
  }];
  let arguments = (ins AnySignlessInteger:$value, Tile_AnyBuffer:$flags,
                       Variadic<Index>:$indices, Tile_SignalModeAttr:$mode);
  let assemblyFormat = [{
    $mode $value `->` $flags `[` $indices `]` attr-dict `:` type($value) `->`
    type($flags)
  }];
  let hasVerifier = 1;
}

def Tile_WaitOp : Tile_Op<"wait", [Tile_InKernel]> {
  let summary = "Waits until a flag compares true with a value";
  let description = [{
    One thread of the block polls `flags[indices]` with acquire loads at
    system scope until `flag <cmp> value` holds; then the block's threads
    synchronize, and every write that was released by the signal the flag
    shows is visible to all of them. A wait that has not succeeded after
    `timeout_ms` milliseconds stops the kernel with an error naming the
    flag's source position (a rank that never signals does not hang the
    job). A flag that is not part of a symmetric buffer must be signalled
    in the same kernel (a wait nothing could signal is an error); a
    symmetric buffer's flags may be signalled by the peers' kernels. Not
    allowed inside `tile.parallel` or a role.

    ```mlir
    tile.wait ge %n -> %f[%c0] {timeout_ms = 10000 : i64} : i32 -> memref<1xi32>
    ```
  }];
  let arguments = (ins AnySignlessInteger:$value, Tile_AnyBuffer:$flags,
                       Variadic<Index>:$indices, Tile_WaitCompareAttr:$cmp,
                       DefaultValuedAttr<I64Attr, "10000">:$timeout_ms);
  let assemblyFormat = [{
    $cmp $value `->` $flags `[` $indices `]` attr-dict `:` type($value) `->`
    type($flags)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

def Tile_GemmOp : Tile_Op<"gemm", [Tile_InKernel]> {
  let summary = "Tile matrix multiply-accumulate C += op(A) op(B)";
  let description = [{
    Multiplies the M×K tile `a` (K×M with `transpose_a`) by the K×N tile `b`
    (N×K with `transpose_b`) and adds the product into the M×N accumulator
    `c`, or overwrites `c` with it when `clear_accum` is set. `a` and `b` live
    in shared memory or in fragments, `c` in a fragment. Accumulation happens
    in the element type of `c`.

    Supported (A, B) → C element types: f16 → f16/f32; bf16 → f32; f32 → f32
    (tf32 tensor cores on GPUs); f64 → f64; i8 → i32; f8E4M3FN/f8E5M2 (any
    mix) → f16/f32. `policy` says how warps split the output tile; `k_pack`
    packs several K steps per instruction on targets that support it.

    With `int4`, `a` and `b` are i8 tiles each of whose bytes holds two
    signed 4-bit integers, the lower K index in the low nibble (TileLang's
    packed int4 tensors): A is M x K bytes, B N x K bytes (`transpose_b`),
    both in shared memory, `c` i32, and the product runs over 2 K values
    (mma.sync m16n8k64 .s4 on NVIDIA GPUs; the CPU target unpacks).

    With `async` (set by `tile-warp-specialize` where the matrix units run
    asynchronously, wgmma), the gemm is only issued: `c` must not be read,
    written or filled until a `tile.gemm_wait` covers it, except by further
    async gemms into the same accumulator, which complete in order. Targets
    without asynchronous gemms run it synchronously.

    ```mlir
    tile.gemm %as, %bs, %acc {transpose_b, policy = #tile.policy<full_row>}
        : memref<64x32xf16, #tile.scope<shared>>,
          memref<64x32xf16, #tile.scope<shared>>
          -> memref<64x64xf32, #tile.scope<fragment>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$a, Tile_AnyBuffer:$b, Tile_AnyBuffer:$c,
    UnitAttr:$transpose_a, UnitAttr:$transpose_b,
    DefaultValuedAttr<Tile_WarpPolicyAttr, "::mlir::tile::WarpPolicy::square">:$policy,
    UnitAttr:$clear_accum,
    DefaultValuedAttr<I64Attr, "1">:$k_pack,
    UnitAttr:$async,
    UnitAttr:$int4);
  let assemblyFormat = [{
    $a `,` $b `,` $c attr-dict `:` type($a) `,` type($b) `->` type($c)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    int64_t getM();
    int64_t getN();
    int64_t getK();
  }];
}

def Tile_GemmWaitOp : Tile_Op<"gemm_wait", [Tile_InKernel]> {
  let summary = "Waits for asynchronous gemms";
  let description = [{
    Blocks the executing threads until at most `pending` of their most
    recently issued `async` gemms are still in flight; the accumulators of
    all older ones are then up to date (and their shared operands no longer
    read). A no-op on targets that run gemms synchronously.

    ```mlir
    tile.gemm_wait 1
    ```
  }];
  let arguments = (ins I64Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
  let hasVerifier = 1;
}

def Tile_GemmSpOp : Tile_Op<"gemm_sp", [Tile_InKernel]> {
  let summary = "2:4 structured-sparse tile matrix multiply-accumulate";
  let description = [{
    Like `tile.gemm`, with `a` in 2:4 structured-sparse form: `a` holds the
    M×(K/2) kept values and `e` the metadata, the positions of the two kept
    values in each group of four along K, two bits each. An integer element of
    `e` with b bits covers b/4 groups, so `e` is M×(K/b). `b` is a dense K×N
    tile (N×K with `transpose_b`), `c` the M×N accumulator fragment.

    The metadata is row-major: group g (columns 4g..4g+3 of A) sits at bit
    4 * (g mod (b/4)) of `e[m, g / (b/4)]`, low two bits first
    (`tilelang_mlir.sparse.compress` produces it). On CUDA targets `a`, `e`
    and `b` are shared buffers and the accumulator f32; layout inference
    picks `wgmma.mma_async.sp` (sm_90a, marks the op `wgmma`) or `mma.sp`
    m16n8k32 (marks it `warp_partition`); K must be a multiple of 32.
    `async` is accepted but changes nothing: the sparse wgmma reads its
    metadata registers while in flight, so the op always completes before
    the next one (`tile-warp-specialize` never sets it).

    ```mlir
    tile.gemm_sp %as, %es, %bs, %acc
        : memref<64x32xf16, #tile.scope<shared>>,
          memref<64x4xi16, #tile.scope<shared>>,
          memref<64x64xf16, #tile.scope<shared>>
          -> memref<64x64xf32, #tile.scope<fragment>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$a, Tile_AnyBuffer:$e,
    Tile_AnyBuffer:$b, Tile_AnyBuffer:$c,
    UnitAttr:$transpose_b,
    DefaultValuedAttr<Tile_WarpPolicyAttr, "::mlir::tile::WarpPolicy::square">:$policy,
    UnitAttr:$clear_accum,
    UnitAttr:$async);
  let assemblyFormat = [{
    $a `,` $e `,` $b `,` $c attr-dict `:` type($a) `,` type($e) `,` type($b)
    `->` type($c)
  }];
  let extraClassDeclaration = [{
    /// The dense problem: M x K (A before compression) times K x N.
    int64_t getM();
    int64_t getN();
    int64_t getK();
  }];
  let hasVerifier = 1;
}

def Tile_ReduceOp : Tile_Op<"reduce", [Tile_InKernel]> {
  let summary = "Reduces a tile along one dimension";
  let description = [{
    Reduces `src` along `dim` with `kind` into `dst`, whose shape is that of
    `src` with `dim` removed (or kept with extent 1). With `clear` (the
    default in the frontend) `dst` is overwritten; without it the result is
    combined with the values already in `dst`. Elements are converted to
    `dst`'s element type before they are combined.

    The combines follow TileLang: sums add; `max` / `min` / `absmax` of
    floats ignore NaN operands (fmaxf) unless `nan_propagate` is set, which
    makes a NaN of f16 or bf16 elements the result (CUDA's `__hmax_nan`;
    TileLang leaves f32 and f64 NaN-ignoring, and so does this op). The
    identities are 0 for sums, `absmax` and `bitor` / `bitxor`, -inf (the
    smallest integer) for `max`, +inf (the largest integer) for `min`, all
    ones for `bitand`.

    `src_element` / `dst_element` give a side's logical element type where
    the buffer's cannot say it (as for `tile.copy`): `ui32` over `i32` makes
    `max` / `min` compare unsigned and the conversion zero-extend, `i1` over
    `i8` reads booleans stored as bytes.

    ```mlir
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1 : i64, clear}
        : memref<64x128xf32, #tile.scope<fragment>>
          -> memref<64xf32, #tile.scope<fragment>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$src, Tile_AnyBuffer:$dst,
    Tile_ReduceKindAttr:$kind, I64Attr:$dim, UnitAttr:$clear,
    UnitAttr:$nan_propagate, OptionalAttr<TypeAttr>:$src_element,
    OptionalAttr<TypeAttr>:$dst_element);
  let assemblyFormat = [{
    $src `->` $dst attr-dict `:` type($src) `->` type($dst)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The logical element type of each side (`src_element` /
    /// `dst_element` when present, else the buffer's element type).
    ::mlir::Type getSrcLogicalType();
    ::mlir::Type getDstLogicalType();
  }];
}

def Tile_IEEEOp : Tile_Op<"ieee", [Pure, Tile_InKernel]> {
  let summary = "Correctly rounded arithmetic in a chosen rounding direction";
  let description = [{
    TileLang's `T.ieee_add` / `ieee_sub` / `ieee_mul` / `ieee_fmaf` /
    `ieee_fdiv` / `ieee_frcp` / `ieee_fsqrt` / `ieee_frsqrt`: the exact
    result of `kind` on the operands, rounded once in direction `mode`
    (CUDA's `__fadd_rz` and kin; `rsqrt` is `rn` only and not on f64, as in
    TileLang). f16 and bf16 take `rn` only. NVIDIA targets use the PTX
    instruction of that rounding (`add.rz.f32`, ...); other targets compute
    the round-to-nearest result and its exact residual (TwoSum, an fma
    remainder; f32 through f64) and step one ulp where the direction asks.

    ```mlir
    %r = tile.ieee add, rz %a, %b : f32, f32 -> f32
    ```
  }];
  let arguments = (ins Tile_IEEEKindAttr:$kind, Tile_RoundingModeAttr:$mode,
                       Variadic<AnyFloat>:$operands);
  let results = (outs AnyFloat:$result);
  let builders = [
    OpBuilder<(ins "::mlir::tile::IEEEKind":$kind,
                   "::mlir::tile::RoundingMode":$mode,
                   "::mlir::ValueRange":$operands), [{
      build($_builder, $_state, operands.front().getType(), kind, mode,
            operands);
    }]>
  ];
  let assemblyFormat = [{
    $kind `,` $mode $operands attr-dict `:` type($operands) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_CumSumOp : Tile_Op<"cumsum", [Tile_InKernel]> {
  let summary = "Inclusive scan of a tile along one dimension";
  let description = [{
    Writes into `dst` the inclusive scan of `src` along `dim` (from the end
    when `reverse` is set): the prefix sum (`kind` sum, the default;
    TileLang's `T.cumsum`) or the prefix maximum (`kind` max; TileLang's
    `T.cummax`: NaN elements are ignored as by fmaxf, integers compare
    unsigned when `element` is an unsigned type over the signless storage).
    `src` and `dst` have the same shape and may be the same buffer.

    ```mlir
    tile.cumsum %s -> %s {dim = 0 : i64}
        : memref<256xf32, #tile.scope<shared>>
          -> memref<256xf32, #tile.scope<shared>>
    tile.cumsum %s -> %t {dim = 0 : i64, kind = #tile.reduce<max>, reverse}
        : memref<256xf32, #tile.scope<shared>>
          -> memref<256xf32, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$src, Tile_AnyBuffer:$dst,
    I64Attr:$dim, UnitAttr:$reverse,
    DefaultValuedAttr<Tile_ReduceKindAttr, "::mlir::tile::ReduceKind::sum">:$kind,
    OptionalAttr<TypeAttr>:$element);
  let assemblyFormat = [{
    $src `->` $dst attr-dict `:` type($src) `->` type($dst)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

def Tile_ParallelOp : Tile_Op<"parallel", [Tile_InKernel,
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "An elementwise loop nest over a tile";
  let description = [{
    Runs its body once for every index of a static iteration space of one or
    more dimensions; iterations are independent. The threads of the block
    share the iterations: which thread runs which iteration follows from the
    layouts of the fragments the body touches (layout inference). The body
    reads and writes tile buffers with `memref.load` / `memref.store`. The
    iteration space covers a tile: at most 2^17 iterations.

    `vector`, when given, is the number of consecutive innermost elements a
    thread handles when layout inference has to invent a layout for the loop
    (no gemm or annotation constrains it): 8 for 16-bit and 16 for 8-bit
    data make each thread's accesses 16 bytes wide (`T.Parallel(...,
    coalesced_width=8)`). The default is 4. On NVIDIA GPUs a shared buffer
    the body only reads (or only writes) at exactly the loop's indices is
    then accessed with one `vector`-wide load (store) per group of
    consecutive elements instead of one access per element.

    ```mlir
    tile.parallel (%i, %j) in (64, 128) {
      %x = memref.load %s[%i, %j] : memref<64x128xf32, #tile.scope<fragment>>
      %y = math.exp %x : f32
      memref.store %y, %s[%i, %j] : memref<64x128xf32, #tile.scope<fragment>>
    }
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$extents,
                       OptionalAttr<I64Attr>:$vector);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::ArrayRef<int64_t>":$extents)>];
  let extraClassDeclaration = [{
    ::mlir::Block::BlockArgListType getInductionVars() {
      return getBody().front().getArguments();
    }
  }];
}

def Tile_PipelinedOp : Tile_Op<"pipelined", [Tile_InKernel,
    RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "A serial loop to be software-pipelined";
  let description = [{
    A loop from `lower` to `upper` (exclusive) by `step` whose iterations the
    compiler overlaps: with `num_stages = n` the copies into shared memory of
    up to n-1 later iterations run while the current one computes, through
    n-deep multi-buffered shared memory. `num_stages` is in [0, 32].

    The *statements* of the body are its ops that have memory effects (copies,
    gemms, parallel loops, ...), in order; pure ops such as index arithmetic
    are not counted. `stage` (one entry per statement, in `[0, num_stages]`)
    and `order` (a permutation of the statements) give manual control of the
    schedule; `group` gathers statements that are scheduled together.

    ```mlir
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 {
      tile.copy %A[%r, %k] [64, 32] to %as[%c0, %c0] [64, 32]
          : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.gemm %as, %bs, %acc : memref<64x32xf16, #tile.scope<shared>>,
          memref<32x64xf16, #tile.scope<shared>>
          -> memref<64x64xf32, #tile.scope<fragment>>
    }
    ```
  }];
  let arguments = (ins Index:$lower, Index:$upper, Index:$step,
    I64Attr:$num_stages,
    OptionalAttr<DenseI64ArrayAttr>:$order,
    OptionalAttr<DenseI64ArrayAttr>:$stage,
    OptionalAttr<ArrayAttr>:$group);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::Value":$lower, "::mlir::Value":$upper,
                                 "::mlir::Value":$step, "int64_t":$numStages)>];
  let extraClassDeclaration = [{
    ::mlir::Value getInductionVar() { return getBody().front().getArgument(0); }
    /// The statements of the body: ops with memory effects, in order.
    ::llvm::SmallVector<::mlir::Operation *> getStatements();
  }];
}

//===----------------------------------------------------------------------===//
// Annotations and debugging
//===----------------------------------------------------------------------===//

def Tile_AnnotateLayoutOp : Tile_Op<"annotate_layout", [Tile_InKernel]> {
  let summary = "Forces the layout of a fragment or the swizzle of a shared buffer";
  let description = [{
    A user annotation that layout inference must respect: a
    `#tile.layout` for a fragment, a `#tile.swizzle` for a shared buffer.

    ```mlir
    tile.annotate_layout %as (#tile.swizzle<128>)
        : memref<128x64xf16, #tile.scope<shared>>
    ```
  }];
  let arguments = (ins Tile_AnyBuffer:$buffer, AnyAttr:$layout);
  let assemblyFormat = "$buffer ` ` `(` $layout `)` attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Tile_UseSwizzleOp : Tile_Op<"use_swizzle", [Tile_InKernel]> {
  let summary = "Remaps block indices in panels for L2 reuse";
  let description = [{
    Threadblock rasterization: consecutive blocks walk panels of
    `panel_size` rows (or columns with `order = #tile.raster<col>`) of the
    grid instead of whole rows, so that blocks running at the same time share
    tiles of the inputs in L2. Only meaningful in a kernel with a grid of at
    least two dimensions; has no effect when `enable` is false.

    ```mlir
    tile.use_swizzle 10
    tile.use_swizzle 8 {order = #tile.raster<col>}
    ```
  }];
  let arguments = (ins I64Attr:$panel_size,
    DefaultValuedAttr<Tile_RasterOrderAttr, "::mlir::tile::RasterOrder::row">:$order,
    DefaultValuedAttr<BoolAttr, "true">:$enable);
  let assemblyFormat = "$panel_size attr-dict";
  let hasVerifier = 1;
}

def Tile_PrintOp : Tile_Op<"print", [Tile_InKernel]> {
  let summary = "Prints a scalar or a tile from the device (debugging)";
  let description = [{
    Prints `value` (a scalar, or every element of a tile buffer) with an
    optional message, along with the block and thread that printed it.

    ```mlir
    tile.print %x {msg = "x ="} : f32
    tile.print %acc : memref<16x16xf32, #tile.scope<fragment>>
    ```
  }];
  let arguments = (ins AnyType:$value, OptionalAttr<StrAttr>:$msg);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Tile_DeviceAssertOp : Tile_Op<"device_assert", [Tile_InKernel]> {
  let summary = "Stops the kernel with a message when a condition is false";
  let description = [{
    A run-time check: every thread (or every instance of a `tile.parallel`
    body) that evaluates `condition` to false reports `msg` with the source
    position of the op (its `FileLineColLoc`), the function and the block,
    and the kernel stops. On NVIDIA GPUs this is CUDA's `__assertfail`
    (the launch then fails with an assertion error), on the CPU a runtime
    call that makes the kernel call raise, on AMD GPUs a trap (the message is
    lost: printing needs the ROCm device libraries).

    ```mlir
    %ok = arith.cmpf oge, %x, %zero : f32
    tile.device_assert %ok, "x must be non-negative" loc("kernel.py":12:9)
    ```
  }];
  let arguments = (ins I1:$condition, StrAttr:$msg);
  let assemblyFormat = "$condition `,` $msg attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The file and line the lowerings report: the first file position in
    /// the op's location ("<unknown>" and 0 without one).
    std::pair<::llvm::StringRef, unsigned> getSourcePosition();
  }];
}

include "dialects/Tile/IR/TileThreadOps.td"

#endif // TILE_OPS_TD
