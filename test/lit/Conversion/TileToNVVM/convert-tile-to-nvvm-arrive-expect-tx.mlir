// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s
// RUN: not tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80})' 2>&1 | FileCheck %s --check-prefix=SM80

// A per-thread arrival that announces bytes (T.mbarrier_arrive_expect_tx):
// every executing thread runs mbarrier.arrive.expect_tx with the count, no
// leader election around it; without per_thread one thread of the role
// does (the guard compares the thread index). sm_80 has no expect_tx.
// CHECK-LABEL: gpu.func @arrive_expect_tx_kernel
// CHECK-DAG: %[[TX16:.+]] = arith.constant 16 : i32
// CHECK-DAG: %[[TX32:.+]] = arith.constant 32 : i32
// CHECK: gpu.barrier
// CHECK-NOT: scf.if
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[P:.+]], %[[TX16]]
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %[[P]], %[[TX32]]
// SM80: error: 'tile.barrier_arrive' op announces transaction bytes, which needs sm_90a
func.func @arrive_expect_tx(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %b = tile.alloc_barrier arrivals(129) : memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive %b[%c0] expect_tx(16) per_thread : memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive %b[%c0] expect_tx(32) : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %b[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}
