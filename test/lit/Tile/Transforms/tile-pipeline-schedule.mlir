// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-schedule))' | FileCheck %s

// Copies from global to shared memory are issued num_stages - 1 iterations
// ahead: stage 0; the gemm consumes them in stage num_stages - 1. Index
// arithmetic is not a statement.
// CHECK-LABEL: func.func @default_schedule
// CHECK: tile.pipelined %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} num_stages = 3 order = [0, 1, 2] stage = [0, 0, 2] {
func.func @default_schedule(%A: memref<?x64xf16>, %B: memref<64x?xf16>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %bs = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 3 {
      %off = arith.muli %i, %c32 : index
      tile.copy %A[%c0, %off] [64, 32] to %as[%c0, %c0] [64, 32] : memref<?x64xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.copy %B[%off, %c0] [32, 64] to %bs[%c0, %c0] [32, 64] : memref<64x?xf16> to memref<32x64xf16, #tile.scope<shared>>
      tile.gemm %as, %bs, %acc : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A load whose value a copy needs (a paged-cache block index) runs with the
// copy in stage 0. A copy into a shared buffer also used after the loop is
// not prefetched (multi-buffering would break that use).
// CHECK-LABEL: func.func @dependencies
// CHECK: num_stages = 2 order = [0, 1, 2, 3] stage = [0, 0, 1, 1]
func.func @dependencies(%A: memref<?x64xf16>, %table: memref<?xi32>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %keep = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 2 {
      %blk = memref.load %table[%i] : memref<?xi32>
      %row = arith.index_cast %blk : i32 to index
      tile.copy %A[%row, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
      tile.copy %A[%row, %c0] [16, 64] to %keep[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
      tile.copy %as[%c0, %c0] [16, 64] to %acc[%c0, %c0] [16, 64] : memref<16x64xf16, #tile.scope<shared>> to memref<16x64xf32, #tile.scope<fragment>>
    }
    tile.copy %keep[%c0, %c0] [16, 64] to %acc[%c0, %c0] [16, 64] : memref<16x64xf16, #tile.scope<shared>> to memref<16x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A user schedule is kept; an order is added when missing.
// CHECK-LABEL: func.func @user_schedule
// CHECK: num_stages = 2 order = [0, 1] stage = [0, 1]
func.func @user_schedule(%A: memref<?x64xf16>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 2 stage = [0, 1] {
      tile.copy %A[%i, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
      tile.copy %as[%c0, %c0] [16, 64] to %acc[%c0, %c0] [16, 64] : memref<16x64xf16, #tile.scope<shared>> to memref<16x64xf32, #tile.scope<fragment>>
    }
  }
  return
}
