// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-pipeline-schedule))' -verify-diagnostics

// A statement cannot run in an earlier stage than one whose result it uses.
func.func @bad_user_schedule(%A: memref<?x64xf16>, %table: memref<?xi32>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 2 stage = [1, 0] {
      %blk = memref.load %table[%i] : memref<?xi32>
      %row = arith.index_cast %blk : i32 to index
      // expected-error @+1 {{runs in pipeline stage 0 but uses a result of statement 0, which runs in the later stage 1}}
      tile.copy %A[%row, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    }
  }
  return
}
