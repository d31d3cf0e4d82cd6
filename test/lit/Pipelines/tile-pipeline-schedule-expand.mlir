// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-schedule,tile-pipeline-expand),canonicalize,cse)' | FileCheck %s

// The two phases of software pipelining in a row, from loops without a
// schedule: tile-pipeline-schedule assigns the stages, tile-pipeline-expand
// builds prologue, steady state and epilogue from them. Each phase is
// tested alone in Tile/Transforms/.

// Three stages: both shared buffers get three slots; the first two steps
// (prologue) issue the copies of iterations 0 and 1, guarded by the dynamic
// trip count; the steady state waits for the group of iteration t - 2 (one
// younger group may stay in flight), synchronizes, runs the gemm on slot
// (t - 2) mod 3 and issues the copies of iteration t into slot t mod 3; the
// epilogue runs the last two gemms and drains the copies.
// CHECK-LABEL: func.func @three_stages
// CHECK-DAG: %[[A3:.+]] = tile.alloc_shared : memref<3x64x32xf16, #tile.scope<shared>>
// CHECK-DAG: %[[B3:.+]] = tile.alloc_shared : memref<3x32x64xf16, #tile.scope<shared>>
// CHECK-NOT: tile.alloc_shared : memref<64x32xf16
// CHECK: %[[N:.+]] = arith.maxsi
// Prologue, step 0: no consumer yet, so no wait.
// CHECK: %[[RUN0:.+]] = arith.cmpi sgt, %[[N]], %c0
// CHECK-NEXT: scf.if %[[RUN0]] {
// CHECK-NEXT:   tile.copy %{{.+}}[%c0, %c0] [64, 32] to %[[A3]][%c0, %c0, %c0] [1, 64, 32] {async, tile.pipeline_ordered}
// CHECK: tile.async_commit
// Prologue, step 1.
// CHECK: scf.if
// CHECK:   tile.copy %{{.+}} to %[[A3]][%c1, %c0, %c0] [1, 64, 32] {async, tile.pipeline_ordered}
// CHECK: tile.async_commit
// Steady state.
// CHECK: scf.for %[[T:.+]] = %c2 to %[[N]] step %c1 {
// CHECK:   tile.async_wait 1
// CHECK-NEXT: tile.barrier
// CHECK:   %[[SLOT:.+]] = arith.remui %{{.+}}, %c3
// CHECK:   %[[AV:.+]] = memref.subview %[[A3]][%[[SLOT]], 0, 0] [1, 64, 32] [1, 1, 1]
// CHECK:   tile.gemm %[[AV]], %{{.+}}, %{{.+}} :
// CHECK:   %[[NEXT:.+]] = arith.remui %[[T]], %c3
// CHECK:   tile.copy %{{.+}} to %[[A3]][%[[NEXT]], %c0, %c0] [1, 64, 32] {async, tile.pipeline_ordered}
// CHECK:   tile.copy %{{.+}} to %[[B3]][%[[NEXT]], %c0, %c0] [1, 32, 64] {async, tile.pipeline_ordered}
// CHECK:   tile.async_commit
// CHECK: }
// Epilogue: two more gemms, then everything drained.
// CHECK: tile.async_wait 1
// CHECK: tile.gemm
// CHECK: tile.async_wait 1
// CHECK: tile.gemm
// CHECK: tile.async_wait 0
// CHECK-NOT: tile.pipelined
func.func @three_stages(%A: memref<?x64xf16>, %B: memref<64x?xf16>, %k: index) {
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

// With a constant trip count the guards resolve statically; a copy that
// converts element types is prefetched but not asynchronous.
// CHECK-LABEL: func.func @constant_trip_count
// CHECK-NOT: scf.if
// CHECK: tile.copy %{{.+}} to %{{.+}}[%c0, %c0, %c0] [1, 16, 64] : memref<4x16x64xf32> to memref<2x16x64xf16, #tile.scope<shared>>
// CHECK: scf.for %{{.+}} = %c1 to %c4 step %c1
func.func @constant_trip_count(%A: memref<4x16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    tile.pipelined %i = %c0 to %c4 step %c1 num_stages = 2 {
      tile.copy %A[%i, %c0, %c0] [1, 16, 64] to %as[%c0, %c0] [16, 64] : memref<4x16x64xf32> to memref<16x64xf16, #tile.scope<shared>>
      tile.copy %as[%c0, %c0] [16, 64] to %acc[%c0, %c0] [16, 64] : memref<16x64xf16, #tile.scope<shared>> to memref<16x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// One stage: a plain loop.
// CHECK-LABEL: func.func @one_stage
// CHECK: scf.for
// CHECK-NOT: tile.async
// CHECK: tile.copy
// CHECK-NOT: tile.async
func.func @one_stage(%A: memref<?x64xf16>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 1 {
      tile.copy %A[%i, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    }
  }
  return
}
