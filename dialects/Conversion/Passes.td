//===- Passes.td - tile conversion passes ------------------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_PASSES_TD
#define TILE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToSCF : Pass<"convert-tile-to-scf", "ModuleOp"> {
  let summary = "Lower tile programs to serial loops (the CPU backend)";
  let description = [{
    Lowers every `tile.kernel` to a nest of `scf.for` loops over the grid, in
    which one iteration runs one thread block; each tile op becomes a loop
    nest over its tile with `memref` loads and stores. Buffers lose their
    `#tile.scope` memory space: shared memory, fragments and per-thread
    buffers become heap buffers allocated once before the grid loops. This is
    the semantic reference of the tile dialect that every GPU backend is
    tested against: copies are bounds-safe (reads outside the source give
    zero, writes outside the destination are dropped), a gemm accumulates in
    the element type of its accumulator, and `tile.print` prints through
    `printf` with the block index.

    With `bounds-check` (the default) every element access the program
    writes itself (`memref.load` / `memref.store` in a kernel: `B[i] =
    A[i + k]`) is checked against the buffer's extents first; an index
    outside them stops the kernel as a failing `tile.device_assert` does
    (the call raises `DeviceAssertionError` at the user's line) instead of
    reading or writing out of bounds. Tile ops are bounds-safe already.

    Before:
    ```mlir
    tile.kernel blocks(%bx) in (%n) threads(128) {
      %s = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
      tile.copy %A[%off] [64] to %s[%c0] [64]
          : memref<?xf32> to memref<64xf32, #tile.scope<fragment>>
    }
    ```
    After (schematically):
    ```mlir
    %s = memref.alloc() : memref<64xf32>
    scf.for %bx = %c0 to %n step %c1 {
      scf.for %i = %c0 to %c64 step %c1 {
        // load %A[%off + %i] if in bounds, else 0; store into %s[%i]
      }
    }
    memref.dealloc %s : memref<64xf32>
    ```
  }];
  let options = [
    Option<"boundsCheck", "bounds-check", "bool", /*default=*/"true",
           "Check the indices of the program's element loads and stores; an "
           "index out of bounds stops the kernel with a device assertion">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def ConvertTileToROCDL : Pass<"convert-tile-to-rocdl", "ModuleOp"> {
  let summary = "Lower tile programs to GPU kernels for AMD GPUs";
  let description = [{
    The same outlining and per-thread lowering as `convert-tile-to-nvvm`,
    for an AMD `chip` (a `#rocdl.target`): waves of 64 lanes (reductions
    shuffle across 64 lanes before going through the LDS), gemms with an
    `mfma` wave grid become `rocdl.mfma.f32.32x32x8f16` / `.bf16.1k`
    intrinsics on operands gathered from the LDS per lane, copies are
    synchronous (no cp.async: asynchronous copies of the pipeliner become
    plain loads and stores into the multi-buffered LDS, commit and wait
    vanish), math stays in the math dialect for `convert-math-to-llvm`, and
    the LDS budget is the chip's (64 KB; 160 KB on gfx950). NVIDIA-only
    constructs (warp specialization, mbarriers, device printf) are errors.

    ```mlir
    gpu.module @f_kernel [#rocdl.target<chip = "gfx942">] {
      gpu.func @f_kernel(...) kernel { ... rocdl.mfma.f32.32x32x8f16 ... }
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "The AMD architecture (gfx90a, gfx942, gfx950)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::ROCDL::ROCDLDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def TileFinalizeKernelParams : Pass<"tile-finalize-kernel-params",
                                    "::mlir::gpu::GPUModuleOp"> {
  let summary = "Marks the tensor-map parameters of lowered kernels";
  let description = [{
    Runs after `convert-gpu-to-nvvm`. On every `llvm.func` with
    `tile.tensormap_args = n` (set by `convert-tile-to-nvvm`), the first `n`
    parameters become 128-byte by-value `__grid_constant__` parameters
    (`llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64`,
    `nvvm.grid_constant`), which is how TMA tensor maps are passed (the
    GPU-to-NVVM conversion does not carry these attributes over).
  }];
}

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

def ConvertTileToNVVM : Pass<"convert-tile-to-nvvm", "ModuleOp"> {
  let summary = "Lower tile programs to GPU kernels for NVIDIA GPUs";
  let description = [{
    Outlines every `tile.kernel` into a `gpu.func` kernel inside a
    `gpu.module` (with an `#nvvm.target` for `chip`), replaces it in the host
    function by a `gpu.launch_func` (grid, block, dynamic shared memory, and
    the function's arguments as kernel arguments), and lowers every tile op to
    per-thread code, following the layouts and swizzles chosen by
    `tile-layout-inference`:

    - shared buffers are views into dynamic shared memory at planned
      offsets, addressed with their XOR swizzle; fragments are per-thread
      register arrays (`memref.alloca` with constant indices only);
    - `tile.parallel` runs one instance of its body per register of its
      layout, with the logical index computed from the thread id;
    - copies between memories are cooperative, coalesced and vectorized to
      16 bytes where alignment allows, bounds-checked on global memory;
      asynchronous ones become `cp.async` with zero-fill for out-of-range
      elements; copies between fragments and memory follow the fragment
      layout; other combinations go through shared memory;
    - `tile.gemm` with a `wgmma` grid becomes `wgmma.mma_async` on shared
      memory descriptors (sm_90a); with a `warp_partition`, `ldmatrix` +
      `mma.sync` (f16/bf16 m16n8k16, tf32 m16n8k8, int8 m16n8k32); other
      gemms a loop of fused multiply-adds per accumulator register;
    - `tile.warp_specialize` adds its producer threads to the block and
      branches on the thread id (with `setmaxnreg`); barriers inside a role
      are named barriers of that role; `tile.alloc_barrier` becomes mbarriers
      initialized by thread 0; copies `via` a barrier become TMA loads (one
      per panel of the destination) from tensor maps the kernel takes as its
      first arguments (listed in `tile.tensormaps` on the launch, made by the
      runtime);
    - reductions combine each thread's registers, then lanes with
      `gpu.shuffle xor`, then warps through shared memory; `tile.print`
      becomes `gpu.printf` from one thread; `tile.use_swizzle` remaps block
      indices in panels;
    - in the consumer of a `tile.warp_specialize`, a copy of a whole 2-d
      fragment to a kernel argument (the epilogue) goes through a dedicated
      128-byte-swizzled shared staging buffer and TMA stores, one per
      panel, issued by one thread and left in flight: the next epilogue
      waits for them to have read the buffer (`tma-store`, when the buffer
      fits in shared memory).

    ```mlir
    // Before
    func.func @f(%A: memref<?xf32>, %n: index) {
      tile.kernel blocks(%bx) in (%n) threads(128) { ... }
    }
    // After
    gpu.module @f_kernel [#nvvm.target<chip = "sm_80">] {
      gpu.func @f_kernel(%A: memref<?xf32>, %n: index) kernel { ... }
    }
    func.func @f(%A: memref<?xf32>, %n: index) {
      gpu.launch_func @f_kernel::@f_kernel blocks in (%n, %c1, %c1)
          threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c0
          args(%A : memref<?xf32>, %n : index)
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "The NVIDIA architecture (sm_80, sm_90a, ...)">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX features of the target">,
    Option<"tmaStore", "tma-store", "bool", /*default=*/"true",
           "Warp-specialized kernels: write whole accumulator tiles to "
           "global memory through shared memory and TMA stores when the "
           "staging buffer fits">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // TILE_CONVERSION_PASSES_TD
