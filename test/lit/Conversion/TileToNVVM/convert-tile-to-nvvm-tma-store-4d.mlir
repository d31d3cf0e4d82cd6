// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// The epilogue of convert-tile-to-nvvm-tma-store.mlir into a 4-d output
// (batch, head, row, column: the attention backward's dK and dV). In a
// persistent kernel it goes through the staging buffer and TMA stores of
// 1x1x128x64 boxes at four coordinates (column, row, head 3, batch 1,
// innermost first), one per 64-column panel.
// CHECK: gpu.launch_func @persistent_kernel::@persistent_kernel {{.+}} dynamic_shared_memory_size %c133120_i32
// CHECK-SAME: tile.tensormaps = [{{.+}}, {box = array<i64: 1, 1, 128, 64>, param = 2 : i64, swizzle = 128 : i64}]
// CHECK: gpu.func @persistent_kernel(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[TC:.+]]: !llvm.ptr,
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[TC]], %{{.+}}, box[%{{.+}}, %{{.+}}, %c3_i32, %c1_i32]
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[TC]], %{{.+}}, box[%{{.+}}, %{{.+}}, %c3_i32, %c1_i32]
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + (d0 floordiv 64) * 64 + d1 mod 2 + (d1 floordiv 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
#map2 = affine_map<(d0) -> (d0 * 64)>
func.func @persistent(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<2x8x4096x4096xf16>, %n: index) {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c32, %c32) threads(128) attributes {tile.persistent = {blocks = 1 : i64, tiles = 1024 : i64}} {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<3x128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<3x64x128xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<3xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(4) : memref<3xi64, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<128x128xf32, #tile.scope<fragment>>
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c3 : index
        %round = arith.divui %k, %c3 : index
        %parity = arith.remui %round, %c2 : index
        %phase = arith.xori %parity, %c1 : index
        tile.barrier_wait %empty[%slot], %phase : memref<3xi64, #tile.scope<shared>>
        tile.barrier_arrive %full[%slot] expect_tx(32768) : memref<3xi64, #tile.scope<shared>>
        %m0 = affine.apply #map1(%by)
        %kk = affine.apply #map2(%k)
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<3x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %A[%m0, %kk] [128, 64] to %a_slot[%c0, %c0] [128, 64] via %full[%slot] : memref<4096x4096xf16> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
        %n0 = affine.apply #map1(%bx)
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 128] [1, 1, 1] : memref<3x64x128xf16, #tile.scope<shared>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %B[%kk, %n0] [64, 128] to %b_slot[%c0, %c0] [64, 128] via %full[%slot] : memref<4096x4096xf16> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
      }
    } consumer {
      tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
      %m0 = affine.apply #map1(%by)
      %n0 = affine.apply #map1(%bx)
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c3 : index
        %round = arith.divui %k, %c3 : index
        %phase = arith.remui %round, %c2 : index
        tile.barrier_wait %full[%slot], %phase : memref<3xi64, #tile.scope<shared>>
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<3x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 128] [1, 1, 1] : memref<3x64x128xf16, #tile.scope<shared>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %a_slot, %b_slot, %c {async, wgmma = array<i64: 1, 1>} : memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
        tile.gemm_wait 1
        %not_first = arith.cmpi ugt, %k, %c0 : index
        scf.if %not_first {
          %prev_plus = arith.addi %slot, %c2 : index
          %prev = arith.remui %prev_plus, %c3 : index
          tile.barrier_arrive %empty[%prev] : memref<3xi64, #tile.scope<shared>>
        }
      }
      tile.gemm_wait 0
      tile.copy %c[%c0, %c0] [128, 128] to %C[%c1, %c3, %m0, %n0] [1, 1, 128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<2x8x4096x4096xf16>
    }
  }
  return
}

// -----

// Launched one block a tile, the same epilogue stores its fragment
// directly: no staging buffer, no tensor map for the output.
// CHECK: gpu.launch_func @launched_kernel::@launched_kernel {{.+}} dynamic_shared_memory_size %c100352_i32
// CHECK-NOT: param = 2
// CHECK: gpu.func @launched_kernel
// CHECK-NOT: cp.async.bulk.tensor.global.shared.cta
// CHECK: vector.store %{{.+}} : memref<2x8x4096x4096xf16>, vector<2xf16>
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + (d0 floordiv 64) * 64 + d1 mod 2 + (d1 floordiv 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
#map2 = affine_map<(d0) -> (d0 * 64)>
func.func @launched(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<2x8x4096x4096xf16>, %n: index) {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c32, %c32) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<3x128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<3x64x128xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<3xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(4) : memref<3xi64, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<128x128xf32, #tile.scope<fragment>>
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c3 : index
        %round = arith.divui %k, %c3 : index
        %parity = arith.remui %round, %c2 : index
        %phase = arith.xori %parity, %c1 : index
        tile.barrier_wait %empty[%slot], %phase : memref<3xi64, #tile.scope<shared>>
        tile.barrier_arrive %full[%slot] expect_tx(32768) : memref<3xi64, #tile.scope<shared>>
        %m0 = affine.apply #map1(%by)
        %kk = affine.apply #map2(%k)
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<3x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %A[%m0, %kk] [128, 64] to %a_slot[%c0, %c0] [128, 64] via %full[%slot] : memref<4096x4096xf16> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
        %n0 = affine.apply #map1(%bx)
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 128] [1, 1, 1] : memref<3x64x128xf16, #tile.scope<shared>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %B[%kk, %n0] [64, 128] to %b_slot[%c0, %c0] [64, 128] via %full[%slot] : memref<4096x4096xf16> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
      }
    } consumer {
      tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
      %m0 = affine.apply #map1(%by)
      %n0 = affine.apply #map1(%bx)
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c3 : index
        %round = arith.divui %k, %c3 : index
        %phase = arith.remui %round, %c2 : index
        tile.barrier_wait %full[%slot], %phase : memref<3xi64, #tile.scope<shared>>
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<3x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 128] [1, 1, 1] : memref<3x64x128xf16, #tile.scope<shared>> to memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %a_slot, %b_slot, %c {async, wgmma = array<i64: 1, 1>} : memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<64x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
        tile.gemm_wait 1
        %not_first = arith.cmpi ugt, %k, %c0 : index
        scf.if %not_first {
          %prev_plus = arith.addi %slot, %c2 : index
          %prev = arith.remui %prev_plus, %c3 : index
          tile.barrier_arrive %empty[%prev] : memref<3xi64, #tile.scope<shared>>
        }
      }
      tile.gemm_wait 0
      tile.copy %c[%c0, %c0] [128, 128] to %C[%c1, %c3, %m0, %n0] [1, 1, 128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<2x8x4096x4096xf16>
    }
  }
  return
}
