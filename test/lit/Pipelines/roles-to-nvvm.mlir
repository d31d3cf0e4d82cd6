// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize,tile-pipeline,tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// A kernel with roles on sm_90a (TileLang's barrierpipe GEMM, see
// Tile/Transforms/tile-roles.mlir). The block keeps its 256 threads (no
// producer is added). Thread 0 initializes the four barriers with their
// 128 arrivals. Each role is a branch on the thread index: threads
// [128, 256) (tid >= 128) run the producer: one thread
// announces the 8 KB of the 64x64 f16 box and issues the TMA load, then
// every thread of the role arrives on the barrier (no election: 128
// arrivals), after a proxy fence (what a thread wrote to shared memory
// before arriving may be read next by wgmma). Threads [0, 128) wait and run the consumer's wgmma as one
// warpgroup (m64n64k16, one warpgroup: the gemm's threads are the role's).
// CHECK-LABEL: func.func @barrierpipe
// CHECK: gpu.launch_func @barrierpipe_kernel::@barrierpipe_kernel blocks in (%{{.+}}, %c1, %c1) threads in (%c256, %c1, %c1)
// CHECK: gpu.func @barrierpipe_kernel
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c128_i32
// CHECK: %[[C:.+]] = arith.cmpi ult, %[[TID]], %c128 : index
// CHECK: scf.if %[[C]] {
// CHECK: scf.for
// CHECK: %[[P:.+]] = arith.cmpi uge, %[[TID]], %c128 : index
// CHECK: scf.if %[[P]] {
// CHECK: nvvm.mbarrier.try_wait
// CHECK: scf.if
// CHECK-NEXT: nvvm.mbarrier.expect_tx %{{.+}}, %c8192_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: }
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK-NEXT: nvvm.mbarrier.arrive %{{.+}} : !llvm.ptr<3>
// CHECK: scf.if %[[C]] {
// CHECK: nvvm.mbarrier.try_wait
// CHECK: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 64, k = 16>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// The epilogue, in the consumer's role again; no barrier over the block
// after the roles.
// CHECK: scf.if %[[C]] {
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @barrierpipe(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %as = tile.alloc_shared : memref<2x64x64xf16, #tile.scope<shared>>
    %bs = tile.alloc_shared : memref<2x64x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %bars = tile.alloc_barrier arrivals(128) : memref<4xi64, #tile.scope<shared>>
    tile.role threads(0 to 128) {
      %z = arith.constant 0.0 : f32
      tile.fill %acc, %z : memref<64x64xf32, #tile.scope<fragment>>, f32
    }
    scf.for %k = %c0 to %c64 step %c1 {
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
      tile.copy %acc[%c0, %c0] [64, 64] to %C[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<4096x4096xf16>
    }
  }
  return
}

// -----

// Three roles with register budgets (TileLang's MLA decode: two consumer
// warpgroups at 240 and 168, a producer at 80): 384 threads start at 168
// registers each; each role changes its budget first thing.
// CHECK-LABEL: func.func @budgets
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister increase 168
// CHECK: scf.if
// CHECK-NEXT: nvvm.setmaxregister decrease 80
func.func @budgets(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(384) {
    tile.role threads(0 to 128) {
      tile.set_max_nreg 240 increase
    }
    tile.role threads(128 to 256) {
      tile.set_max_nreg 168 increase
    }
    tile.role threads(256 to 384) {
      tile.set_max_nreg 80
    }
  }
  return
}

// -----

// An increase to fewer registers than the threads start with (TileLang's
// 240 for the consumers of a 256-thread block, whose threads start at 256)
// asks for what they have: it is dropped; the producer's decrease stays.
// CHECK-LABEL: func.func @increase_below_entry
// CHECK-NOT: nvvm.setmaxregister increase
// CHECK: nvvm.setmaxregister decrease 24
// CHECK-NOT: nvvm.setmaxregister increase
func.func @increase_below_entry(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(0 to 128) {
      tile.set_max_nreg 240 increase
    }
    tile.role threads(128 to 256) {
      tile.set_max_nreg 24
    }
  }
  return
}

// -----

// Per-thread cp.async (T.ptx_cp_async): each producer thread copies 8 f16
// (16 bytes, cache-global) into the swizzled stage and arrives on the
// barrier when its copies land (noinc); the consumer fences the async
// proxy after its wait, before wgmma reads what cp.async wrote.
// CHECK-LABEL: func.func @cp_async
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy %{{.+}}[%{{.+}}, %{{.+}}], %{{.+}}[%{{.+}}], 8, %{{.+}} {bypassL1}
// CHECK: nvvm.cp.async.mbarrier.arrive %{{.+}} {noinc = true}
// CHECK: scf.if
// CHECK: nvvm.mbarrier.try_wait
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.wgmma.mma_async
func.func @cp_async(%A: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %as = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %full = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    tile.role threads(128 to 256) {
      %tx = tile.thread_id : index
      %p = arith.subi %tx, %c128 : index
      %row = arith.divui %p, %c8 : index
      %r8 = arith.remui %p, %c8 : index
      %col = arith.muli %r8, %c8 : index
      tile.cp_async %A[%row, %col] to %as[%row, %col] elements(8) : memref<4096x4096xf16> to memref<64x64xf16, #tile.scope<shared>>
      tile.barrier_arrive %full[%c0] per_thread after_copies : memref<1xi64, #tile.scope<shared>>
    }
    tile.role threads(0 to 128) {
      tile.barrier_wait %full[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
      tile.gemm %as, %as, %acc {transpose_b} : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// T.sync_threads() in roles: a plain tile.barrier synchronizes the role's
// threads (a named barrier of its own), one with `block` the whole block
// (barrier 0 of all 256 threads, reached in each role; given with its
// count, so that tile-merge-barriers keeps it).
// CHECK-LABEL: func.func @role_and_block_barriers
// CHECK: gpu.func @role_and_block_barriers_kernel
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : i32
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : i32
// CHECK: scf.if
// CHECK-NEXT: nvvm.barrier id = %[[ONE]] number_of_threads = %[[C128]]
// CHECK-NEXT: nvvm.barrier id = %[[ZERO]] number_of_threads = %[[C256]]
// CHECK: scf.if
// CHECK-NEXT: nvvm.barrier id = %[[ZERO]] number_of_threads = %[[C256]]
func.func @role_and_block_barriers(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(0 to 128) {
      tile.barrier
      tile.barrier {block}
    }
    tile.role threads(128 to 256) {
      tile.barrier {block}
    }
  }
  return
}
