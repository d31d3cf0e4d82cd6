// RUN: tile-opt %s -split-input-file -verify-diagnostics --convert-tile-to-scf --canonicalize --cse | FileCheck %s

// A block is one thread of control standing for its 64 threads: an element
// update outside tile.parallel, which every thread of a GPU block makes, is
// repeated 64 times where that changes memory (add, tile.atomic_add) and
// made once where it does not (max, with fetch_max's rule); inside a
// parallel loop each iteration updates once. Every thread votes the same
// predicate: the count is 64. A warp barrier has nothing to wait for.
// CHECK-LABEL: func.func @atomics
// CHECK: %[[OLD:.+]] = memref.load %arg0[%c0]
// CHECK-NEXT: %[[WINS:.+]] = arith.cmpf ogt, %arg2, %[[OLD]]
// CHECK-NEXT: %[[NEW:.+]] = arith.select %[[WINS]], %arg2, %[[OLD]]
// CHECK-NEXT: memref.store %[[NEW]], %arg0[%c0]
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c1 {
// CHECK: arith.addi
// CHECK: scf.for %{{.+}} = %c0 to %c64 step %c1 {
// CHECK-NEXT: memref.atomic_rmw addf
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c1 {
// CHECK: arith.xori
// CHECK: memref.store %c64_i32, %arg1[%c1]
// CHECK-NOT: scf.for
func.func @atomics(%out: memref<16xf32>, %flags: memref<4xi32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %p = arith.constant true
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    tile.atomic_rmw max %v -> %out[%c0] : f32 -> memref<16xf32>
    tile.atomic_rmw add %one -> %flags[%c1] : i32 -> memref<4xi32>
    tile.atomic_add %v -> %out[%c1] : f32 -> memref<16xf32>
    tile.parallel (%i) in (16) {
      %old = tile.atomic_rmw bitxor %one -> %flags[%c0] : i32 -> memref<4xi32> -> i32
    }
    %n = tile.block_vote count %p -> i32
    tile.sync_warp %one
    tile.atomic_store %n -> %flags[%c1] {memory_order = #tile.memory_order<seq_cst>} : i32 -> memref<4xi32>
  }
  return
}

// -----

// The previous value of an update every thread makes would differ per
// thread.
func.func @prev(%flags: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{returns the previous value to each of the 32 threads of the block}}
    %old = tile.atomic_rmw add %one -> %flags[%c0] : i32 -> memref<4xi32> -> i32
    memref.store %old, %flags[%c1] : memref<4xi32>
  }
  return
}

// -----

// The CPU has no warps.
func.func @shuffle(%out: memref<4xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{is an operation of a warp's lanes, which the CPU backend (one thread of control per block, no warps) cannot run}}
    %s = tile.shuffle xor %v, %one, %one, %one : f32
    memref.store %s, %out[%c0] : memref<4xf32>
  }
  return
}

// -----

// Kernels run in program order: a programmatic dependent launch's wait is
// satisfied. A grid barrier cannot be run one block after another.
// CHECK-LABEL: func.func @launch
// CHECK-NOT: tile.pdl
func.func @launch() {
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(32) {
    tile.pdl_wait
    tile.pdl_trigger
  }
  return
}

// -----

func.func @grid() {
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(32) {
    // expected-error @+1 {{is a barrier of the whole grid, which the CPU backend (blocks run one after another) cannot run}}
    tile.grid_sync
  }
  return
}

// -----

// A named barrier of a block's threads has nothing to wait for when the
// block is one thread of control: it is erased.
// CHECK-LABEL: func.func @named_barrier_erased
// CHECK-NOT: tile.named_barrier
// CHECK: return
func.func @named_barrier_erased(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    tile.named_barrier 1, 64
  }
  return
}
