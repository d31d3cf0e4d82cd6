// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s
// RUN: not tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80})' 2>&1 | FileCheck %s --check-prefix=SM80

// The program's clusters (T.ClusterKernel): the cluster shape on the
// kernel, the cluster barrier's steps, the block's rank, and an arrival on
// the barrier of the cluster's block 0 (mapa into its shared memory, a
// release at cluster scope). sm_80 has no clusters.
// CHECK-LABEL: gpu.func @clusters_kernel
// CHECK-SAME: nvvm.cluster_dim = array<i32: 4, 1, 1>
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK: nvvm.cluster.wait {aligned}
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank
// CHECK: nvvm.mapa
// CHECK: nvvm.mbarrier.arrive {{.*}}scope = #nvvm.mem_scope<cluster>
// SM80: error: 'tile.kernel' op runs in thread block clusters (cluster_dims), which CUDA target sm_80 does not have (NVIDIA sm_90 and newer)
func.func @clusters(%out: memref<32xi32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  tile.kernel blocks(%bx) in (%c32) threads(128) attributes {tile.cluster = array<i64: 4, 1, 1>} {
    %bars = tile.alloc_barrier arrivals(512) : memref<1xi64, #tile.scope<shared>>
    tile.cluster_barrier arrive
    tile.cluster_barrier wait
    %r = tile.cluster_rank : i32
    tile.barrier_arrive_rank %bars[%c0], %zero : memref<1xi64, #tile.scope<shared>>
    memref.store %r, %out[%bx] : memref<32xi32>
  }
  return
}
