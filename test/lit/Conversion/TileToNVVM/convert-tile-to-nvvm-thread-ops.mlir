// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80},canonicalize,cse)' | FileCheck %s --check-prefix=SM80

// SIMT code: a thread's own element, shuffled, reduced over its warp (five
// xor steps, segments of 32: c = 31), stored by every thread (no guard on
// the thread index); the shuffle of segments of 16 lanes has c = 4127.
// shuffle_elect(64): elect.sync among the active lanes of even warps; sm_80
// has no elect.sync: the lowest active lane.
// CHECK-LABEL: gpu.func @lanes_kernel
// CHECK: %[[TX:.+]] = gpu.thread_id x
// CHECK: nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %{{.+}}, %c4127_i32 : i32 -> i32
// CHECK-COUNT-5: nvvm.shfl.sync bfly %{{.+}}, %{{.+}}, %{{.+}}, %c31_i32 : i32 -> i32
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.+}}, %arg0[%[[TX]]]
// CHECK: nvvm.vote.sync ballot
// CHECK: llvm.inline_asm has_side_effects "activemask.b32 $0;"
// CHECK: nvvm.elect.sync
// CHECK-NOT: scf.if
// CHECK: memref.store %{{.+}}, %arg1[%[[TX]]]
// SM80-LABEL: gpu.func @lanes_kernel
// SM80-NOT: nvvm.elect.sync
// SM80: llvm.intr.cttz
// SM80: nvvm.read.ptx.sreg.laneid
func.func @lanes(%out: memref<128xf32>, %ids: memref<128xi64>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %w = arith.constant 16 : i32
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %tx = tile.thread_id : index
    %v = memref.load %out[%tx] : memref<128xf32>
    %s = tile.shuffle xor %v, %one, %w, %m : f32
    %r = tile.warp_reduce sum %s : f32
    memref.store %r, %out[%tx] : memref<128xf32>
    %p = arith.cmpf ogt, %v, %r : f32
    %b = tile.warp_vote ballot %p, %m -> i64
    %e = tile.elect 64 -> i1
    %ee = arith.extui %e : i1 to i64
    %sum = arith.addi %b, %ee : i64
    memref.store %sum, %ids[%tx] : memref<128xi64>
  }
  return
}

// -----

// Element atomics: float max is a compare-and-swap loop (fetch_max's rule:
// replace only when the value is greater); a memory order is a release
// fence before and an acquire fence after a relaxed update (NVPTX drops
// orderings on atomicrmw); unsigned min is umin; atomic loads and stores
// carry their ordering. The previous value differs between threads: its
// store is every thread's. The block vote's count is the same in every
// thread: thread 0 stores it.
// CHECK-LABEL: gpu.func @atomics_kernel
// CHECK: scf.while
// CHECK: arith.cmpf ogt
// CHECK: llvm.cmpxchg %{{.+}} syncscope("device") monotonic monotonic
// CHECK: llvm.fence syncscope("device") release
// CHECK: %[[OLD:.+]] = llvm.atomicrmw add %{{.+}} syncscope("device") monotonic
// CHECK: llvm.fence syncscope("device") acquire
// CHECK: llvm.atomicrmw umin
// CHECK: llvm.load %{{.+}} atomic syncscope("device") acquire
// CHECK: llvm.store %{{.+}} atomic syncscope("device") release
// CHECK-NEXT: memref.store %[[OLD]], %arg2[%c1]
// CHECK: %[[N:.+]] = nvvm.barrier #nvvm.reduction<popc>
// CHECK: scf.if
// CHECK-NEXT: memref.store %[[N]], %arg2[%c0]
func.func @atomics(%out: memref<128xf32>, %flags: memref<4xi32>, %u: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %f = arith.constant 2.0 : f32
  %p = arith.constant true
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    tile.atomic_rmw max %f -> %out[%c0] : f32 -> memref<128xf32>
    %old = tile.atomic_rmw add %one -> %flags[%c1] {memory_order = #tile.memory_order<acq_rel>} : i32 -> memref<4xi32> -> i32
    tile.atomic_rmw min %one -> %u[%c0] {is_unsigned} : i32 -> memref<4xi32>
    %l = tile.atomic_load %flags[%c0] {memory_order = #tile.memory_order<acquire>} : memref<4xi32> -> i32
    tile.atomic_store %l -> %flags[%c0] {memory_order = #tile.memory_order<release>} : i32 -> memref<4xi32>
    memref.store %old, %u[%c1] : memref<4xi32>
    %n = tile.block_vote count %p -> i32
    memref.store %n, %u[%c0] : memref<4xi32>
  }
  return
}

// -----

// Barriers named at run time: bar.sync / bar.arrive with the values.
// CHECK-LABEL: gpu.func @partial_kernel
// CHECK: nvvm.barrier id = %{{.+}} number_of_threads = %{{.+}}
// CHECK: nvvm.barrier.arrive id = %{{.+}} number_of_threads = %{{.+}}
// CHECK: nvvm.barrier id = %{{.+}}
func.func @partial(%ids: memref<2xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %id = memref.load %ids[%c0] : memref<2xi32>
    tile.partial_barrier %id, %n : i32, i32
    tile.partial_barrier %id, %n arrive : i32, i32
    tile.partial_barrier %id : i32
  }
  return
}

// -----

// A thread leaves the kernel: PTX `exit` under the thread's condition.
// CHECK-LABEL: gpu.func @early_exit_kernel
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects "exit;"
// SM80-LABEL: gpu.func @early_exit_kernel
// SM80: llvm.inline_asm has_side_effects "exit;"
func.func @early_exit(%out: memref<128xi32>, %n: index) {
  %c1 = arith.constant 1 : index
  %v = arith.constant 7 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %tx = tile.thread_id : index
    %done = arith.cmpi uge, %tx, %n : index
    scf.if %done {
      tile.thread_return
    }
    memref.store %v, %out[%tx] : memref<128xi32>
  }
  return
}

// -----

// The grid barrier of a cooperative launch (cooperative groups' protocol:
// the driver's workspace in %envreg1:%envreg2, a trap without it, thread 0
// of each block adds to its barrier word and spins on the top bit); the
// launch says how the runtime launches it.
// CHECK-LABEL: func.func @grid
// CHECK: gpu.launch_func @grid_kernel::@grid_kernel
// CHECK-SAME: tile.launch = {cooperative}
// CHECK-LABEL: gpu.func @grid_kernel
// CHECK: "mov.u32 $0, %envreg1;"
// CHECK: "mov.u32 $0, %envreg2;"
// CHECK: "trap;"
// CHECK: gpu.barrier
// CHECK: "atom.add.release.gpu.u32 $0, [$1], $2;"
// CHECK: scf.while
// CHECK: "ld.acquire.gpu.u32 $0, [$1];"
// CHECK: gpu.barrier
// SM80-LABEL: func.func @grid
// SM80: tile.launch = {cooperative}
func.func @grid() {
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    tile.grid_sync
  }
  return
}
