// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=132}),canonicalize,cse)' | FileCheck %s

// 16 x 32 tiles in (1, 2, 1) clusters is 256 cluster tiles: the grid becomes
// 66 clusters of 2 (one row; the kernel is marked persistent over 512
// blocks, so that the launch may use fewer on a smaller device), and both
// regions loop over the cluster tiles %cid, %cid + G, ... (G = grid_dim x /
// 2 clusters at launch) in the order of `use_swizzle 8` (consumed), over the
// 16 x 16 grid of clusters; the y index gets the block's rank back. The
// ring's count runs on across tiles (the tile loop carries the iterations
// of the block's earlier tiles: base + k, then base + trip count), and the
// consumer frees the tile's last slot after its gemms are done, before the
// epilogue.
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
// CHECK:   scf.for %[[T:.+]] = %[[CID]] to %[[C256]] step %[[STEP]] iter_args(%[[BASE:.+]] = %c0) -> (index) {
// CHECK:     %[[Y2:.+]] = arith.muli %{{.+}}, %c2
// CHECK:     %[[Y:.+]] = arith.addi %[[Y2]], %[[RANK]]
// CHECK:     %[[RUNS:.+]] = arith.cmpi sgt, %[[N:.+]], %c0
// CHECK:     %[[TRIPS:.+]] = arith.select %[[RUNS]], %[[N]], %c0
// CHECK:     %[[NEXT:.+]] = arith.addi %[[BASE]], %[[TRIPS]]
// CHECK:     scf.for %[[K:.+]] = %c0 to %[[N]] step %c1 {
// CHECK:       %[[I:.+]] = arith.addi %[[K]], %[[BASE]]
// CHECK:       %[[SLOT:.+]] = arith.remui %[[I]], %c4
// CHECK:       tile.barrier_wait
// CHECK:       tile.barrier_arrive %{{.+}}[%[[SLOT]]] expect_tx(49152)
// CHECK:       affine.apply #{{.+}}(%[[Y]])
// CHECK:       tile.copy
// CHECK:       tile.copy {{.+}} {multicast = 2 : i64}
// CHECK:     }
// CHECK:     scf.yield %[[NEXT]]
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

// No more tiles than blocks (8 x 16 = 128 <= 132): not persistent.
// CHECK-LABEL: func.func @few_tiles
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}) in (%c8, %c16)
// CHECK-NOT: gpu.grid_dim

// Loop bounds that depend on the block (a causal-style loop, trips = y + 1)
// and no copy before the loop to issue early: not persistent (such a walk
// measured slower than the hardware's block order).
// CHECK-LABEL: func.func @varying_trips
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}) in (%c16, %c32)
// CHECK-NOT: gpu.grid_dim

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

// -----

// Three grid dimensions, an attention-like forward: (query blocks, heads,
// batch), the trip count growing with the query block, the query tile
// copied before the loop. Persistent (1024 tiles): the Q tile is a ring of
// two tile slots that the producer fills for tile j (slot j mod 2) before
// the tile's K copies, once the consumers released the slot; the consumers
// wait where the copy was, read the slot, and release it after a proxy
// fence at the tile's end. The walk: rounds in alternating directions
// (pid or G - 1 - pid), groups of 128 (heads, batch) indices (about two
// rounds of 132 blocks: 128 x 4 query blocks), each walked heads fastest,
// then batch, then query blocks.
// CHECK-LABEL: func.func @three_dims
// CHECK: tile.kernel blocks(%[[PID:.+]], %{{.+}}, %{{.+}}) in (%c132, %c1, %c1) threads(256) attributes {tile.persistent = {blocks = 1 : i64, tiles = 1024 : i64}}
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x128x64xf16
// CHECK-NEXT: tile.alloc_barrier arrivals(1) : memref<2xi64
// CHECK-NEXT: tile.alloc_barrier arrivals(8) : memref<2xi64
// CHECK-NEXT: %[[QRING:.+]] = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x128x64xf16
// CHECK-NEXT: %[[QFULL:.+]] = tile.alloc_barrier arrivals(1) : memref<2xi64
// CHECK-NEXT: %[[QEMPTY:.+]] = tile.alloc_barrier arrivals(8) : memref<2xi64
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   scf.for %[[R:.+]] = %c0 to %{{.+}} step %c1 iter_args(%[[BASE:.+]] = %c0) -> (index) {
// CHECK:     %[[POS:.+]] = arith.select %{{.+}}, %{{.+}}, %[[PID]] : index
// CHECK:     %[[R0:.+]] = arith.muli %[[R]], %{{.+}}
// CHECK:     %[[T:.+]] = arith.addi %[[R0]], %[[POS]]
// CHECK:     %[[IN:.+]] = arith.remui %[[T]], %c128
// CHECK:     %[[REST:.+]] = arith.divui %[[T]], %c128
// CHECK:     %[[QB:.+]] = arith.remui %[[REST]], %c4
// CHECK:     %[[GRP:.+]] = arith.divui %[[REST]], %c4
// CHECK:     %[[G0:.+]] = arith.muli %[[GRP]], %c128
// CHECK:     %[[U:.+]] = arith.addi %[[G0]], %[[IN]]
// CHECK:     %[[H:.+]] = arith.remui %[[U]], %c32
// CHECK:     %[[B:.+]] = arith.divui %[[U]], %c32
// CHECK:     %[[SLOT:.+]] = arith.remui %[[R]], %c2
// CHECK:     %[[ROUND:.+]] = arith.divui %[[R]], %c2
// CHECK:     %[[PAR:.+]] = arith.remui %[[ROUND]], %c2
// CHECK:     %[[FREE:.+]] = arith.xori %[[PAR]], %c1
// CHECK:     tile.barrier_wait %[[QEMPTY]][%[[SLOT]]], %[[FREE]]
// CHECK:     tile.barrier_arrive %[[QFULL]][%[[SLOT]]] expect_tx(16384)
// CHECK:     %[[QV:.+]] = memref.subview %[[QRING]][%[[SLOT]], 0, 0]
// CHECK:     tile.copy %{{.+}}[%[[B]], %[[H]], %{{.+}}, %c0] [1, 1, 128, 64] to %[[QV]][%c0, %c0] [128, 64] via %[[QFULL]][%[[SLOT]]]
// CHECK:     %[[N:.+]] = arith.addi %[[QB]], %c1
// CHECK:     scf.for %{{.+}} = %c0 to %[[N]] step %c1 {
// CHECK:       tile.copy %{{.+}}[%[[B]], %[[H]], %{{.+}}, %c0] [1, 1, 128, 64] to %{{.+}} via
// CHECK:     scf.yield
// CHECK: } consumer {
// CHECK:   scf.for %[[CR:.+]] = %c0 to %{{.+}} step %c1 iter_args
// CHECK:     %[[CSLOT:.+]] = arith.remui %[[CR]], %c2
// CHECK:     %[[CROUND:.+]] = arith.divui %[[CR]], %c2
// CHECK:     %[[CPAR:.+]] = arith.remui %[[CROUND]], %c2
// CHECK:     %[[CQV:.+]] = memref.subview %[[QRING]][%[[CSLOT]], 0, 0]
// CHECK:     tile.barrier_wait %[[QFULL]][%[[CSLOT]]], %[[CPAR]]
// CHECK:     scf.for
// CHECK:       tile.gemm %[[CQV]], %{{.+}}, %{{.+}} {async, transpose_b}
// CHECK:     tile.copy %{{.+}}[%c0, %c0] [128, 128] to %{{.+}}
// CHECK:     tile.fence_proxy_async
// CHECK:     tile.barrier_arrive %[[QEMPTY]][%[[CSLOT]]]
// CHECK:     scf.yield
func.func @three_dims(%Q: memref<8x32x512x64xf16>, %K: memref<8x32x512x64xf16>, %O: memref<8x32x512x128xf32>) {
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
