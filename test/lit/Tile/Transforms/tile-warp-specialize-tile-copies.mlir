// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=0 producer-tile-copies=true}),canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=0}),canonicalize,cse)' | FileCheck %s --check-prefix=OFF

// An attention-like forward launched one block a tile (no walk): the query
// tile copied before the loop. With producer-tile-copies the producer
// issues it, once, on a barrier of one slot (expecting its 16384 bytes)
// before its loop's copies, into the tile's own buffer (no ring); the
// consumers wait for it (phase 0) where the copy was, before the fill.
// CHECK-LABEL: func.func @query_tile
// CHECK: tile.kernel blocks(%[[BQ:.+]], %[[BH:.+]], %[[BB:.+]]) in (%c4, %c32, %c8) threads(256) {
// CHECK-DAG: %[[Q:.+]] = tile.alloc_shared {{.*}}: memref<128x64xf16, #tile.scope<shared>>
// CHECK-DAG: %[[TFULL:.+]] = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
// CHECK: tile.warp_specialize producer(128) {
// CHECK-NEXT:   tile.barrier_arrive %[[TFULL]][%c0] expect_tx(16384)
// CHECK-NEXT:   %[[M0:.+]] = affine.apply #{{.+}}(%[[BQ]])
// CHECK-NEXT:   tile.copy %{{.+}}[%[[BB]], %[[BH]], %[[M0]], %c0] [1, 1, 128, 64] to %[[Q]][%c0, %c0] [128, 64] via %[[TFULL]][%c0]
// CHECK-NEXT:   %[[N:.+]] = arith.addi %[[BQ]], %c1
// CHECK-NEXT:   scf.for
// CHECK:        tile.copy %{{.+}} to %{{.+}} via
// CHECK: } consumer {
// CHECK-NOT: tile.copy %{{.+}} to %[[Q]]
// CHECK:   tile.barrier_wait %[[TFULL]][%c0], %c0
// CHECK-NEXT:   tile.fill
// CHECK:   scf.for
// CHECK:     tile.gemm %[[Q]],
// OFF-LABEL: func.func @query_tile
// OFF-NOT: memref<1xi64
// OFF: } consumer {
// OFF: tile.copy %{{.+}} [1, 1, 128, 64] to %{{.+}}[%c0, %c0] [128, 64] : memref<8x32x512x64xf16>
// OFF-NEXT: tile.fill
func.func @query_tile(%Q: memref<8x32x512x64xf16>, %K: memref<8x32x512x64xf16>, %O: memref<8x32x512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bq, %bh, %bb) in (%c4, %c32, %c8) threads(256) {
    %q = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bq)
    tile.copy %Q[%bb, %bh, %m0, %c0] [1, 1, 128, 64] to %q[%c0, %c0] [128, 64] : memref<8x32x512x64xf16> to memref<128x64xf16, #tile.scope<shared>>
    tile.fill %s, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %trips = arith.addi %bq, %c1 : index
    tile.pipelined %j = %c0 to %trips step %c1 num_stages = 2 {
      %n0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%j)
      tile.copy %K[%bb, %bh, %n0, %c0] [1, 1, 128, 64] to %k[%c0, %c0] [128, 64] : memref<8x32x512x64xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.gemm %q, %k, %s {transpose_b} : memref<128x64xf16, #tile.scope<shared>>, memref<128x64xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %s[%c0, %c0] [128, 128] to %O[%bb, %bh, %m0, %c0] [1, 1, 128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<8x32x512x128xf32>
  }
  return
}

// A buffer copied before the loop and written again in it (the state of a
// recurrence: TileOPs' DeltaNet copies its fragment into the shared tile
// each step) is not a tile of its own: the consumers keep its copy, the
// producer issues none into it. (The pass asserted comparing the position
// of the write in the loop body with the loop.)
// CHECK-LABEL: func.func @state_rewritten_in_loop
// CHECK: tile.warp_specialize producer(128) {
// CHECK-NOT: memref<4x64x64xf16> to
// CHECK: } consumer {
// CHECK: tile.copy %{{.+}} [1, 64, 64] to %[[S:.+]][%c0, %c0] [64, 64] :
// CHECK: scf.for
// CHECK: tile.copy %{{.+}}[%c0, %c0] [64, 64] to %[[S]][%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>>
// OFF-LABEL: func.func @state_rewritten_in_loop
func.func @state_rewritten_in_loop(%H: memref<4x64x64xf16>, %K: memref<4x256x64xf16>, %O: memref<4x256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%b) in (%c4) threads(128) {
    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %H[%b, %c0, %c0] [1, 64, 64] to %s[%c0, %c0] [64, 64] : memref<4x64x64xf16> to memref<64x64xf16, #tile.scope<shared>>
    tile.pipelined %i = %c0 to %c4 step %c1 num_stages = 2 {
      %r = arith.muli %i, %c4 : index
      tile.copy %K[%b, %r, %c0] [1, 64, 64] to %k[%c0, %c0] [64, 64] : memref<4x256x64xf16> to memref<64x64xf16, #tile.scope<shared>>
      tile.gemm %k, %s, %acc {clear_accum} : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
      tile.copy %acc[%c0, %c0] [64, 64] to %s[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf16, #tile.scope<shared>>
      tile.copy %acc[%c0, %c0] [64, 64] to %O[%b, %r, %c0] [1, 64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<4x256x64xf32>
    }
  }
  return
}
