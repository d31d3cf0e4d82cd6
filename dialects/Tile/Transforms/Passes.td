//===- Passes.td - tile dialect transformations ------------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TRANSFORMS_PASSES_TD
#define TILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileLayoutInference : Pass<"tile-layout-inference", "func::FuncOp"> {
  let summary = "Chooses the layout of every fragment and the swizzle of "
                "every shared buffer";
  let description = [{
    Decides, for every `tile.alloc_fragment`, which thread and register hold
    each element (`layout`), for every `tile.parallel`, which thread runs
    which iteration (`layout` over the iteration space), and for every
    `tile.alloc_shared` the XOR swizzle that keeps 16-byte accesses of rows
    and columns free of bank conflicts (`swizzle`).

    Anchors come first: user annotations (`tile.annotate_layout`), then the
    accumulator of every `tile.gemm`, whose layout is that of the tensor-core
    instruction for the gemm's warp partition (`warp_partition`, chosen from
    its policy: `square` balances the warp tiles, `full_row` stacks warps
    along M, `full_col` side by side along N, across warpgroups when there
    are more than four warps). Layouts then propagate to a fixpoint through
    parallel loops (a loop takes the layout of a fragment it indexes with its
    induction variables; fragments indexed by a subset of them get the
    projection, replicated over the other threads), reductions (the
    destination is the source layout without the reduced dimension) and
    fragment-to-fragment copies. A fragment a loop indexes partly by
    values that are the same in all its iterations (`x[i, j]` with `i` a
    serial loop's variable around the T.Parallel over `j`) gets the loop's
    layout over the other dimensions with every index of those held in each
    thread's registers (up to 128 registers), and such an access is local
    wherever each thread holds every row of its columns: the lowering
    indexes the registers at run time. What stays unconstrained gets a
    blocked layout. When a loop indexes a fragment whose layout does not hold the
    elements each thread needs, the pass inserts an explicit conversion: a
    fragment in the loop's layout filled by a `tile.copy` before the loop
    (and copied back after it if the loop writes it).

    Before:
    ```mlir
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %acc : ... -> memref<64x64xf32, #tile.scope<fragment>>
    ```
    After:
    ```mlir
    %acc = tile.alloc_fragment {layout = #tile.layout<affine_map<(d0, d1) ->
        ((d0 mod 8) * 4 + (d1 floordiv 2) mod 4 + ..., ...)>, threads = 128>}
        : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %acc {warp_partition = array<i64: 2, 2>} : ...
    ```
  }];
  let options = [
    Option<"mma", "mma", "bool", /*default=*/"true",
           "Use tensor-core (mma.sync) accumulator layouts for gemms whose "
           "element types support them">,
    Option<"mmaSm75", "mma-sm75", "bool", /*default=*/"false",
           "Turing's mma.sync (sm_75): only f16 operands (into f32 or f16) "
           "get tensor-core layouts (each m16n8k16 step runs as two "
           "m16n8k8); bf16, tf32 and int8 gemms run on the CUDA cores">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "Use warpgroup (wgmma, sm_90a) accumulator layouts for gemms on "
           "shared operands that wgmma can read; the gemm gets a `wgmma` "
           "attribute with its warpgroup grid">,
    Option<"mfma", "mfma", "bool", /*default=*/"false",
           "AMD targets: MFMA 32x32x8 accumulator layouts (wave64) for f16 "
           "and bf16 gemms; the gemm gets an `mfma` attribute with its wave "
           "grid">
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TilePipelineSchedule : Pass<"tile-pipeline-schedule", "func::FuncOp"> {
  let summary = "Assigns pipeline stages to the statements of pipelined loops";
  let description = [{
    First phase of software pipelining. For every `tile.pipelined` loop with
    `num_stages = n >= 2` and no user schedule, the copies from global to
    shared memory (and the statements they depend on) get stage 0 and every
    other statement stage n - 1: the copies of iteration k + n - 1 run while
    iteration k computes. The decision is written on the loop as `stage` and
    `order`; a schedule the user gave is kept and checked (a statement may
    not run in an earlier stage than one whose result it uses).

    ```mlir
    // After:
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3
        order = [0, 1, 2] stage = [0, 0, 2] { copy A; copy B; gemm }
    ```
  }];
}

def TileWarpSpecialize : Pass<"tile-warp-specialize", "func::FuncOp"> {
  let summary = "Hopper pipelining: a TMA producer warpgroup and mbarrier "
                "rings";
  let description = [{
    For sm_90a. A kernel's one `tile.pipelined` loop (no user schedule, at
    the top of the kernel body, whole warpgroups of threads) whose copies
    from global to shared memory can run on TMA (a kernel argument into a
    whole shared allocation, same element type, boxes of at most 256 per
    dimension whose innermost extent and start offset are provably
    multiples of 16 bytes) is rewritten into a `tile.warp_specialize`:

    - each filled buffer becomes a ring of `num_stages` slots (with its
      swizzle fixed), and two `tile.alloc_barrier` arrays guard them:
      `full` (one arrival: the producer's `expect_tx`) and `empty` (one
      arrival per consumer warp);
    - the producer region (an added warpgroup) loops over the iterations:
      wait for slot `i mod S` to be empty (parity of round `i / S`, flipped,
      so that the first round passes), arrive on `full` expecting the bytes
      of the copies, and issue them `via` the barrier;
    - the consumer region (the kernel's threads) holds the rest of the
      kernel body, the loop waiting for `full`, running the loop's other
      statements on the slot, and arriving on `empty`.

    With `cluster-size = n > 1`, when the grid extent along some dimension
    is a constant multiple of n and some copies do not depend on that block
    index (and split into a multiple of n TMA boxes), blocks run in clusters
    of n along it: those copies are multicast (each block issues its share of
    the boxes into every block of the cluster), and consumers release slots
    in every block of the cluster (`empty` expects their arrivals too).

    With `persistent-sms = P > 0`, a kernel with a constant grid of more
    than P tiles (at most two grid dimensions, loop bounds independent of the
    block indices) becomes persistent: the grid shrinks to P blocks (a
    multiple of the cluster size), and both regions loop over the tiles
    `cluster, cluster + G / n, ...` of the cluster grid (G: the launch's
    `gpu.grid_dim x`), in the order of the
    kernel's `tile.use_swizzle` (which is then consumed) or row-major. The
    ring's iteration count runs on across tiles, so the producer fills the
    next tile's slots while the consumer finishes a tile (its epilogue).
    The kernel is marked `tile.persistent = {blocks = n, tiles = T}` (T: the
    blocks of the original grid): the launch may use any multiple of n
    blocks up to T, and the runtime launches one per multiprocessor of the
    device it runs on (rounded down to a multiple of n).

    The TMA copies before the loop into buffers of their own (attention's
    query tile in the forward, K and V in the backward: the tile copies) go
    to the producer in a persistent kernel, on a ring of two tile slots
    filled for the next tile while the consumers finish this one. With
    `early-tile-release=true`, where nothing uses the buffers after the
    loop (the backward with dK and dV stored from their fragments), the
    consumers free the slot right after the loop, and where two slots do
    not fit in shared memory but one does the ring has one slot: the next
    tile's copies land during this tile's epilogue. With
    `producer-tile-copies=true` a kernel that is not persistent hands them
    to the producer too: it issues them once, on a barrier of one slot,
    before its loop's copies, and the consumers wait for them where the
    copies were instead of copying with their own threads.

    Loops that do not qualify are left to `tile-pipeline`. Runs before
    layout inference, which sees the consumer's threads as the kernel's.

    With two or more consumer warpgroups and a loop holding two or more
    gemms with other work between them (attention: S = Q K^T, the softmax,
    O += P V), the consumer's gemms are marked `pingpong` (unless
    `pingpong=false`): the lowering makes the warpgroups take turns at them,
    so that one warpgroup's softmax runs while another's gemms use the
    tensor cores.

    With `rotate=true`, such a loop whose second gemm is its last statement
    and reads its A and accumulator from registers (O += P V) is rotated
    in the consumer (the intra-warpgroup overlap of FlashAttention-3):
    iteration k issues S_k = Q K_k^T and the O += P V of iteration k - 1
    as asynchronous gemms, waits for the first (`tile.gemm_wait 1`), runs
    the statements between the gemms that touch neither P nor O (the
    maximum, exp2, the row sums) while O += P V is on the tensor cores,
    then waits for it, frees slot k - 1 and runs the rest (O rescaled,
    P written). The first iteration's gemm is peeled before the loop and
    the last O += P V after it; turns (`pingpong`) are not used then.
    ptxas hoists that second wait above most of the softmax's exp2 (the
    PTX order is lost in the SASS); with `rotate-sched-barrier=true` the
    wait is marked `tile.sched_barrier` and the lowering puts a zero
    `nanosleep` before it, which ptxas keeps in place.

    ```mlir
    // After (schematically):
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<3x128x64xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<3xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(4) : memref<3xi64, #tile.scope<shared>>
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 {
        tile.barrier_wait %empty[%s], %p1 : ...
        tile.barrier_arrive %full[%s] expect_tx(32768) : ...
        tile.copy %A[...] [128, 64] to %slot[%c0, %c0] [128, 64] via %full[%s] : ...
      }
    } consumer {
      scf.for %k = %c0 to %n step %c1 {
        tile.barrier_wait %full[%s], %p : ...
        tile.gemm %slot, ...
        tile.barrier_arrive %empty[%s] : ...
      }
    }
    ```
  }];
  let options = [
    Option<"clusterSize", "cluster-size", "int64_t", /*default=*/"2",
           "Blocks per cluster sharing multicast copies (1: no clusters)">,
    Option<"persistentSms", "persistent-sms", "int64_t", /*default=*/"0",
           "Persistent kernels of this many blocks when the grid has more "
           "tiles (0: never)">,
    Option<"pingpong", "pingpong", "bool", /*default=*/"true",
           "Mark the gemms of attention-like loops for warpgroup turns">,
    Option<"rotate", "rotate", "bool", /*default=*/"false",
           "Rotate attention-like consumer loops: S = Q K^T of the next "
           "tile and O += P V of this one in flight together">,
    Option<"rotateSchedBarrier", "rotate-sched-barrier", "bool",
           /*default=*/"false",
           "In a rotated loop, mark the wait for O += P V "
           "`tile.sched_barrier` (the lowering puts a zero nanosleep before "
           "it, which ptxas does not move the wait above)">,
    Option<"producerTileCopies", "producer-tile-copies", "bool",
           /*default=*/"false",
           "In a kernel that is not persistent, the producer issues the "
           "TMA copies before the loop into buffers of their own (the tile "
           "copies) once, on a barrier of their own, and the consumers "
           "wait for them where the copies were">,
    Option<"earlyTileRelease", "early-tile-release", "bool",
           /*default=*/"false",
           "In a persistent kernel whose tile copies' buffers nothing uses "
           "after the loop, the consumers free their slot right after the "
           "loop instead of at the end of the tile, and one slot suffices "
           "where two do not fit">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::gpu::GPUDialect"];
}

// tile-pipeline-expand's option, which tile-pipeline passes on.
defvar CopiesFirstOption =
    Option<"copiesFirst", "copies-first", "bool", /*default=*/"false",
           "Issue a step's copies right after its wait and barrier, before "
           "its consumers (num_stages - 1 copy groups in flight while they "
           "compute) instead of after them (num_stages - 2)">;

defvar ReuseSlotsOption =
    Option<"reuseSlots", "reuse-slots", "bool", /*default=*/"false",
           "num_stages - 1 slots instead of num_stages: a step's copies go "
           "into the slot its own consumers read, each after the last "
           "consumer that reads its buffer and a barrier">;

defvar GroupPerCopyOption =
    Option<"groupPerCopy", "group-per-copy", "bool", /*default=*/"false",
           "Commit each copy of a step as a group of its own and wait for a "
           "buffer right before the first consumer that reads it, instead "
           "of for all of the step's buffers before its first consumer">;

defvar AsyncCopiesOption =
    Option<"asyncCopies", "async-copies", "bool", /*default=*/"true",
           "Make the producers' copies asynchronous (cp.async); false keeps "
           "them synchronous loads and stores">;

def TilePipelineExpand : Pass<"tile-pipeline-expand", "func::FuncOp"> {
  let summary = "Expands scheduled pipelined loops into prologue, steady "
                "state and epilogue";
  let description = [{
    Second phase of software pipelining. A `tile.pipelined` loop with a
    schedule becomes: shared buffers written by stage-0 copies get
    `num_stages` slots (a leading dimension; statements use slot
    `iteration mod num_stages`), the copies become asynchronous
    (`tile.copy {async}`, when source and destination have the same element
    type), the loop runs `n + max_stage` steps split into a prologue (the
    first `max_stage` steps, unrolled, guarded by the trip count), a steady
    state `scf.for` where every statement runs, and an epilogue (the last
    `max_stage` steps, unrolled). Each step waits for the copy group its
    consumers need (`tile.async_wait`), synchronizes the block
    (`tile.barrier`), runs the consumers, then issues and commits the next
    copies (`tile.async_commit`). Loops with one stage become `scf.for`.

    With `copies-first` a step issues and commits its copies right after
    the wait and the barrier, before its consumers: the slot they write
    was last read by the previous step's consumers, which the barrier has
    ordered, so with `num_stages` slots `num_stages - 1` copy groups are in
    flight while the consumers compute (after them: one fewer, and with
    two stages none). A loop-carried dependence from a consumer to a later
    iteration's copy through global memory is then not kept (as with more
    than two stages either way).

    With `reuse-slots` the buffers get `num_stages - 1` slots: iteration
    `i + num_stages - 1`'s copy goes into iteration `i`'s slot at the step
    that consumes `i`, right after the last consumer that reads its buffer
    (behind a barrier, which orders every thread's reads before the copy
    overwrites them). As many copy groups are in flight while the
    consumers compute as without it (`num_stages - 2`), in one slot less of
    shared memory, for a barrier a step (the flash decoding split kernel:
    three blocks a multiprocessor instead of two). It excludes
    `copies-first` and needs two or more stages.

    With `group-per-copy` every copy of a step commits a group of its own
    (a step commits as many groups as the loop has copies, empty ones where
    a copy does not run), and the wait moves from the top of the step to
    the first consumer that reads each buffer, waiting for the groups of
    that consumer's buffers only (with a barrier after it, which makes
    every thread's copies visible): in attention the V tile keeps landing
    while the score gemm and the softmax run. Steps whose consumers read
    different buffers get one wait and one barrier more. A copy into a
    slot read at the step before is ordered by a barrier of its own step
    before it.

    ```mlir
    // After (schematically, num_stages = 2):
    %a2 = tile.alloc_shared : memref<2x64x32xf16, #tile.scope<shared>>
    tile.copy %A[...] [64, 32] to %a2[%c0, %c0, %c0] [1, 64, 32] {async}
    tile.async_commit
    scf.for %t = %c1 to %n step %c1 {
      tile.async_wait 0
      tile.barrier
      tile.gemm %slot(t-1), ...
      tile.copy ... {async}   // into slot t mod 2 (copies-first: before the gemm)
      tile.async_commit
    }
    ```
  }];
  let options = [CopiesFirstOption, ReuseSlotsOption, GroupPerCopyOption,
                 AsyncCopiesOption];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TilePipeline : Pass<"tile-pipeline", "func::FuncOp"> {
  let summary = "Software-pipelines tile.pipelined loops (schedule + expand)";
  let description = [{
    Runs `tile-pipeline-schedule` then `tile-pipeline-expand`.

    ```mlir
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 { ... }
    // becomes multi-buffered shared memory, async copies and an scf.for
    ```
  }];
  let options = [CopiesFirstOption, ReuseSlotsOption, GroupPerCopyOption,
                 AsyncCopiesOption];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TileInsertBarriers : Pass<"tile-insert-barriers", "func::FuncOp"> {
  let summary = "Inserts block barriers between conflicting shared-memory "
                "accesses";
  let description = [{
    Threads of a block read and write shared memory in different patterns
    from one tile op to the next (a cooperative copy, then a gemm), so a
    `tile.barrier` must separate a write of a shared buffer from a later read
    of it, and a read from a later write (the next loop iteration's copy).
    The pass tracks, per shared buffer, whether it was read or written since
    the last barrier, through structured control flow (loops to a fixpoint,
    both branches of an if), and inserts a barrier before the first op that
    conflicts. Asynchronous copies are synchronized by the pipeliner and are
    skipped.

    ```mlir
    tile.copy %A[...] [64, 32] to %s[%c0, %c0] [64, 32] : ...
    tile.barrier            // inserted: the gemm reads what the copy wrote
    tile.gemm %s, %t, %acc : ...
    ```
  }];
}

def TilePrintLayouts : Pass<"tile-print-layouts", "func::FuncOp"> {
  let summary = "Prints the inferred layout of every fragment and shared "
                "buffer as a table";
  let description = [{
    A debugging aid (the text of `tl.tools.layout_text`): for every
    `tile.alloc_fragment` with a `layout`, a table with one cell per element
    giving `thread:register` (replica 0 of a replicated layout); for every
    `tile.alloc_shared` with a `swizzle`, the element offset of each element
    after panels and swizzle. Rows are the first index (the leading indices
    for rank > 2; a long vector wraps at 32 elements). Buffers without an
    inferred layout are skipped. The IR is not changed; the tables go to
    standard output.

    ```mlir
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(d0, d1) ->
        (d0 * 2 + d1 floordiv 2, d1 mod 2)>, threads = 4>}
        : memref<2x4xf32, #tile.scope<fragment>>
    ```
    prints
    ```
    // tile-print-layouts: @f
    %0 fragment 2x4xf32: 4 threads, 2 registers/thread; cells are thread:register
      |   0   1   2   3
    0 | 0:0 0:1 1:0 1:1
    1 | 2:0 2:1 3:0 3:1
    ```
  }];
}

def TileCheckUninitialized : Pass<"tile-check-uninitialized", "func::FuncOp"> {
  let summary = "Warns where a thread's buffer is read before anything "
                "writes it";
  let description = [{
    `tile.alloc_fragment`, `tile.alloc_local` and `tile.alloc_var` leave
    their elements undefined (registers, as in TileLang). A warning (not an
    error: the program is valid, its result is not defined) is emitted at a
    `memref.load` of such a buffer that comes first among the buffer's uses
    in program order (a pre-order walk: a read in a loop body before any
    write, the first trip reads what the registers held), unless the load
    sits under an `scf.if` between it and the allocation (a read guarded by
    a condition, as of a value kept from an earlier trip). Any other first
    use (a store, a tile operation, a view, a call, the read of a
    read-modify-write marked `tile.partial_write`) counts as a write. The
    IR is not changed.

    ```mlir
    %acc = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (64) {
      %v = memref.load %acc[%i] : memref<64xf32, #tile.scope<fragment>>  // warning
      ...
      memref.store %w, %acc[%i] : memref<64xf32, #tile.scope<fragment>>
    }
    ```
  }];
}

def TileLegalizeConversions : Pass<"tile-legalize-conversions", "func::FuncOp"> {
  let summary = "Gives element conversions the tile rules on every target";
  let description = [{
    Tile programs convert elements by one set of rules on every target (see
    `ConversionUtils.h`); the conversions the lowerings emit for `tile.copy`
    follow them already, and this pass makes the frontend's (`T.cast`, dtype
    constructors) follow them too:

    - `arith.fptosi` / `arith.fptoui` give poison for values outside the
      integer type's range and for NaN (wrap-around on the CPU, saturation
      on GPUs). They become the saturating form: truncate toward zero,
      clamp to the type's range, NaN becomes 0. The in-range conversion at
      its core is marked `tile.saturated`, which the pass leaves alone.
    - No target lowers conversions to or from fp8 (`f8E4M3FN`, `f8E5M2`;
      LLVM has no fp8 type). `arith.extf`, `truncf`, `sitofp`, `uitofp`,
      `fptosi` and `fptoui` with an fp8 side become integer operations on
      the bits through f32: round to nearest even, saturate to the largest
      finite value, NaN stays NaN.

    Before:
    ```mlir
    %i = arith.fptosi %x : f32 to i8
    ```
    After:
    ```mlir
    %r = arith.fptosi %x {tile.saturated} : f32 to i8
    %hi = arith.cmpf oge, %x, %cst_128 : f32
    %lo = arith.cmpf olt, %x, %cst_m128 : f32
    %r1 = arith.select %hi, %c127_i8, %r : i8
    %r2 = arith.select %lo, %c-128_i8, %r1 : i8
    %nan = arith.cmpf uno, %x, %x : f32
    %i = arith.select %nan, %c0_i8, %r2 : i8
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileLegalizeSafeAccess : Pass<"tile-legalize-safe-access", "func::FuncOp"> {
  let summary = "Makes element accesses of global buffers bounds-safe";
  let description = [{
    TileLang's rule for global memory: an element load whose indices may lie
    outside the buffer reads a safe value instead (zero, or the value given
    by `T.annotate_safe_value`, carried on the load as `tile.safe_value`),
    and such a store is dropped. Programs rely on it to gather through index
    tensors that hold sentinels (sparse attention's "index = length").

    The pass bounds every index of a `memref.load` / `memref.store` of a
    global buffer (no memory space) inside a `tile.kernel`: constants,
    `tile.parallel` variables, block indices (below their grid extent),
    thread indices, loop variables (between their limits) and sums,
    products by constants, divisions and remainders of those. A dimension
    whose index is proven inside `[0, extent)` is not checked; a dynamic
    extent is matched by its symbolic size (`tile.dim_symbols` on the
    function's arguments, written by the frontend). The others are compared
    (unsigned, so negative indices are out of range too). A load whose
    unchecked dimensions all have static extents (never 0) reads a clamped
    position (0 in those dimensions) and selects the safe value where the
    check fails: it stays a plain load, which the pipelining and
    warp-specialization passes read (a page-table lookup feeding a copy). So
    does a load that is a top-level statement of a `tile.pipelined` loop,
    whatever its extents (only a dimension of run-time extent 0 would put
    the clamped position outside). Other loads, and stores, move into an
    `scf.if`. Every access it has seen is marked `tile.guarded`.
    Tile operations (`tile.copy`, `tile.atomic_add`) are bounds-safe by their
    own definition and are not touched.

    Before:
    ```mlir
    %i = arith.index_cast %raw : i32 to index
    %v = memref.load %kv[%i] : memref<16xf32>
    ```
    After:
    ```mlir
    %in = arith.cmpi ult, %i, %c16 : index
    %j = arith.select %in, %i, %c0 : index
    %x = memref.load %kv[%j] {tile.guarded} : memref<16xf32>
    %v = arith.select %in, %x, %cst_0 : f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // TILE_TRANSFORMS_PASSES_TD
