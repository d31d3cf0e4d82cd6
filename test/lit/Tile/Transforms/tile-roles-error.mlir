// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference{wgmma=true}))' -verify-diagnostics

// A fragment lives in the registers of one role's threads: another role
// cannot compute with it.
func.func @fragment_in_two_roles(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-note @+1 {{the fragment is allocated here}}
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.role threads(0 to 128) {
      %z0_0 = arith.constant 0.0 : f32
      // expected-note @+1 {{used here in the role of threads [0, 128)}}
      tile.fill %acc, %z0_0 : memref<64x64xf32, #tile.scope<fragment>>, f32
    }
    tile.role threads(128 to 256) {
      %z1_0 = arith.constant 1.0 : f32
      // expected-error @+1 {{uses a fragment in the role of threads [128, 256), but it lives in the registers of the role of threads [0, 128): a fragment belongs to one role}}
      tile.fill %acc, %z1_0 : memref<64x64xf32, #tile.scope<fragment>>, f32
    }
  }
  return
}

// -----

// A tile operation under a branch on the thread index that is not a role
// would run on only some of the threads it is spread over.
func.func @tile_op_under_thread_branch(%n: index) {
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    %tx = tile.thread_id : index
    %r = arith.remui %tx, %c32 : index
    %odd = arith.cmpi ne, %r, %c0 : index
    // expected-note @+1 {{the condition on the thread index}}
    scf.if %odd {
      %z0_0 = arith.constant 0.0 : f32
      // expected-error @+1 {{a tile operation under a condition on the thread index that is not a role}}
      tile.fill %f, %z0_0 : memref<64xf32, #tile.scope<fragment>>, f32
    }
  }
  return
}

// -----

// A fill of a thread's own buffer, and copies between it and memory, are
// each thread's alone: under a branch on the thread index they are no
// error (TileKernels' top-2 gate fills its registers under a per-token mask).
func.func @own_buffers_under_thread_branch(%A: memref<?x8xf32>, %n: index) {
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %l = tile.alloc_local : memref<8xf32, #tile.scope<local>>
    %tx = tile.thread_id : index
    %r = arith.remui %tx, %c32 : index
    %odd = arith.cmpi ne, %r, %c0 : index
    scf.if %odd {
      %z = arith.constant 0.0 : f32
      tile.fill %l, %z : memref<8xf32, #tile.scope<local>>, f32
      tile.copy %A[%tx, %c0] [1, 8] to %l[%c0] [8] : memref<?x8xf32> to memref<8xf32, #tile.scope<local>>
      tile.copy %l[%c0] [8] to %A[%tx, %c0] [1, 8] : memref<8xf32, #tile.scope<local>> to memref<?x8xf32>
    }
  }
  return
}
