// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

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
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
#map2 = affine_map<(d0) -> (d0 * 64)>
#map3 = affine_map<(d0) -> (d0 * 256)>
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(256) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x64x256xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<4xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(16) : memref<4xi64, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<128x256xf32, #tile.scope<fragment>>
    tile.use_swizzle 8
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c4 : index
        %round = arith.divui %k, %c4 : index
        %parity = arith.remui %round, %c2 : index
        %phase = arith.xori %parity, %c1 : index
        tile.barrier_wait %empty[%slot], %phase : memref<4xi64, #tile.scope<shared>>
        tile.barrier_arrive %full[%slot] expect_tx(49152) : memref<4xi64, #tile.scope<shared>>
        %m0 = affine.apply #map1(%by)
        %kk = affine.apply #map2(%k)
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<4x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %A[%m0, %kk] [128, 64] to %a_slot[%c0, %c0] [128, 64] via %full[%slot] : memref<4096x4096xf16> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<4xi64, #tile.scope<shared>>
        %n0 = affine.apply #map3(%bx)
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf16, #tile.scope<shared>> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %B[%kk, %n0] [64, 256] to %b_slot[%c0, %c0] [64, 256] via %full[%slot] {multicast = 2 : i64} : memref<4096x4096xf16> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>, memref<4xi64, #tile.scope<shared>>
      }
    } consumer {
      tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
      %m0 = affine.apply #map1(%by)
      %n0 = affine.apply #map3(%bx)
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c4 : index
        %round = arith.divui %k, %c4 : index
        %phase = arith.remui %round, %c2 : index
        tile.barrier_wait %full[%slot], %phase : memref<4xi64, #tile.scope<shared>>
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<4x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf16, #tile.scope<shared>> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %a_slot, %b_slot, %c {async, wgmma = array<i64: 2, 1>} : memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
        tile.gemm_wait 1
        %not_first = arith.cmpi ugt, %k, %c0 : index
        scf.if %not_first {
          %prev_plus = arith.addi %slot, %c3 : index
          %prev = arith.remui %prev_plus, %c4 : index
          tile.barrier_arrive %empty[%prev] {cluster} : memref<4xi64, #tile.scope<shared>>
        }
      }
      tile.gemm_wait 0
      tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
    } {cluster = array<i64: 1, 2, 1>}
  }
  return
}
