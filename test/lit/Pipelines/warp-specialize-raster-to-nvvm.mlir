// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-warp-specialize,tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// End to end on sm_90a: warp specialization puts the kernel into (1, 2, 1)
// clusters, then layout inference, barrier insertion and the lowering
// rasterize the blocks over the cluster grid. The lowering alone is tested
// on the warp-specialized kernel in
// Conversion/TileToNVVM/convert-tile-to-nvvm-raster.mlir.

// Block rasterization (use_swizzle 8) in a kernel that warp specialization
// puts into (1, 2, 1) clusters: the panels are walked over the cluster grid
// (grid y divided by 2), and each block keeps its rank in the cluster
// (by % 2), so that both blocks of a cluster get the same x index and read
// the same multicast B panels.
// CHECK-LABEL: gpu.func @gemm_kernel
// CHECK-SAME: nvvm.cluster_dim = array<i32: 1, 2, 1>
// CHECK-DAG: %[[BX:.+]] = gpu.block_id  x
// CHECK-DAG: %[[BY:.+]] = gpu.block_id  y
// CHECK-DAG: %[[GX:.+]] = gpu.grid_dim  x
// CHECK-DAG: %[[GY:.+]] = gpu.grid_dim  y
// CHECK-DAG: %[[RANK:.+]] = arith.remui %[[BY]], %c2
// CHECK-DAG: %[[CY:.+]] = arith.divui %[[BY]], %c2
// CHECK-DAG: %[[CGY:.+]] = arith.divui %[[GY]], %c2
// CHECK-DAG: %[[CYX:.+]] = arith.muli %[[CY]], %[[GX]]
// CHECK-DAG: %[[LIN:.+]] = arith.addi %[[BX]], %[[CYX]]
// CHECK: %[[PY:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: %[[Y2:.+]] = arith.muli %[[PY]], %c2
// CHECK: %[[NEWY:.+]] = arith.addi %[[Y2]], %[[RANK]]
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.+}} multicast_mask
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(256) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x256xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x256xf32, #tile.scope<fragment>>
    tile.use_swizzle 8
    tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 256)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 4 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n0] [64, 256] to %b[%c0, %c0] [64, 256] : memref<4096x4096xf16> to memref<64x256xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x256xf16, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}
