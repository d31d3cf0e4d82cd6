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
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // TILE_CONVERSION_PASSES_TD
