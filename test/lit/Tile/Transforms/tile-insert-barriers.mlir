// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-insert-barriers))' | FileCheck %s

// A synchronous copy into shared memory, then a gemm reading it: one barrier
// between them (write then read). In a loop the next trip's copy overwrites
// what this trip's gemm read: a second barrier before the copy.
// CHECK-LABEL: func.func @copy_then_gemm
// CHECK: scf.for
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.copy %{{.+}} to %[[A:.+]][%c0, %c0] [64, 32]
// CHECK-NEXT: tile.copy %{{.+}} to %[[B:.+]][%c0, %c0] [32, 64]
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: }
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @copy_then_gemm(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    scf.for %k = %c0 to %n step %c1 {
      tile.copy %A[%c0, %k] [64, 32] to %a[%c0, %c0] [64, 32] : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.copy %B[%k, %c0] [32, 64] to %b[%c0, %c0] [32, 64] : memref<?x?xf16> to memref<32x64xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Fragments are private to each thread and two reads never conflict: no
// barrier.
// CHECK-LABEL: func.func @no_conflict
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @no_conflict(%A: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64x64xf32, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %g = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %A[%c0, %c0] [64, 64] to %f[%c0, %c0] [64, 64] : memref<?x?xf32> to memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %f[%c0, %c0] [64, 64] to %g[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf32, #tile.scope<fragment>>
    %zero = arith.constant 0.0 : f32
    tile.fill %s, %zero : memref<64x64xf32, #tile.scope<shared>>, f32
  }
  return
}

// -----

// Element accesses count too: a store to shared memory in one parallel loop
// and a load of it in the next need a barrier; an existing barrier is
// reused, and a write in one branch of an if reaches the code after it.
// CHECK-LABEL: func.func @elements_and_branches
// CHECK: tile.parallel
// CHECK: memref.store
// CHECK: tile.barrier
// CHECK-NEXT: tile.parallel
// CHECK: memref.load
// CHECK: tile.barrier
// CHECK-NOT: tile.barrier
// CHECK: scf.if
// CHECK: tile.fill
// CHECK: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.copy
// CHECK: return
func.func @elements_and_branches(%O: memref<?xf32>, %n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<128xf32, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<128xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (128) {
      %x = arith.index_cast %i : index to i32
      %y = arith.sitofp %x : i32 to f32
      memref.store %y, %s[%i] : memref<128xf32, #tile.scope<shared>>
    }
    tile.parallel (%i) in (128) {
      %j = arith.subi %i, %i : index
      %x = memref.load %s[%j] : memref<128xf32, #tile.scope<shared>>
      memref.store %x, %f[%i] : memref<128xf32, #tile.scope<fragment>>
    }
    tile.barrier
    scf.if %p {
      %one = arith.constant 1.0 : f32
      tile.fill %s, %one : memref<128xf32, #tile.scope<shared>>, f32
    }
    tile.copy %s[%c0] [128] to %O[%c0] [128] : memref<128xf32, #tile.scope<shared>> to memref<?xf32>
  }
  return
}

// -----

// Asynchronous copies into one buffer need no order among themselves, and
// what they write lands at the thread's tile.async_wait, not before.
// CHECK-LABEL: func.func @async_copies_in_flight
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @async_copies_in_flight(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 32] to %a[%c0, %c0] [64, 32] {async} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 32] to %a[%c0, %c0] [64, 32] {async} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
  }
  return
}

// -----

// The program's own asynchronous copies (TileLang's T.async_copy and
// T.ptx_cp_async, then T.ptx_wait_group): after the wait, each thread has
// its own copies; other threads' reads need a barrier after the wait (a
// barrier between the copy and the wait does not make them land). In a
// loop, the next trip's copy into the buffer follows this trip's reads of
// it: a barrier before the copy.
// CHECK-LABEL: func.func @async_copy_then_wait
// CHECK: tile.copy %{{.+}} to %[[S:.+]][%c0, %c0] [1, 64] {async}
// CHECK-NEXT: tile.async_commit
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.async_wait 0
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.copy %[[S]]
// CHECK: scf.for
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.cp_async
// CHECK-NEXT: tile.async_commit
// CHECK-NEXT: tile.async_wait 0
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: memref.load %[[S]]
func.func @async_copy_then_wait(%A: memref<?x?xf32>, %O: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %s = tile.alloc_shared : memref<2x64xf32, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.copy %A[%bx, %c0] [1, 64] to %s[%c0, %c0] [1, 64] {async} : memref<?x?xf32> to memref<2x64xf32, #tile.scope<shared>>
    tile.async_commit
    tile.barrier
    tile.async_wait 0
    tile.copy %s[%c0, %c0] [1, 64] to %f[%c0] [64] : memref<2x64xf32, #tile.scope<shared>> to memref<64xf32, #tile.scope<fragment>>
    scf.for %k = %c0 to %n step %c1 {
      tile.cp_async %A[%k, %c0] to %s[%c1, %c0] elements(4) : memref<?x?xf32> to memref<2x64xf32, #tile.scope<shared>>
      tile.async_commit
      tile.async_wait 0
      %v = memref.load %s[%c1, %k] : memref<2x64xf32, #tile.scope<shared>>
      memref.store %v, %O[%k] : memref<?xf32>
    }
  }
  return
}

// -----

// A tile written before a loop and only read inside it (the Q tile of
// attention): one barrier before the loop, none in the body.
// CHECK-LABEL: func.func @hoisted_before_loop
// CHECK: tile.copy %{{.+}} to %[[Q:.+]][%c0, %c0] [64, 32]
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: scf.for
// CHECK-NOT: tile.barrier
// CHECK: tile.gemm %[[Q]]
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @hoisted_before_loop(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %q = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %A[%c0, %c0] [64, 32] to %q[%c0, %c0] [64, 32] : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
    scf.for %i = %c0 to %n step %c1 {
      tile.gemm %q, %k, %c : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Sibling roles are one group against the rest of the kernel (TileLang's
// `if tx < 128:` regions): a barrier after the group, where the copy of all
// threads reads what a role wrote, and a barrier before it, where a role
// overwrites what all threads read; none between the roles (they run
// concurrently and order their own accesses).
// CHECK-LABEL: func.func @role_group
// CHECK: tile.copy %[[S:[0-9]+]][%c0, %c0] [64, 64] to %arg1[%c0, %c0] [64, 64]
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.role threads(0 to 128) {
// CHECK-NOT: tile.barrier
// CHECK: tile.role threads(128 to 256) {
// CHECK-NOT: tile.barrier
// CHECK: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.copy %[[S]]
func.func @role_group(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f16
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %t = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 64] to %s[%c0, %c0] [64, 64] : memref<?x?xf16> to memref<64x64xf16, #tile.scope<shared>>
    tile.copy %s[%c0, %c0] [64, 64] to %B[%c0, %c0] [64, 64] : memref<64x64xf16, #tile.scope<shared>> to memref<?x?xf16>
    tile.role threads(0 to 128) {
      tile.fill %s, %f : memref<64x64xf16, #tile.scope<shared>>, f16
    }
    %i = arith.addi %c0, %c1 : index
    tile.role threads(128 to 256) {
      tile.fill %t, %f : memref<64x64xf16, #tile.scope<shared>>, f16
    }
    tile.copy %s[%c0, %c0] [64, 64] to %B[%i, %c0] [64, 64] : memref<64x64xf16, #tile.scope<shared>> to memref<?x?xf16>
  }
  return
}

// -----

// The program's own named barrier over every thread of the role (TileLang's
// radix top-k: `T.sync_threads(3, 256)` in the role of `if tx < 256`) orders
// the role's accesses: no barrier goes after it, and in particular none
// inside the `if tx < 256 - offset` branches, which not every thread of the
// role reaches (a barrier there hung the kernel). A named barrier over fewer
// threads than the role has does not count.
// CHECK-LABEL: func.func @named_barrier_in_role
// CHECK: tile.role threads(0 to 256) {
// CHECK: scf.for
// CHECK-NEXT: tile.named_barrier 3, 256
// CHECK-NEXT: arith.cmpi
// CHECK-NEXT: scf.if
// CHECK-NOT: tile.barrier
// CHECK: tile.named_barrier 3, 256
// CHECK-NEXT: scf.if
// CHECK-NOT: tile.barrier
// CHECK: }
// CHECK: tile.named_barrier 4, 128
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: memref.load
func.func @named_barrier_in_role(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c255 = arith.constant 255 : index
  tile.kernel blocks(%bx) in (%n) threads(1024) {
    %s = tile.alloc_shared : memref<257xi32, #tile.scope<shared>>
    %t = tile.alloc_shared : memref<257xi32, #tile.scope<shared>>
    %tx = tile.thread_id : index
    tile.role threads(0 to 256) {
      scf.for %i = %c0 to %c8 step %c1 {
        tile.named_barrier 3, 256
        %lt = arith.cmpi slt, %tx, %c255 : index
        scf.if %lt {
          %x = memref.load %s[%tx] : memref<257xi32, #tile.scope<shared>>
          %t1 = arith.addi %tx, %c1 : index
          %x1 = memref.load %s[%t1] : memref<257xi32, #tile.scope<shared>>
          %sum = arith.addi %x, %x1 : i32
          memref.store %sum, %t[%tx] : memref<257xi32, #tile.scope<shared>>
        }
        tile.named_barrier 3, 256
        scf.if %lt {
          %y = memref.load %t[%tx] : memref<257xi32, #tile.scope<shared>>
          memref.store %y, %s[%tx] : memref<257xi32, #tile.scope<shared>>
        }
      }
      tile.named_barrier 4, 128
      %z = memref.load %s[%c0] : memref<257xi32, #tile.scope<shared>>
      memref.store %z, %s[%c1] : memref<257xi32, #tile.scope<shared>>
    }
  }
  return
}

// -----

// A branch whose condition differs between threads (TileLang's radix top-k:
// `if input_idx < end:` around an atomic slot and a store at it) is one op:
// the barrier that orders its accesses after the earlier ones goes before
// it, none inside (threads that skip the branch would never arrive), also
// in a loop whose bounds differ between threads. Atomics need no order among
// themselves (the histogram's atomic adds in every trip get no barrier), but
// do against plain accesses (the fill before them, the read after them).
// CHECK-LABEL: func.func @varying_branch
// CHECK: tile.fill
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: scf.for
// CHECK-NOT: tile.barrier
// CHECK: tile.atomic_add
// CHECK-NOT: tile.barrier
// CHECK: arith.cmpi
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: scf.if
// CHECK-NOT: tile.barrier
// CHECK: tile.atomic_rmw
// CHECK-NOT: tile.barrier
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: scf.for
// CHECK-NOT: tile.barrier
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: memref.load
func.func @varying_branch(%n: index, %end: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %hist = tile.alloc_shared : memref<257xi32, #tile.scope<shared>>
    %out = tile.alloc_shared : memref<4096xi32, #tile.scope<shared>>
    %tx = tile.thread_id : index
    tile.fill %hist, %zero : memref<257xi32, #tile.scope<shared>>, i32
    scf.for %i = %c0 to %c4 step %c1 {
      %k = arith.addi %tx, %i : index
      %ok = arith.cmpi slt, %k, %end : index
      scf.if %ok {
        tile.atomic_add %one -> %hist[%tx] : i32 -> memref<257xi32, #tile.scope<shared>>
      }
      scf.yield
    }
    %lt = arith.cmpi slt, %tx, %end : index
    scf.if %lt {
      %pos = tile.atomic_rmw add %one -> %hist[%c0] : i32 -> memref<257xi32, #tile.scope<shared>> -> i32
      %p = arith.index_cast %pos : i32 to index
      %v = memref.load %hist[%tx] : memref<257xi32, #tile.scope<shared>>
      memref.store %v, %out[%p] : memref<4096xi32, #tile.scope<shared>>
    }
    scf.for %j = %c0 to %tx step %c1 {
      %w = memref.load %out[%j] : memref<4096xi32, #tile.scope<shared>>
      memref.store %w, %out[%j] : memref<4096xi32, #tile.scope<shared>>
    }
    %z = memref.load %out[%c0] : memref<4096xi32, #tile.scope<shared>>
    memref.store %z, %hist[%c1] : memref<257xi32, #tile.scope<shared>>
  }
  return
}

// -----

// A role of one thread (`if tx == 0:` computing a prefix sum in shared
// memory, TileOPs' MoE permutation): its accesses follow each other in one
// thread, and no barrier can synchronize part of a warp, so none goes
// inside; the role is one op against the block's accesses around it.
// CHECK-LABEL: func.func @single_thread_role
// CHECK: tile.fill
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.role threads(0 to 1) {
// CHECK-NEXT: scf.for
// CHECK-NOT: tile.barrier
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.copy
func.func @single_thread_role(%B: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<9xf32, #tile.scope<shared>>
    tile.fill %s, %f : memref<9xf32, #tile.scope<shared>>, f32
    tile.role threads(0 to 1) {
      scf.for %e = %c0 to %c8 step %c1 {
        %v = memref.load %s[%e] : memref<9xf32, #tile.scope<shared>>
        %e1 = arith.addi %e, %c1 : index
        memref.store %v, %s[%e1] : memref<9xf32, #tile.scope<shared>>
      }
    }
    tile.copy %s[%c0] [8] to %B[%c0] [8] : memref<9xf32, #tile.scope<shared>> to memref<?xf32>
  }
  return
}

// -----

// Adjacent roles over disjoint threads run concurrently (no barrier between
// them); a role over threads an earlier role had runs after it, so what
// the later group reads of the first one's writes is ordered by a block
// barrier between the groups (TileLang's `if tx < 32:` block, then
// `if tx < 32: ... else: ...`; deepseek-ai/TileKernels' mHC pre-fuse).
// CHECK-LABEL: func.func @sequential_role_groups
// CHECK: tile.role threads(0 to 32)
// CHECK: tile.copy
// CHECK: }
// CHECK-NEXT: tile.barrier
// CHECK-NEXT: tile.role threads(0 to 32)
// CHECK-NOT: tile.barrier
// CHECK: tile.role threads(32 to 96)
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @sequential_role_groups(%A: memref<?xf32>, %O: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(96) {
    %s = tile.alloc_shared : memref<32xf32, #tile.scope<shared>>
    tile.role threads(0 to 32) {
      tile.copy %A[%c0] [32] to %s[%c0] [32] : memref<?xf32> to memref<32xf32, #tile.scope<shared>>
    }
    tile.role threads(0 to 32) {
      %v = memref.load %s[%c0] : memref<32xf32, #tile.scope<shared>>
      memref.store %v, %O[%c0] : memref<?xf32>
    }
    tile.role threads(32 to 96) {
      %v = memref.load %s[%c1] : memref<32xf32, #tile.scope<shared>>
      memref.store %v, %O[%c1] : memref<?xf32>
    }
  }
  return
}
