// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(tile-layout-inference{wgmma=true}),convert-tile-to-nvvm{chip=sm_90a features=+ptx80})'

// A barrier that threads wait on but nothing arrives on: the wait would
// never return (a TMA copy announces bytes, it does not arrive).
func.func @never_arrived(%A: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %as = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    // expected-note @+1 {{the barrier is allocated here}}
    %bar = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    tile.role threads(128 to 256) {
      tile.copy %A[%c0, %c0] [64, 64] to %as[%c0, %c0] [64, 64] via %bar[%c0] {expect_tx} : memref<4096x4096xf16> to memref<64x64xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    }
    tile.role threads(0 to 128) {
      // expected-error @+1 {{'tile.barrier_wait' op waits on a barrier that nothing arrives on}}
      tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
    }
  }
  return
}

// -----

// Every thread of a 128-thread role arrives: 100 arrivals per phase can
// never be reached.
func.func @arrive_count(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.alloc_barrier' op expects 100 arrivals per phase, but the threads that arrive on it (T.barrier_arrive: every thread of its role) come in groups of 128, which cannot add up to 100}}
    %bar = tile.alloc_barrier arrivals(100) : memref<1xi64, #tile.scope<shared>>
    tile.role threads(0 to 128) {
      tile.barrier_arrive %bar[%c0] per_thread : memref<1xi64, #tile.scope<shared>>
    }
    tile.role threads(128 to 256) {
      tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
    }
  }
  return
}

// -----

// Three warpgroups asking for 240 registers each need 92160 of the 65536.
func.func @register_budget(%n: index) {
  // expected-error @+1 {{'tile.kernel' op its roles' register budgets (T.set_max_nreg) add up to 92160 registers, more than the 65536 of the register file}}
  tile.kernel blocks(%bx) in (%n) threads(384) {
    tile.role threads(0 to 128) {
      // expected-note @+1 {{240 registers for each thread of the role of [0, 128)}}
      tile.set_max_nreg 240 increase
    }
    tile.role threads(128 to 256) {
      // expected-note @+1 {{240 registers for each thread of the role of [128, 256)}}
      tile.set_max_nreg 240 increase
    }
    tile.role threads(256 to 384) {
      // expected-note @+1 {{240 registers for each thread of the role of [256, 384)}}
      tile.set_max_nreg 240 increase
    }
  }
  return
}


// -----

// A role of one thread may issue TMA copies and arrive on barriers, but
// a tile operation spread over threads needs whole warps.
func.func @tile_op_in_thread_role(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.role threads(0 to 1) {
      %z = arith.constant 0.0 : f32
      // expected-error @+1 {{'tile.fill' op runs in a role of 1 threads; tile operations need whole warps (a multiple of 32 threads)}}
      tile.fill %f, %z : memref<64xf32, #tile.scope<fragment>>, f32
    }
  }
  return
}

// -----

// A role of one thread made of plain code (`if tx == 0: A[bx] = 7`): no
// error (the role's terminator is no tile operation).
func.func @store_in_thread_role(%A: memref<8xi32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    tile.role threads(0 to 1) {
      %c7 = arith.constant 7 : i32
      memref.store %c7, %A[%bx] : memref<8xi32>
    }
  }
  return
}

// -----

// A wait on parity 1 of a barrier nothing arrives on is no error: the
// barrier is still in its first phase, so the wait returns at once (a
// producer's first round on its `empty` slots). Only the parity-0 wait
// would hang.
func.func @never_arrived_parity(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-note @+1 {{the barrier is allocated here}}
    %bar = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c1 : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.barrier_wait' op waits on a barrier that nothing arrives on}}
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}
