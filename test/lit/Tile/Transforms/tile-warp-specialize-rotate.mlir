// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{rotate=true pingpong=false}),canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize),canonicalize,cse)' | FileCheck %s --check-prefix=OFF

// Attention on 2 consumer warpgroups, rotated: the row maximum of S and the
// exp of S touch neither P nor O (middle: they run while O += P V is in
// flight); the rescale of O and S -> P do (late: after the wait for it).
// The first iteration runs whole but its O += P V before the loop (guarded
// by a non-empty loop); each iteration then waits for its slot, issues S_k
// and the previous O += P V (slot k - 1) asynchronously, waits for S_k,
// runs the middle statements, waits for O += P V, frees slot k - 1 and runs
// the late statements; the last O += P V and the release of its slot
// follow the loop. No warpgroup turns. Without the option the loop is not
// rotated. K and V have rings of barriers of their own: the producer fills
// K's slot, then V's; the consumer frees K's slot k once S_k is done and
// waits for V's slot k - 1 just before O += P V, so the loop holds one K
// and one V slot, not two whole slots.
// CHECK-LABEL: func.func @attention
// CHECK: %[[FULL:.+]] = tile.alloc_barrier arrivals(1)
// CHECK: %[[EMPTY:.+]] = tile.alloc_barrier arrivals(8)
// CHECK: %[[FULLV:.+]] = tile.alloc_barrier arrivals(1)
// CHECK: %[[EMPTYV:.+]] = tile.alloc_barrier arrivals(8)
// CHECK: producer(128)
// CHECK:   tile.barrier_wait %[[EMPTY]]
// CHECK:   tile.barrier_arrive %[[FULL]][%{{.+}}] expect_tx(32768)
// CHECK:   tile.copy %arg1{{.+}} via %[[FULL]]
// CHECK:   tile.barrier_wait %[[EMPTYV]]
// CHECK:   tile.barrier_arrive %[[FULLV]][%{{.+}}] expect_tx(32768)
// CHECK:   tile.copy %arg2{{.+}} via %[[FULLV]]
// CHECK: } consumer {
// CHECK: scf.if
// CHECK:   tile.barrier_wait %[[FULL]]
// CHECK:   tile.gemm %{{.+}}, %{{.+}}, %[[S:.+]] {clear_accum, policy = #tile.policy<full_row>, transpose_b}
// CHECK-NEXT: tile.barrier_arrive %[[EMPTY]]
// CHECK:   tile.reduce %[[S]]
// CHECK:   tile.parallel
// CHECK:   tile.parallel
// CHECK:   tile.copy %[[S]]
// CHECK-NOT: tile.gemm
// CHECK:   scf.for %[[K:.+]] = %c1 to
// CHECK:     %[[PREV:.+]] = arith.subi %[[K]], %c1
// CHECK:     %[[SLOT:.+]] = arith.remui %[[K]], %c2
// CHECK:     %[[PSLOT:.+]] = arith.remui %[[PREV]], %c2
// CHECK:     tile.barrier_wait %[[FULL]][%[[SLOT]]], %{{.+}}
// CHECK:     %[[KNOW:.+]] = memref.subview %{{.+}}[%[[SLOT]], 0, 0]
// CHECK:     %[[VPREV:.+]] = memref.subview %{{.+}}[%[[PSLOT]], 0, 0]
// CHECK:     tile.gemm %{{.+}}, %[[KNOW]], %[[S]] {async, clear_accum, policy = #tile.policy<full_row>, transpose_b}
// CHECK-NEXT: tile.barrier_wait %[[FULLV]][%[[PSLOT]]]
// CHECK-NEXT: tile.gemm %[[P:.+]], %[[VPREV]], %[[O:.+]] {async, policy = #tile.policy<full_row>}
// CHECK-NEXT: tile.gemm_wait 1
// CHECK-NEXT: tile.barrier_arrive %[[EMPTY]][%[[SLOT]]]
// CHECK-NEXT: tile.reduce %[[S]]
// CHECK-NEXT: tile.parallel
// CHECK:     tile.gemm_wait 0
// CHECK-NEXT: tile.barrier_arrive %[[EMPTYV]][%[[PSLOT]]] : memref<2xi64
// CHECK-NEXT: tile.parallel
// CHECK:     tile.copy %[[S]]
// CHECK-NEXT: }
// CHECK:   tile.barrier_wait %[[FULLV]]
// CHECK-NEXT: memref.subview
// CHECK-NEXT: tile.gemm %[[P]], %{{.+}}, %[[O]] {policy = #tile.policy<full_row>}
// CHECK-NEXT: tile.barrier_arrive %[[EMPTYV]]
// CHECK-NOT: pingpong
// CHECK-NOT: tile.sched_barrier
// OFF-LABEL: func.func @attention
// OFF-NOT: async
// OFF-NOT: gemm_wait
// The lowering of the rotated loop (warpgroup turns, the sched barrier) is
// checked end to end in Pipelines/warp-specialize-rotate-to-nvvm.mlir.
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
