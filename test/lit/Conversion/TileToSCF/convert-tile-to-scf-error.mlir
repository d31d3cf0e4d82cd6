// RUN: tile-opt %s -split-input-file -verify-diagnostics --convert-tile-to-scf

// The CPU backend runs a block as one thread of control: threads cannot
// arrive on a barrier and wait for each other.
func.func @mbarrier(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_barrier' op uses a transaction barrier (T.alloc_barrier, an mbarrier): threads arrive on it and wait for each other, which the CPU backend (one thread of control per block) cannot run: mbarriers need a GPU target}}
    %bar = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive %bar[%c0] per_thread : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @named_barrier(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.named_barrier' op synchronizes or copies per thread or per warp, which has no meaning on the CPU backend (one thread of control per block): compile for a GPU target}}
    tile.named_barrier 1, 64
  }
  return
}
