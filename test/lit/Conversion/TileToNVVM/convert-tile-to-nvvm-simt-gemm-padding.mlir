// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// A SIMT gemm (20 warps split 336 x 8 over neither mma.sync nor wgmma
// tiles) whose accumulator layout pads M = 336 to 512 rows: thread t holds
// row (t / 2) mod 64 + 64 j in registers 4 j .. 4 j + 3, j < 8. Rows
// 384-511 (j = 6, 7) are padding in every thread: no K loop for them.
// Rows 320-383 (j = 5) are padding in some threads: their K loops run under
// a guard row < 336 (unguarded, they read A's rows past the shared
// allocation: an illegal address on the H100). j < 5: in range everywhere.
// CHECK-LABEL: gpu.func @main_kernel
// CHECK: %[[ROW:.*]] = arith.remui %{{.*}}, %c64 : index
// CHECK-COUNT-20: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args
// CHECK: %[[ROW5:.*]] = arith.addi %[[ROW]], %c320 : index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[ROW5]], %c336 : index
// CHECK: scf.if %[[OK]] {
// CHECK-COUNT-4: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args
// CHECK-NOT: scf.for
// CHECK: gpu.return
#map = affine_map<(d0, d1)[s0] -> ((d0 mod 64) * 2 + s0 * 128 + d1 floordiv 4, ((d0 floordiv 64) mod 8) * 4 + d1 mod 4)>
module {
  func.func @main(%arg0: memref<336x32xf16>, %arg1: memref<32x8xf16>, %arg2: memref<336x8xf32>) {
    %c0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    tile.kernel blocks(%arg3, %arg4) in (%c1, %c1) threads(640) {
      %0 = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<336x32xf16, #tile.scope<shared>>
      %1 = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<32x8xf16, #tile.scope<shared>>
      %2 = tile.alloc_fragment {layout = #tile.layout<#map, threads = 640, replicate = 5>} : memref<336x8xf32, #tile.scope<fragment>>
      tile.fill %2, %cst : memref<336x8xf32, #tile.scope<fragment>>, f32
      tile.copy %arg0[%c0, %c0] [336, 32] to %0[%c0, %c0] [336, 32] : memref<336x32xf16> to memref<336x32xf16, #tile.scope<shared>>
      tile.copy %arg1[%c0, %c0] [32, 8] to %1[%c0, %c0] [32, 8] : memref<32x8xf16> to memref<32x8xf16, #tile.scope<shared>>
      tile.barrier
      tile.gemm %0, %1, %2 {policy = #tile.policy<full_col>} : memref<336x32xf16, #tile.scope<shared>>, memref<32x8xf16, #tile.scope<shared>> -> memref<336x8xf32, #tile.scope<fragment>>
      tile.copy %2[%c0, %c0] [336, 8] to %arg2[%c0, %c0] [336, 8] : memref<336x8xf32, #tile.scope<fragment>> to memref<336x8xf32>
    }
    return
  }
}
