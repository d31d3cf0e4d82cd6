// RUN: tile-opt %s --split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s
// RUN: not tile-opt %s --split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80})' 2>&1 | FileCheck %s --check-prefix=SM80

// T.copy_cluster(s[0:4, 0:32], d[0:4, 0:32], dst_block=1, remote_barrier=
// bar[0]) of 4x64 float32 buffers: after the threads' proxy fence and
// barrier, one thread maps the barrier into block 1, arrives there once
// announcing the 4 rows' 512 bytes, and issues one bulk copy per 128-byte
// row into block 1, each completing on that barrier. The barrier keeps the
// program's count of one arrival; block 1's wait acquires at cluster scope.
// CHECK-LABEL: gpu.func @rows_kernel
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[ALL:.+]] = arith.constant 512 : i32
// CHECK-DAG: %[[ROW:.+]] = arith.constant 128 : i32
// CHECK: nvvm.mbarrier.init %{{.+}}, %[[ONE]]
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: %[[RB:.+]] = nvvm.mapa %{{.+}}, %[[ONE]] : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[RB]], %[[ALL]] {scope = #nvvm.mem_scope<cluster>}
// CHECK-COUNT-4: llvm.inline_asm has_side_effects {{.*}}"cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];", "r,r,r,r,~{memory}" %{{.+}}, %{{.+}}, %[[ROW]], %{{.+}}
// CHECK-NOT: cp.async.bulk.shared::cluster
// CHECK: nvvm.mbarrier.try_wait %{{.+}} {scope = #nvvm.mem_scope<cluster>}
// SM80: error: 'tile.cluster_copy' op (T.copy_cluster) copies between the blocks of a thread block cluster, which CUDA target sm_80 does not have (NVIDIA sm_90 and newer)
func.func @rows(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %s = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    %bar = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
    tile.cluster_copy %s[%c0, %c0] [4, 32] to %d[%c0, %c0] [4, 32] rank(%c1) via %bar[%c0]
        : memref<4x64xf32, #tile.scope<shared>> to memref<4x64xf32, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

// 31-column rows (124 bytes) cannot go as bulk copies: the threads store
// the elements into block 1 (mapa, a store through the cluster pointer),
// synchronize, and one thread arrives on block 1's barrier at cluster
// scope. Without a barrier, only the stores.
// CHECK-LABEL: gpu.func @elements_kernel
// CHECK-NOT: cp.async.bulk.shared::cluster
// CHECK: gpu.barrier
// CHECK: nvvm.mapa %{{.+}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK: llvm.store %{{.+}}, %{{.+}} {alignment = 4 : i64} : f32, !llvm.ptr<7>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: nvvm.mapa
// CHECK: nvvm.mbarrier.arrive %{{.+}} {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: llvm.store %{{.+}}, %{{.+}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<7>
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: gpu.return
func.func @elements(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %s = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    %bar = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
    tile.cluster_copy %s[%c0, %c0] [4, 31] to %d[%c0, %c0] [4, 31] rank(%c1) via %bar[%c0]
        : memref<4x64xf32, #tile.scope<shared>> to memref<4x64xf32, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    tile.cluster_copy %s[%c0, %c0] [4, 64] to %d[%c0, %c0] [4, 64] rank(%c1)
        : memref<4x64xf32, #tile.scope<shared>> to memref<4x64xf32, #tile.scope<shared>>
  }
  return
}

// -----

// A TMA load multicast to the blocks of mask 0b0110 (T.copy_cluster(...,
// cluster_mask=6, eviction_policy="evict_last")): the issuing thread
// announces the box's bytes; rank 1 (the lowest of the mask) multicasts
// with the mask, ranks 0 and 3 (outside it) load their own box, rank 2
// receives. Both loads carry an evict_last cache policy.
// CHECK-LABEL: gpu.func @multicast_kernel
// CHECK-DAG: %[[MASK:.+]] = arith.constant 6 : i16
// CHECK: %[[RANK:.+]] = nvvm.read.ptx.sreg.cluster.ctarank
// CHECK: nvvm.mbarrier.expect_tx %{{.+}}, %{{.+}} : !llvm.ptr<3>, i32
// CHECK: %[[ISSUER:.+]] = arith.cmpi eq, %[[RANK]], %{{.+}} : i32
// CHECK: scf.if %[[ISSUER]] {
// CHECK: createpolicy.fractional.L2::evict_last.b64 $0, 1.0;
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.+}} multicast_mask = %[[MASK]] l2_cache_hint = %{{.+}} :
// CHECK: } else {
// CHECK: arith.shrui %{{.+}}, %[[RANK]]
// CHECK: scf.if
// CHECK: createpolicy.fractional.L2::evict_last.b64 $0, 1.0;
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.+}} l2_cache_hint = %{{.+}} :
// CHECK-NOT: multicast_mask
// CHECK: gpu.return
// SM80: error: 'tile.copy' op (T.copy_cluster) copies between the blocks of a thread block cluster, which CUDA target sm_80 does not have (NVIDIA sm_90 and newer)
func.func @multicast(%A: memref<512x512xf16>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) attributes {tile.cluster = array<i64: 4, 1, 1>} {
    %s = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %bar = tile.alloc_barrier arrivals(4) : memref<1xi64, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [128, 64] to %s[%c0, %c0] [128, 64] via %bar[%c0] {expect_tx, multicast_mask = 6 : i64, eviction = #tile.eviction<evict_last>}
        : memref<512x512xf16> to memref<128x64xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive %bar[%c0] : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}
