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
    An integer division by a run-time divisor is preceded by an assertion
    that the divisor is not zero, and a signed one divides the smallest
    value by 1 instead of -1 (the quotient wraps to itself): the host's
    division instruction traps on both, which would end the process.

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
    the LDS budget is the chip's (chip table: 64 KB; 160 KB on gfx950); a
    chip missing from the table is refused. NVIDIA-only constructs (warp
    specialization, mbarriers, device printf) are errors.

    ```mlir
    gpu.module @f_kernel [#rocdl.target<chip = "gfx942">] {
      gpu.func @f_kernel(...) kernel { ... rocdl.mfma.f32.32x32x8f16 ... }
    }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"gfx942\"",
           "The AMD architecture, a chip of the chip table (gfx942, ...)">
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

def TileSoftwareMath : Pass<"tile-software-math"> {
  let summary = "float64 math and pow in software, as GPU kernels compute them";
  let description = [{
    Rewrites float64 `math.exp`, `exp2`, `log`, `log2`, `log10`, `sin`,
    `cos`, `tanh` and `math.powf` of every float type into adds, multiplies
    and fmas, the way the GPU lowerings compute them (GPUs link no device
    math library; `lib/Conversion/TileToGPU/MathF64.cpp`). The GPU lowerings
    apply the same patterns themselves; this pass applies them anywhere, so
    that the CPU can run and check them.

    ```mlir
    %y = math.exp %x : f64   // becomes the reduction and series of MathF64.cpp
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def TilePreciseMath : Pass<"tile-precise-math"> {
  let summary = "IEEE-accurate float32 transcendental functions (no fast math)";
  let description = [{
    TileLang's `tl.disable_fast_math` (or `tl.enable_fast_math=False`):
    float32, float16 and bfloat16 `math.exp`, `exp2`, `log`, `log2`,
    `log10`, `sin`, `cos` and `tanh` are computed in float64 (the software
    routines of `tile-software-math`, accurate to a few float64 ulp) and
    rounded to their type once, instead of on the special-function units
    (about 2^-22 relative error, subnormal results flushed); `math.rsqrt`
    becomes `1 / sqrt(x)` in float64 (IEEE-rounded), rounded once. Correctly rounded in
    practice, and several times slower than the approximations.

    ```mlir
    %y = math.exp2 %x : f32
    // becomes
    %w = arith.extf %x : f32 to f64
    %e = math.exp2 %w : f64
    %y = arith.truncf %e : f64 to f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
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

    The dynamic shared memory (the zero-size `__dynamic_shmem__*` global
    that `convert-gpu-to-nvvm` leaves with internal linkage, which PTX
    declares as one byte of static shared memory) becomes an external
    declaration, `.extern .shared ... []` as nvcc writes it: a kernel may
    then ask for all of the shared memory a block can have.
  }];
}

def ConvertTileToNVVM : Pass<"convert-tile-to-nvvm", "ModuleOp"> {
  let summary = "Lower tile programs to GPU kernels for NVIDIA GPUs";
  let description = [{
    Outlines every `tile.kernel` into a `gpu.func` kernel inside a
    `gpu.module` (with an `#nvvm.target` for `chip`, which must be a chip
    of the chip table: its shared memory and compute capability are read
    there), replaces it in the host function by a `gpu.launch_func` (grid,
    block, dynamic shared memory, and the function's arguments as kernel
    arguments), and lowers every tile op to per-thread code, following the
    layouts and swizzles chosen by `tile-layout-inference`:

    - shared buffers are views into dynamic shared memory at planned
      offsets, addressed with their XOR swizzle: one after the other, or,
      only when that exceeds the chip, with buffers whose lifetimes do not
      overlap sharing bytes (a drain of asynchronous work and a barrier
      where bytes change hands); fragments are per-thread register arrays
      (`memref.alloca` with constant indices only);
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
           "The NVIDIA architecture, a chip of the chip table (sm_80, "
           "sm_90a, ...)">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX features of the target">,
    Option<"tmaStore", "tma-store", "bool", /*default=*/"true",
           "Warp-specialized kernels: write whole accumulator tiles to "
           "global memory through shared memory and TMA stores when the "
           "staging buffer fits">,
    Option<"loopThreadIndex", "loop-thread-index", "bool", /*default=*/"false",
           "Loop bodies read the thread index through an asm copy that LLVM "
           "cannot hoist, so that the thread-dependent addresses derived "
           "from it are recomputed in the loop instead of held in "
           "registers across it (fewer registers, more instructions)">,
    Option<"producerRegisters", "producer-registers", "int64_t",
           /*default=*/"24",
           "Warp-specialized kernels: the registers a thread of the TMA "
           "producer keeps (setmaxnreg.dec; 24 to 256, a multiple of 8); "
           "the consumers get what it releases, up to 240">,
    Option<"scratchSlots", "scratch-slots", "int64_t", /*default=*/"2",
           "Successive ops that stage through shared scratch (reductions "
           "across warps, fragments converted or staged for a gemm) take "
           "turns over this many scratch regions, where shared memory "
           "allows it without fewer blocks a multiprocessor: the barrier "
           "that protected one region from the next op's writes then "
           "orders nothing, and tile-merge-barriers erases it (1 to 4)">
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
