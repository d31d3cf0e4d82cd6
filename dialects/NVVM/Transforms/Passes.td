//===- Passes.td - peepholes on lowered NVIDIA code --------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
// Rewrites that run after convert-tile-to-nvvm on the arith and LLVM ops of
// the lowered kernels: not conversions, but instruction-selection helps
// for ptxas (integer to float without I2F, divisions by constants, lop3).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_NVVM_TRANSFORMS_PASSES_TD
#define TILE_NVVM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileFastIntToFloat : Pass<"tile-fast-int-to-float"> {
  let summary = "Converts small integers to float16/bfloat16/float32 without I2F";
  let description = [{
    Rewrites `arith.sitofp` / `arith.uitofp` to `f16` or `bf16` whose
    operand the integer range analysis bounds to a narrow interval
    `[lo, hi]` into the "magic number" sequence: the offset integer
    `x - lo` is added to the bits of a power of two whose unit in the last
    place is 1 (1024.0 for f16, 128.0 for bf16, 2^23 for f32), the bits are
    reinterpreted as the float, and one exact subtraction of
    `2^p - lo` yields `x`. The result is exact, like the conversion it
    replaces, but costs one integer add (folded into the masks of a nibble
    or byte extraction) and one float subtraction instead of an integer to
    float conversion, which runs at a quarter of the rate of arithmetic on
    NVIDIA GPUs (the dequantizing kernels convert every weight).

    * f16: `hi - lo < 1024` and `lo` in `[-1024, 1024]`;
    * bf16: `hi - lo < 128` and `lo` in `[-128, 128]`, otherwise, for
      `|lo|, |hi| <= 256`, through f32 (`2^23`) and an exact `arith.truncf`;
    * f32: `lo`, `hi` in `[-2^22, 2^22]` (the dequantizing GEMV computes
      its weights in f32).

    Other conversions are left alone.

    ```mlir
    %n = arith.andi %b, %c15 : i32           // [0, 15]
    %q = arith.subi %n, %c8 : i32            // [-8, 7]
    %f = arith.sitofp %q : i32 to f16
    // becomes
    %u = arith.addi %q, %c25608 : i32        // 0x6400 + 8
    %h = arith.trunci %u : i32 to i16
    %v = arith.bitcast %h : i16 to f16       // 1024 + 8 + q
    %f = arith.subf %v, %cst_1032 : f16
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileEmulateExp2 : Pass<"tile-emulate-exp2"> {
  let summary = "Computes every n-th exp2 with a polynomial on the FMA pipe";
  let description = [{
    `ex2.approx` runs on the special-function unit at 16 results a clock
    per multiprocessor on Hopper, an eighth of the FMA pipe's rate. In an
    attention forward at head dim 64 the softmax's exp2s take as many
    clocks of that unit as the two gemms take of the tensor cores, so the
    unit bounds the loop. This pass moves the last of every `every`
    `llvm.nvvm.ex2.approx.ftz.f32` calls of each block (a thread's
    unrolled fragment elements) to the FMA and integer pipes:

    * x is clamped to [-126, 128);
    * floor(x) is read from the low bits of `add.rm(x, 1.5 * 2^23)`;
    * 2^f for f = x - floor(x) in [0, 1) is a cubic with p(0) = 1 (three
      FMAs, relative error at most 8.6e-5, values in [1, 2));
    * the cubic is multiplied by 2^floor(x), built in an exponent field
      (NaN propagates).

    About ten instructions instead of one, on pipes that have room. The
    error is larger than `ex2.approx`'s 2^-22 but below float16's and
    bfloat16's rounding; inputs below -126 (and -inf) give 2^-126 instead
    of 0, inputs from 128 on (and inf) about 2^128 (finite) instead of
    inf, NaN stays NaN. On the H200 it made the FlashAttention forward and
    backward slower at every rate tried (BENCHMARKS.md 2026-12-03): the
    special-function unit is not what bounds them. `every=0` (the
    default) leaves every call alone; `tl.exp2_emulation` sets it.
  }];
  let options = [
    Option<"every", "every", "unsigned", /*default=*/"0",
           "Emulate the last of every `every` exp2 calls of a block (0: none)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def TileFoldDivisibleIndex : Pass<"tile-fold-divisible-index"> {
  let summary = "Folds a // d and a % d where a is a multiple of d plus a constant";
  let description = [{
    A thread's elements of a `T.Parallel` are the thread's base index plus
    a constant, the base a multiple of the thread's run of elements. An
    index such as `j // 2` or `j % 8` (a lane of a packed pair, a nibble of
    a word) is then a constant for each element, but `arith`'s folders do
    not see it: `(t * 32 + 5) floordiv 8` stays a division and the
    remainder `a - (a floordiv 8) * 8` stays three ops, and the shift
    amounts and masks derived from them stay dynamic until LLVM.

    Rewrites `arith.floordivsi %a, d` (index, constant d > 1) where `%a` is
    a sum of terms times constants that are all multiples of d, plus a
    constant c, into the sum of the terms times `k / d` plus `floor(c / d)`,
    and the remainder `%a - (%a floordiv d) * d` built on it into the
    constant `c mod d`. Other divisions are left alone.

    ```mlir
    %a = arith.muli %t, %c32 : index
    %b = arith.addi %a, %c5 : index
    %q = arith.floordivsi %b, %c8 : index
    %p = arith.muli %q, %c8 : index
    %r = arith.subi %b, %p : index
    // becomes
    %q = arith.muli %t, %c4 : index          // (t * 32 + 5) // 8
    %r = arith.constant 5 : index            // (t * 32 + 5) % 8
    ```

    In loops it also moves constants out of loop-invariant sums: `x + (y +
    c)` with `y + c` the same in every iteration becomes `(x + y) + c`, so
    that LLVM holds one `x + y` instead of hoisting every element's `y + c`
    out of the loop into a register of its own (the constant becomes an
    immediate of the add or of the load or store).

    A swizzled shared address is `a ^ f(a)`, f reading the row bits of a
    (`(a / row) % period * chunk`), and a fragment element's `a` is the
    thread's base plus a constant. Where that constant has no bit the base
    may set (known from the arithmetic down to the thread id's range), the
    sum is an OR, the swizzle is linear over it, and the constant moves out
    through the division, remainder, product and XOR:
    `swizzle(t + c) = swizzle(t) ^ swizzle(c)`. The part of the constant
    above the bits the base may set then becomes an addition (an immediate
    of the access): each element's address is the thread's swizzled base,
    XOR a column constant, plus a constant, so LLVM hoists one value per
    distinct column constant instead of one full address per element.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileFuseLop3 : Pass<"tile-fuse-lop3"> {
  let summary = "Fuses (x & M) | C and (x & M) ^ C with constant M, C into one lop3";
  let description = [{
    Rewrites `arith.ori` / `arith.xori` of an `arith.andi` with a constant
    mask (used only there) and a constant into one `lop3.b32` (inline PTX):
    the mask as the instruction's immediate, the other constant as a
    register operand. A SASS LOP3 holds a single 32-bit immediate, so ptxas
    turns the two logic ops with two immediates into two LOP3s; with the
    second constant in a register (materialized once) it is one. The
    dequantizing GEMV builds every weight this way (a nibble or byte masked
    into the mantissa of a float, the exponent OR-ed in), one instruction
    less per weight. i32 only, and only where the result leaves integer
    arithmetic (a bitcast, a store): a result that is shifted or combined
    further is left to LLVM, which folds such chains better as a whole.
    The lop3's truth table computes the same bits for all inputs.

    ```mlir
    %a = arith.andi %x, %c7864320 : i32      // 15 << 19
    %v = arith.ori %a, %c1065353216 : i32    // 0x3F800000
    // becomes
    %c = arith.constant 1065353216 : i32
    %v = llvm.inline_asm "lop3.b32 $0, $1, 0x00780000, $2, 0xea;", "=r,r,r" %x, %c
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def TileMergeBarriers : Pass<"tile-merge-barriers"> {
  let summary = "Erases block barriers that order no conflicting memory accesses";
  let description = [{
    The lowering emits a barrier around every use of shared scratch (a
    reduction across warps: one before its partials are stored, one
    before they are read, one after; a fragment staged for a gemm: one
    before, one after). Runs of such steps leave barriers that order
    nothing: the trailing barrier of a row max and the leading one of the
    row sum in an online softmax, with only register arithmetic between
    them, or, when successive ops use different scratch regions
    (convert-tile-to-nvvm `scratch-slots`), the barrier that kept one op
    from writing where the previous one still read.

    Each block is cut at its block-wide barriers (`gpu.barrier`, or an
    `nvvm.barrier` with no id, thread count or reduction). The barriers
    are visited in order, with the accesses since the last barrier kept:
    a barrier is erased when no access since then conflicts with an
    access up to the next barrier (one of the two a write, both to global
    memory or to overlapping bytes of shared memory). A shared access
    covers the bytes of its `memref.view` of the dynamic shared memory at
    a constant offset, or at a constant from one run-time base (views
    from different bases may overlap), and all of shared memory
    otherwise. Per-thread memory (`memref.alloca` and views of it),
    operations without memory effects (regions included), warp shuffles,
    `mma.sync`, LLVM math intrinsics that read no memory (`ex2`, `lg2`,
    ...) and `cp.async.commit_group` are thread-local. An asynchronous
    copy (`nvgpu.device_async_copy`) counts as a read of its source and a
    write of its destination at the issue. Anything else (unknown
    operations, the wait for asynchronous copies, mbarriers, fences,
    inline assembly, an op holding a barrier) conflicts with every
    access. What precedes a block's first barrier and follows its last
    includes code outside the block (a loop's other iterations), so those
    barriers stay. Named barriers (`bar.sync id, n`) are left alone:
    warp-specialized code pairs them with other warps' `bar.arrive`, so
    each one is a signal.

    ```mlir
    gpu.barrier
    %m = memref.load %scratch_a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier   // erased: %scratch_b does not overlap %scratch_a
    memref.store %s, %scratch_b[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %t = memref.load %scratch_b[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    ```
  }];
}

def TileCheckNVVMChip : Pass<"tile-check-nvvm-chip", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Refuses NVVM operations that the gpu.module's chip lacks";
  let description = [{
    LLVM's NVPTX backend does not diagnose an intrinsic the target chip
    lacks: instruction selection aborts the process ("LLVM ERROR: Cannot
    select: intrinsic llvm.nvvm.mbarrier.try.wait..."), which, run from
    Python, ends the interpreter. This pass runs on the lowered kernels
    before they are translated to LLVM IR and turns every such operation
    into an error at its location (the user's line of the tile operation
    it came from), naming the operation, what it needs and the chip of the
    gpu.module's `#nvvm.target`. A chip that is not an NVIDIA chip of the
    chip table (which LLVM aborts on too) is an error.

    MLIR's verifier refuses the operations with an `NVVMRequiresSM` trait
    (wgmma, `mapa`, `cluster.wait`, ...) on a chip without them; for the
    operations that lack one, what they need comes from a table here (PTX
    ISA target notes): `mbarrier.try_wait`, transaction counts (`expect_tx`,
    `complete_tx`), `fence.mbarrier.init`, the async-proxy fences,
    `cluster.arrive`, the bulk copies `cp.async.bulk.*`, `elect.sync`,
    `stmatrix` and `griddepcontrol` need sm_90; `setmaxregister` needs an
    arch-specific target (sm_90a); float8 `mma.sync` and
    `convert.f32x2.to.f8x2` need sm_89. The tile lowering refuses or
    replaces the tile operations behind them first (with the tile
    operation's own message); this pass is the net under it, so that no
    kernel reaches the backend with an operation the chip cannot run.
  }];
}

#endif // TILE_NVVM_TRANSFORMS_PASSES_TD
