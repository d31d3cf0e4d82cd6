// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=132}),canonicalize,cse)' | FileCheck %s

// 16 x 32 tiles in (1, 2, 1) clusters is 256 cluster tiles: the grid becomes
// 66 clusters of 2 (one row; the kernel is marked persistent over 512
// blocks, so that the launch may use fewer on a smaller device), and both
// regions loop over the cluster tiles %cid, %cid + G, ... (G = grid_dim x /
// 2 clusters at launch) in the order of `use_swizzle 8` (consumed), over the
// 16 x 16 grid of clusters; the y index gets the block's rank back. The
// ring's count runs on across tiles (tile iteration * trip count + k), and
// the consumer frees the tile's last slot after its gemms are done, before
// the epilogue.
// CHECK-LABEL: func.func @gemm
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[C132:.+]] = arith.constant 132 : index
// CHECK: tile.kernel blocks(%[[PID:.+]], %{{.+}}) in (%[[C132]], %c1) threads(256) attributes {tile.persistent = {blocks = 2 : i64, tiles = 512 : i64}}
// CHECK-NOT: tile.use_swizzle
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   %[[CID:.+]] = arith.divui %[[PID]], %c2
// CHECK:   %[[RANK:.+]] = arith.remui %[[PID]], %c2
// CHECK:   %[[G:.+]] = gpu.grid_dim x
// CHECK:   %[[STEP:.+]] = arith.divui %[[G]], %c2
// CHECK:   scf.for %[[T:.+]] = %[[CID]] to %[[C256]] step %[[STEP]] {
// CHECK:     %[[D:.+]] = arith.subi %[[T]], %[[CID]]
// CHECK:     %[[ITER:.+]] = arith.divui %[[D]], %[[STEP]]
// CHECK:     %[[Y2:.+]] = arith.muli %{{.+}}, %c2
// CHECK:     %[[Y:.+]] = arith.addi %[[Y2]], %[[RANK]]
// CHECK:     %[[BASE:.+]] = arith.muli %[[ITER]], %[[N:.+]] : index
// CHECK:     scf.for %[[K:.+]] = %c0 to %[[N]] step %c1 {
// CHECK:       %[[I:.+]] = arith.addi %[[K]], %[[BASE]]
// CHECK:       %[[SLOT:.+]] = arith.remui %[[I]], %c4
// CHECK:       tile.barrier_wait
// CHECK:       tile.barrier_arrive %{{.+}}[%[[SLOT]]] expect_tx(49152)
// CHECK:       affine.apply #{{.+}}(%[[Y]])
// CHECK:       tile.copy
// CHECK:       tile.copy {{.+}} {multicast = 2 : i64}
// CHECK: } consumer {
// CHECK:   scf.for %{{.+}} = %{{.+}} to %[[C256]] step %{{.+}} {
// CHECK:     tile.fill
// CHECK:     scf.for
// CHECK:       tile.gemm {{.+}} {async}
// CHECK:       tile.gemm_wait 1
// CHECK:     tile.gemm_wait 0
// CHECK:     scf.if
// CHECK:       tile.barrier_arrive {{.+}} {cluster}
// CHECK:     tile.copy
// CHECK: } {cluster = array<i64: 2, 1, 1>}
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

// -----

// No more tiles than blocks (8 x 16 = 128 <= 132), or loop bounds that
// depend on the block (a causal-style loop): not persistent.
// CHECK-LABEL: func.func @few_tiles
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}) in (%c8, %c16)
// CHECK-NOT: gpu.grid_dim
// CHECK-LABEL: func.func @varying_trips
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}) in (%c16, %c32)
func.func @few_tiles(%A: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c8, %c16) threads(128) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %A[%kk, %n0] [64, 128] to %b[%c0, %c0] [64, 128] : memref<4096x4096xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m0, %n0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}

func.func @varying_trips(%A: memref<4096x4096xf16>, %C: memref<4096x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(128) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    %trips = arith.addi %by, %c1 : index
    tile.pipelined %k = %c0 to %trips step %c1 num_stages = 3 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %A[%kk, %n0] [64, 128] to %b[%c0, %c0] [64, 128] : memref<4096x4096xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m0, %n0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}
