// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize,tile-pipeline,tile-layout-inference{wgmma=true},tile-insert-barriers))' | FileCheck %s

// A kernel that gives its threads roles (TileLang's barrierpipe GEMM: a
// consumer warpgroup and a producer warpgroup, two stages of A/B tiles,
// full and empty barriers of 128 per-thread arrivals). Automatic warp
// specialization and pipelining step aside and say so on the kernel; the
// loop stays a plain loop in program order. The consumer's accumulator and
// gemm are laid out for its 128 threads (one warpgroup, wgmma), not for
// the block's 256; the T.Parallel epilogue in the role maps onto them too.
// The barriers the compiler inserts stay inside the role (before the
// epilogue reads the accumulator's staging buffer); none goes between
// roles, which the program orders with its own barriers.
// CHECK-LABEL: func.func @barrierpipe
// CHECK: tile.kernel blocks(%{{.+}}) in (%{{.+}}) threads(256) attributes {tile.explicit_roles = "the program gives threads roles (tile.role): no automatic warp specialization; tile.pipelined loops run as plain loops"}
// CHECK: tile.alloc_fragment {layout = #tile.layout<#{{.+}}, threads = 128>} : memref<64x64xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#{{.+}}, threads = 128>} : memref<64x64xf16
// CHECK: scf.for
// CHECK-NOT: tile.barrier
// CHECK: tile.role threads(128 to 256) {
// CHECK: tile.barrier_wait
// CHECK: tile.copy {{.+}} via {{.+}} {expect_tx}
// CHECK: tile.barrier_arrive {{.+}} per_thread
// CHECK: tile.role threads(0 to 128) {
// CHECK: tile.barrier_wait
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {wgmma = array<i64: 1, 1>}
// CHECK: tile.barrier_arrive {{.+}} per_thread
// CHECK-NOT: tile.barrier
// CHECK: tile.role threads(0 to 128) {
// CHECK: tile.parallel (%{{.+}}, %{{.+}}) in (64, 64) {{.+}}threads = 128
// CHECK-NEXT: memref.load
func.func @barrierpipe(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %as = tile.alloc_shared : memref<2x64x64xf16, #tile.scope<shared>>
    %bs = tile.alloc_shared : memref<2x64x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %out = tile.alloc_fragment : memref<64x64xf16, #tile.scope<fragment>>
    %bars = tile.alloc_barrier arrivals(128) : memref<4xi64, #tile.scope<shared>>
    tile.role threads(0 to 128) {
      %z0_0 = arith.constant 0.0 : f32
      tile.fill %acc, %z0_0 : memref<64x64xf32, #tile.scope<fragment>>, f32
    }
    tile.pipelined %k = %c0 to %c64 step %c1 num_stages = 2 {
      %s = arith.remui %k, %c2 : index
      %e = arith.addi %s, %c2 : index
      %ph = arith.divui %k, %c2 : index
      %p = arith.remui %ph, %c2 : index
      %pe = arith.xori %p, %c1 : index
      %kk = arith.muli %k, %c64 : index
      tile.role threads(128 to 256) {
        tile.barrier_wait %bars[%e], %pe : memref<4xi64, #tile.scope<shared>>
        %av = memref.subview %as[%s, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf16, #tile.scope<shared>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %A[%c0, %kk] [64, 64] to %av[%c0, %c0] [64, 64] via %bars[%s] {expect_tx} : memref<4096x4096xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<4xi64, #tile.scope<shared>>
        tile.barrier_arrive %bars[%s] per_thread : memref<4xi64, #tile.scope<shared>>
      }
      tile.role threads(0 to 128) {
        tile.barrier_wait %bars[%s], %p : memref<4xi64, #tile.scope<shared>>
        %av = memref.subview %as[%s, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf16, #tile.scope<shared>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        %bv = memref.subview %bs[%s, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf16, #tile.scope<shared>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %av, %bv, %acc : memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
        tile.barrier_arrive %bars[%e] per_thread : memref<4xi64, #tile.scope<shared>>
      }
    }
    tile.role threads(0 to 128) {
      tile.parallel (%i, %j) in (64, 64) {
        %x = memref.load %acc[%i, %j] : memref<64x64xf32, #tile.scope<fragment>>
        %y = arith.truncf %x : f32 to f16
        memref.store %y, %out[%i, %j] : memref<64x64xf16, #tile.scope<fragment>>
      }
      tile.copy %out[%c0, %c0] [64, 64] to %C[%c0, %c0] [64, 64] : memref<64x64xf16, #tile.scope<fragment>> to memref<4096x4096xf16>
    }
  }
  return
}
