// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-expand),canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-expand{copies-first=true}),canonicalize,cse)' | FileCheck %s --check-prefix=EARLY
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-expand{reuse-slots=true}),canonicalize,cse)' | FileCheck %s --check-prefix=REUSE
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-expand{group-per-copy=true}),canonicalize,cse)' | FileCheck %s --check-prefix=GROUP
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline-expand{reuse-slots=true group-per-copy=true}),canonicalize,cse)' | FileCheck %s --check-prefix=GREUSE

// Each loop carries the schedule (`stage`, `order`) that
// tile-pipeline-schedule writes for it; Pipelines/tile-pipeline-schedule-expand.mlir
// runs both passes from the unscheduled loops.

// Three stages: both shared buffers get three slots; the first two steps
// (prologue) issue the copies of iterations 0 and 1, guarded by the dynamic
// trip count; the steady state waits for the group of iteration t - 2 (one
// younger group may stay in flight), synchronizes, runs the gemm on slot
// (t - 2) mod 3 and issues the copies of iteration t into slot t mod 3; the
// epilogue runs the last two gemms and drains the copies. With copies-first
// the copies of iteration t (into the slot the previous step's gemm read)
// come before the gemm, which then runs with two groups in flight.
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
// EARLY-LABEL: func.func @three_stages
// EARLY: scf.for %[[T:.+]] = %c2 to %{{.+}} step %c1 {
// EARLY:   tile.async_wait 1
// EARLY-NEXT: tile.barrier
// EARLY:   %[[NEXT:.+]] = arith.remui %[[T]], %c3
// EARLY:   tile.copy %{{.+}} to %{{.+}}[%[[NEXT]], %c0, %c0] [1, 64, 32] {async, tile.pipeline_ordered}
// EARLY:   tile.copy %{{.+}} to %{{.+}}[%[[NEXT]], %c0, %c0] [1, 32, 64] {async, tile.pipeline_ordered}
// EARLY:   tile.async_commit
// EARLY:   tile.gemm
// EARLY: }
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
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 3 order = [0, 1, 2] stage = [0, 0, 2] {
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
    tile.pipelined %i = %c0 to %c4 step %c1 num_stages = 2 order = [0, 1] stage = [0, 1] {
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
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 1 order = [0] stage = [0] {
      tile.copy %A[%i, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<?x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    }
  }
  return
}

// -----

// Two stages of work on two buffers, as in flash decoding: the first gemm
// reads %ks, the second %vs. With reuse-slots (3 stages, 2 slots) the
// steady state's copy of iteration t goes into the slot of iteration t - 2,
// which this step's gemms read: the copy into %ks follows the first gemm,
// the copy into %vs the second, each behind a barrier.
// Without it both buffers get three slots.
// CHECK-LABEL: func.func @reuse_two_buffers
// CHECK-COUNT-2: tile.alloc_shared : memref<3x32x64xf16, #tile.scope<shared>>
// REUSE-LABEL: func.func @reuse_two_buffers
// REUSE-DAG: %[[K2:.+]] = tile.alloc_shared : memref<2x32x64xf16, #tile.scope<shared>>
// REUSE-DAG: %[[V2:.+]] = tile.alloc_shared : memref<2x32x64xf16, #tile.scope<shared>>
// REUSE: scf.for %[[T:.+]] = %c2 to %{{.+}} step %c1 {
// REUSE:   tile.async_wait 1
// REUSE-NEXT: tile.barrier
// REUSE:   %[[SLOT:.+]] = arith.remui %{{.+}}, %c2
// REUSE:   %[[KV:.+]] = memref.subview %[[K2]][%[[SLOT]], 0, 0]
// REUSE:   tile.gemm %{{.+}}, %[[KV]], %{{.+}} {transpose_b}
// REUSE-NEXT: tile.barrier
// REUSE:   %[[NEXT:.+]] = arith.remui %[[T]], %c2
// REUSE:   tile.copy %{{.+}} to %[[K2]][%[[NEXT]], %c0, %c0] [1, 32, 64] {async, tile.pipeline_ordered}
// REUSE-NOT: {async}
// REUSE:   tile.gemm %{{.+}}, %{{.+}}, %{{.+}} :
// REUSE-NEXT: tile.barrier
// REUSE:   tile.copy %{{.+}} to %[[V2]][%{{.+}}, %c0, %c0] [1, 32, 64] {async, tile.pipeline_ordered}
// REUSE-NEXT: tile.async_commit
// REUSE: }
// group-per-copy: the K and V copies commit a group each (two a step), and
// each gemm waits for its own buffer only: the score gemm for iteration
// t - 2's K (3 groups may still be pending: its V and step t - 1's two),
// the P V gemm for its V (2 pending). The copies into the slots the
// previous step read follow the step's first barrier.
// GROUP-LABEL: func.func @reuse_two_buffers
// GROUP: scf.for %{{.+}} = %c2 to %{{.+}} step %c1 {
// GROUP-NOT: tile.copy
// GROUP: tile.async_wait 3
// GROUP-NEXT: tile.barrier
// GROUP-NOT: tile.barrier
// GROUP:   tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {transpose_b}
// GROUP-NOT: tile.barrier
// GROUP:   tile.async_wait 2
// GROUP-NEXT: tile.barrier
// GROUP:   tile.gemm %{{.+}}, %{{.+}}, %{{.+}} :
// GROUP-NOT: tile.barrier
// GROUP:   tile.copy {{.+}} {async, tile.pipeline_ordered}
// GROUP-NEXT: tile.async_commit
// GROUP-NOT: tile.barrier
// GROUP:   tile.copy {{.+}} {async, tile.pipeline_ordered}
// GROUP-NEXT: tile.async_commit
// GROUP-NEXT: }
// The epilogue's steps commit two empty groups each, so that every wait
// counts two groups a step.
// GROUP: tile.async_wait 3
// GROUP: tile.async_wait 2
// GROUP: tile.async_commit
// GROUP-NEXT: tile.async_commit
// GROUP: tile.async_wait 0
// GROUP-NEXT: }
// GROUP-NEXT: return
// With reuse-slots as well, the K copy follows the score gemm behind a
// barrier and commits before the P V gemm's wait, which then lets 3 groups
// pend (V of t - 2 is older than K of t, K and V of t - 1).
// GREUSE-LABEL: func.func @reuse_two_buffers
// GREUSE: scf.for %{{.+}} = %c2 to %{{.+}} step %c1 {
// GREUSE-NOT: tile.copy
// GREUSE: tile.async_wait 3
// GREUSE-NEXT: tile.barrier
// GREUSE:   tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {transpose_b}
// GREUSE-NEXT: tile.barrier
// GREUSE:   tile.copy {{.+}} {async, tile.pipeline_ordered}
// GREUSE-NEXT: tile.async_commit
// GREUSE:   tile.async_wait 3
// GREUSE-NEXT: tile.barrier
// GREUSE:   tile.gemm %{{.+}}, %{{.+}}, %{{.+}} :
// GREUSE-NEXT: tile.barrier
// GREUSE:   tile.copy {{.+}} {async, tile.pipeline_ordered}
// GREUSE-NEXT: tile.async_commit
// GREUSE-NEXT: }
func.func @reuse_two_buffers(%Q: memref<16x64xf16>, %K: memref<?x64xf16>, %V: memref<?x64xf16>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %qs = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %ks = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %vs = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<16x32xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<16x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    tile.copy %Q[%c0, %c0] [16, 64] to %qs[%c0, %c0] [16, 64] : memref<16x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    tile.pipelined %i = %c0 to %k step %c1 num_stages = 3 order = [0, 1, 2, 3, 4] stage = [0, 0, 2, 2, 2] {
      %off = arith.muli %i, %c32 : index
      tile.copy %K[%off, %c0] [32, 64] to %ks[%c0, %c0] [32, 64] : memref<?x64xf16> to memref<32x64xf16, #tile.scope<shared>>
      tile.copy %V[%off, %c0] [32, 64] to %vs[%c0, %c0] [32, 64] : memref<?x64xf16> to memref<32x64xf16, #tile.scope<shared>>
      tile.gemm %qs, %ks, %s {transpose_b} : memref<16x64xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<16x32xf32, #tile.scope<fragment>>
      tile.copy %s[%c0, %c0] [16, 32] to %p[%c0, %c0] [16, 32] : memref<16x32xf32, #tile.scope<fragment>> to memref<16x32xf16, #tile.scope<fragment>>
      tile.gemm %p, %vs, %o : memref<16x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<16x64xf32, #tile.scope<fragment>>
    }
  }
  return
}
