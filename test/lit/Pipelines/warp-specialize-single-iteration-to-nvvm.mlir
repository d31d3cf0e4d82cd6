// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize,tile-pipeline,canonicalize,cse,tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80})' | FileCheck %s

// A warp-specialized GEMM whose pipelined loop runs once (K == block_K).
// canonicalize folds both roles' one-trip loops; the consumer's release
// of the previous slot sits under `iteration > 0` and folds away, so the
// `empty` barriers get no arrival at all. The producer's only wait on them
// is on parity 1 of their first phase, which returns at once: the kernel
// lowers (it used to be refused as "waits on a barrier that nothing
// arrives on").
// CHECK-LABEL: gpu.func @one_iteration_kernel
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.+}}, %c1_i32
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.+}}, %c4_i32
// The producer passes its fresh `empty` slot (parity 1), the consumer
// waits for the `full` one (parity 0).
// CHECK: nvvm.mbarrier.try_wait %{{.+}}, %c1_i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c8192_i32
// CHECK: nvvm.mbarrier.try_wait %{{.+}}, %c0_i32
// CHECK: nvvm.wgmma.mma_async
func.func @one_iteration(%arg0: memref<64x32xf16>, %arg1: memref<32x64xf16>, %arg2: memref<64x64xf16>) {
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx, %by) in (%c1, %c1) threads(128) {
    %0 = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %1 = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %2 = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.fill %2, %cst : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.pipelined %k = %c0 to %c1 step %c1 num_stages = 3 {
      %5 = arith.muli %by, %c64 : index
      %6 = arith.muli %k, %c32 : index
      tile.copy %arg0[%5, %6] [64, 32] to %0[%c0, %c0] [64, 32] : memref<64x32xf16> to memref<64x32xf16, #tile.scope<shared>>
      %7 = arith.muli %bx, %c64 : index
      tile.copy %arg1[%6, %7] [32, 64] to %1[%c0, %c0] [32, 64] : memref<32x64xf16> to memref<32x64xf16, #tile.scope<shared>>
      tile.gemm %0, %1, %2 : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
    %3 = arith.muli %by, %c64 : index
    %4 = arith.muli %bx, %c64 : index
    tile.copy %2[%c0, %c0] [64, 64] to %arg2[%3, %4] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf16>
  }
  return
}
