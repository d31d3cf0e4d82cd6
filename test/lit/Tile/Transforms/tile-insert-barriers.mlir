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

// Asynchronous copies are the pipeliner's to synchronize: none here.
// CHECK-LABEL: func.func @async_skipped
// CHECK-NOT: tile.barrier
// CHECK: return
func.func @async_skipped(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 32] to %a[%c0, %c0] [64, 32] {async} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 32] to %a[%c0, %c0] [64, 32] {async} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
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
