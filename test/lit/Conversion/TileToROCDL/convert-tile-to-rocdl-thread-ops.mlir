// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s

// A wave of 64 lanes: the shuffle reads the source lane that CUDA's
// segment rules give through ds_bpermute (the lane from mbcnt), the warp
// reduction takes six xor steps, votes are ballots; stores of per-thread
// values are every thread's.
// CHECK-LABEL: gpu.func @lanes_kernel
// CHECK: rocdl.mbcnt.lo
// CHECK: rocdl.mbcnt.hi
// CHECK-COUNT-7: rocdl.ds_bpermute
// CHECK-NOT: scf.if
// CHECK: memref.store
// CHECK: rocdl.ballot
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

// AMD GPUs have no lane match instruction (TileLang's HIP backend refuses
// it too).
func.func @match(%out: memref<64xi32>) {
  %c1 = arith.constant 1 : index
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    %tx = tile.thread_id : index
    %v = memref.load %out[%tx] : memref<64xi32>
    // expected-error @+1 {{matches values across lanes}}
    %r = tile.warp_match any %v, %m : i32
    memref.store %r, %out[%tx] : memref<64xi32>
  }
  return
}
