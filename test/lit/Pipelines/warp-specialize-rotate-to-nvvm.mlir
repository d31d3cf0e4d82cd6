// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{rotate=true},tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=TURNS
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{rotate=true pingpong=false rotate-sched-barrier=true},tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=SCHED

// End to end on sm_90a: tile-warp-specialize rotates the attention loop
// (with warpgroup turns, or with the sched barrier), then layout inference
// with wgmma, barrier insertion and the lowering. The rotation alone is
// tested in Tile/Transforms/tile-warp-specialize-rotate.mlir.

// With rotate-sched-barrier the rotated loop's wait for O += P V (and only
// it) comes after a zero nanosleep, which ptxas does not hoist the wait
// above: the softmax stays between the two waits.
// With warpgroup turns too, a rotated iteration's two gemms are one turn:
// the warpgroup waits for its turn before S_k, and hands it on once
// O += P V of iteration k - 1 is issued, before waiting for S_k; the
// peeled first iteration and the last O += P V take no turns.
// TURNS-LABEL: func.func @attention
// TURNS: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// TURNS: nvvm.wgmma.commit.group.sync.aligned
// TURNS-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// TURNS-NOT: nvvm.barrier id = %{{[0-9]+}}
// TURNS: scf.for %{{.+}} = %c1 to
// TURNS: nvvm.barrier id = %{{[0-9]+}} number_of_threads = %c256_i32
// TURNS-NEXT: nvvm.wgmma.fence.aligned
// TURNS: nvvm.wgmma.commit.group.sync.aligned
// TURNS: nvvm.mbarrier.try_wait
// TURNS: nvvm.wgmma.fence.aligned
// TURNS: nvvm.wgmma.commit.group.sync.aligned
// TURNS-NOT: nvvm.wgmma.wait.group
// TURNS: nvvm.barrier.arrive id = %{{[0-9]+}} number_of_threads = %c256_i32
// TURNS-NOT: nvvm.barrier.arrive
// TURNS: nvvm.wgmma.wait.group.sync.aligned 1
// TURNS: nvvm.wgmma.wait.group.sync.aligned 0
// TURNS-NOT: nvvm.barrier id = %{{[0-9]+}}
// TURNS: nvvm.wgmma.wait.group.sync.aligned 0
// TURNS: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// SCHED-LABEL: func.func @attention
// SCHED: nvvm.wgmma.wait.group.sync.aligned 1
// SCHED-NOT: nvvm.wgmma.wait.group.sync.aligned
// SCHED: nvvm.nanosleep %{{.+}}
// SCHED-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SCHED-NOT: nvvm.nanosleep
func.func @attention(%Q: memref<4096x128xf16>, %K: memref<4x4096x128xf16>, %V: memref<4x4096x128xf16>, %O: memref<4096x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c32, %c4) threads(256) {
    %q = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<128x128xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<128xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %Q[%m0, %c0] [128, 128] to %q[%c0, %c0] [128, 128] : memref<4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.fill %o, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %n = arith.addi %bx, %c1 : index
    tile.pipelined %j = %c0 to %n step %c1 num_stages = 2 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 128)>(%j)
      tile.copy %K[%by, %kk, %c0] [1, 128, 128] to %k[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.copy %V[%by, %kk, %c0] [1, 128, 128] to %v[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.gemm %q, %k, %s {transpose_b, clear_accum, policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<shared>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
      tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<128x128xf32, #tile.scope<fragment>> -> memref<128xf32, #tile.scope<fragment>>
      tile.parallel (%i, %jj) in (128, 128) {
        %x = memref.load %s[%i, %jj] : memref<128x128xf32, #tile.scope<fragment>>
        %y = memref.load %m[%i] : memref<128xf32, #tile.scope<fragment>>
        %z = arith.subf %x, %y : f32
        %e = math.exp2 %z : f32
        memref.store %e, %s[%i, %jj] : memref<128x128xf32, #tile.scope<fragment>>
      }
      tile.parallel (%i, %jj) in (128, 128) {
        %x = memref.load %o[%i, %jj] : memref<128x128xf32, #tile.scope<fragment>>
        %y = memref.load %m[%i] : memref<128xf32, #tile.scope<fragment>>
        %z = arith.mulf %x, %y : f32
        memref.store %z, %o[%i, %jj] : memref<128x128xf32, #tile.scope<fragment>>
      }
      tile.copy %s[%c0, %c0] [128, 128] to %p[%c0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<128x128xf16, #tile.scope<fragment>>
      tile.gemm %p, %v, %o {policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<fragment>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %o[%c0, %c0] [128, 128] to %O[%m0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x128xf32>
  }
  return
}
