// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=132 early-tile-release=true}),canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{persistent-sms=132}),canonicalize,cse)' | FileCheck %s --check-prefix=OFF

// The attention backward's shape: K and V (32 KB each) copied before the
// loop and read only in it, a ring of Q tiles, a 96 KB tile written after
// the loop. Two K/V slots (256 KB in all) do not fit, one does: with
// early-tile-release the kernel walks persistently (one row of 66 clusters
// of 2), K and V on a ring of one slot. The producer waits for the slot to
// be free (parity of the tile count, flipped), then copies K and V for the
// tile (65536 bytes expected) before the tile's Q copies; the consumers
// wait for them before the loop and free the slot right after it, once
// its gemms are done (after a proxy fence), before the epilogue. Without
// the option the kernel stays launched (a grid of three dimensions is
// persistent only with its tile copies issued early).
// CHECK-LABEL: func.func @kv_tiles
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%c132, %c1, %c1) threads(256) attributes {tile.persistent = {blocks = 2 : i64, tiles = 1024 : i64}}
// CHECK-DAG: %[[K:.+]] = tile.alloc_shared {{.*}}: memref<1x128x128xf16, #tile.scope<shared>>
// CHECK-DAG: %[[V:.+]] = tile.alloc_shared {{.*}}: memref<1x128x128xf16, #tile.scope<shared>>
// CHECK-DAG: %[[TFULL:.+]] = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
// CHECK-DAG: %[[TEMPTY:.+]] = tile.alloc_barrier arrivals(8) : memref<1xi64, #tile.scope<shared>>
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   scf.for
// CHECK:     %[[FLIP:.+]] = arith.xori %{{.+}}, %c1
// CHECK:     tile.barrier_wait %[[TEMPTY]][%c0], %[[FLIP]]
// CHECK-NEXT: tile.barrier_arrive %[[TFULL]][%c0] expect_tx(65536)
// CHECK:     tile.copy %{{.+}} to %{{.+}} via %[[TFULL]][%c0]
// CHECK:     tile.copy %{{.+}} to %{{.+}} via %[[TFULL]][%c0]
// CHECK:     scf.for
// CHECK:       tile.copy {{.+}} {multicast = 2 : i64}
// CHECK: } consumer {
// CHECK:   scf.for
// CHECK:     tile.barrier_wait %[[TFULL]][%c0]
// CHECK-NEXT: tile.fill
// CHECK:     scf.for
// CHECK:       tile.gemm
// CHECK:       tile.gemm_wait 1
// CHECK:     tile.gemm_wait 0
// CHECK:     tile.barrier_arrive %{{.+}} {cluster}
// CHECK-NEXT: tile.fence_proxy_async
// CHECK-NEXT: tile.barrier_arrive %[[TEMPTY]][%c0]
// CHECK-NEXT: tile.copy
// CHECK-NEXT: tile.copy
// CHECK-NEXT: arith.addi
// CHECK-NEXT: scf.yield
// OFF-LABEL: func.func @kv_tiles
// OFF: tile.kernel blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%c4, %c32, %c8) threads(256) {
// OFF-NOT: memref<1x128x128xf16
func.func @kv_tiles(%Q: memref<8x32x512x128xf16>, %K: memref<8x32x512x128xf16>, %V: memref<8x32x512x128xf16>, %DK: memref<8x32x512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %bh, %bb) in (%c4, %c32, %c8) threads(256) {
    %k = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %q = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %stage = tile.alloc_shared : memref<192x128xf32, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x64xf32, #tile.scope<fragment>>
    %dk = tile.alloc_fragment : memref<128x64xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %K[%bb, %bh, %m0, %c0] [1, 1, 128, 128] to %k[%c0, %c0] [128, 128] : memref<8x32x512x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.copy %V[%bb, %bh, %m0, %c0] [1, 1, 128, 128] to %v[%c0, %c0] [128, 128] : memref<8x32x512x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.fill %dk, %zero : memref<128x64xf32, #tile.scope<fragment>>, f32
    tile.pipelined %j = %c0 to %c8 step %c1 num_stages = 2 {
      %n0 = affine.apply affine_map<(d0) -> (d0 * 64)>(%j)
      tile.copy %Q[%bb, %bh, %n0, %c0] [1, 1, 64, 128] to %q[%c0, %c0] [64, 128] : memref<8x32x512x128xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %k, %q, %s {transpose_b} : memref<128x128xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x64xf32, #tile.scope<fragment>>
      tile.gemm %v, %q, %dk {transpose_b} : memref<128x128xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x64xf32, #tile.scope<fragment>>
    }
    tile.copy %dk[%c0, %c0] [128, 64] to %stage[%c0, %c0] [128, 64] : memref<128x64xf32, #tile.scope<fragment>> to memref<192x128xf32, #tile.scope<shared>>
    tile.copy %stage[%c0, %c0] [128, 64] to %DK[%bb, %bh, %m0, %c0] [1, 1, 128, 64] : memref<192x128xf32, #tile.scope<shared>> to memref<8x32x512x128xf32>
  }
  return
}

// -----

// K written after the loop (a staging tile of the epilogue): not one slot,
// so the kernel stays launched with the option too.
// CHECK-LABEL: func.func @kv_reused
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%c4, %c32, %c8) threads(256) {
// CHECK-NOT: memref<1x128x128xf16
// OFF-LABEL: func.func @kv_reused
// OFF: tile.kernel blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%c4, %c32, %c8) threads(256) {
func.func @kv_reused(%Q: memref<8x32x512x128xf16>, %K: memref<8x32x512x128xf16>, %V: memref<8x32x512x128xf16>, %DK: memref<8x32x512x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %bh, %bb) in (%c4, %c32, %c8) threads(256) {
    %k = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %q = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %stage = tile.alloc_shared : memref<192x128xf32, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x64xf32, #tile.scope<fragment>>
    %dk = tile.alloc_fragment : memref<128x64xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %K[%bb, %bh, %m0, %c0] [1, 1, 128, 128] to %k[%c0, %c0] [128, 128] : memref<8x32x512x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.copy %V[%bb, %bh, %m0, %c0] [1, 1, 128, 128] to %v[%c0, %c0] [128, 128] : memref<8x32x512x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.fill %dk, %zero : memref<128x64xf32, #tile.scope<fragment>>, f32
    tile.pipelined %j = %c0 to %c8 step %c1 num_stages = 2 {
      %n0 = affine.apply affine_map<(d0) -> (d0 * 64)>(%j)
      tile.copy %Q[%bb, %bh, %n0, %c0] [1, 1, 64, 128] to %q[%c0, %c0] [64, 128] : memref<8x32x512x128xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %k, %q, %s {transpose_b} : memref<128x128xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x64xf32, #tile.scope<fragment>>
      tile.gemm %v, %q, %dk {transpose_b} : memref<128x128xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x64xf32, #tile.scope<fragment>>
    }
    tile.copy %dk[%c0, %c0] [128, 64] to %stage[%c0, %c0] [128, 64] : memref<128x64xf32, #tile.scope<fragment>> to memref<192x128xf32, #tile.scope<shared>>
    tile.copy %s[%c0, %c0] [128, 64] to %k[%c0, %c0] [128, 64] : memref<128x64xf32, #tile.scope<fragment>> to memref<128x128xf16, #tile.scope<shared>>
    tile.copy %stage[%c0, %c0] [128, 64] to %DK[%bb, %bh, %m0, %c0] [1, 1, 128, 64] : memref<192x128xf32, #tile.scope<shared>> to memref<8x32x512x128xf32>
  }
  return
}
