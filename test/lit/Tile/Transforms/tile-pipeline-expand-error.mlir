// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-pipeline-expand{copies-first=true reuse-slots=true}))' -verify-diagnostics

// reuse-slots puts a step's copy after the consumers that read its slot;
// copies-first puts it before them.
func.func @reuse_and_copies_first(%A: memref<?x64xf16>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{reuse-slots and copies-first exclude each other}}
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 2 order = [0, 1] stage = [0, 1] {
      tile.copy %A[%i, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
      tile.copy %as[%c0, %c0] [16, 64] to %acc[%c0, %c0] [16, 64] : memref<16x64xf16, #tile.scope<shared>> to memref<16x64xf32, #tile.scope<fragment>>
    }
  }
  return
}
