//===- TileDialect.td - tile dialect definition ------------*- tablegen -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_DIALECT_TD
#define TILE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::mlir::tile";
  let summary = "Tile programs: where data lives and which tile operation runs on it";
  let description = [{
    The `tile` dialect models what a kernel engineer says about the hardware
    when writing a tile program: where a buffer lives (global memory, shared
    memory, a register fragment distributed over the threads of a block, a
    per-thread array or scalar), which tile operation runs on it (copy, fill,
    gemm, reduce, cumsum, atomic add, elementwise `parallel` loops) and how a
    loop is software-pipelined. It says *what*, not *how*: thread mapping,
    fragment layouts, shared-memory swizzles, asynchronous copies and
    tensor-core instructions are decided by later passes, which write their
    decisions back as attributes (`layout`, `swizzle`, `stage`) that tests can
    check before any lowering happens.

    Buffers are memrefs whose memory space says their scope: no memory space
    is global memory, `#tile.scope<shared>` is (dynamic) shared memory,
    `#tile.scope<fragment>` a register tile of the whole block,
    `#tile.scope<local>` a per-thread array and `#tile.scope<var>` a
    per-thread scalar.

    ```mlir
    func.func @matmul(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>,
                      %C: memref<1024x1024xf16>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      tile.kernel blocks(%bx, %by) in (%c8, %c8) threads(128) {
        %as = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
        %bs = tile.alloc_shared : memref<32x128xf16, #tile.scope<shared>>
        %acc = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
        %zero = arith.constant 0.0 : f32
        tile.fill %acc, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
        %row = arith.muli %by, %c128 : index
        %col = arith.muli %bx, %c128 : index
        tile.pipelined %k = %c0 to %c32 step %c1 num_stages = 3 {
          %kk = arith.muli %k, %c32 : index
          tile.copy %A[%row, %kk] [128, 32] to %as[%c0, %c0] [128, 32]
              : memref<1024x1024xf16> to memref<128x32xf16, #tile.scope<shared>>
          tile.copy %B[%kk, %col] [32, 128] to %bs[%c0, %c0] [32, 128]
              : memref<1024x1024xf16> to memref<32x128xf16, #tile.scope<shared>>
          tile.gemm %as, %bs, %acc : memref<128x32xf16, #tile.scope<shared>>,
              memref<32x128xf16, #tile.scope<shared>>
              -> memref<128x128xf32, #tile.scope<fragment>>
        }
        tile.copy %acc[%c0, %c0] [128, 128] to %C[%row, %col] [128, 128]
            : memref<128x128xf32, #tile.scope<fragment>> to memref<1024x1024xf16>
      }
      return
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  let hasCanonicalizer = 0;
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // TILE_DIALECT_TD
