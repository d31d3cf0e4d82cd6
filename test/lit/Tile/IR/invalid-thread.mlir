// RUN: tile-opt %s -split-input-file -verify-diagnostics

// Shuffles move 8 to 64 bits in segments of a power-of-two width.
func.func @shuffle_width(%v: f32) {
  %c1 = arith.constant 1 : index
  %w = arith.constant 12 : i32
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.shuffle' op width must be a power of two in [1, 32], got 12}}
    %s = tile.shuffle idx %v, %m, %w, %m : f32
  }
  return
}

// -----

func.func @shuffle_bits(%v: i1) {
  %c1 = arith.constant 1 : index
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.shuffle' op shuffles values of 8, 16, 32 or 64 bits, got 'i1'}}
    %s = tile.shuffle idx %v, %m, %m, %m : i1
  }
  return
}

// -----

func.func @ballot_type(%p: i1) {
  %c1 = arith.constant 1 : index
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.warp_vote' op a ballot vote gives 'i64', got 'i32'}}
    %b = tile.warp_vote ballot %p, %m -> i32
  }
  return
}

// -----

func.func @match_bits(%v: i16) {
  %c1 = arith.constant 1 : index
  %m = arith.constant -1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.warp_match' op matches values of 32 or 64 bits, got 'i16'}}
    %r = tile.warp_match any %v, %m : i16
  }
  return
}

// -----

func.func @reduce_bitwise_float(%v: f32) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.warp_reduce' op 'bitor' needs an integer value, got 'f32'}}
    %r = tile.warp_reduce bitor %v : f32
  }
  return
}

// -----

// A block vote is a barrier of every thread of the block.
func.func @block_vote_in_role(%p: i1) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(256) {
    tile.role threads(0 to 128) {
      // expected-error @+1 {{'tile.block_vote' op is a barrier of the whole block}}
      %n = tile.block_vote count %p -> i32
    }
  }
  return
}

// -----

func.func @elect_extent() {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.elect' op extent must be non-negative, got -1}}
    %e = tile.elect -1 -> i1
  }
  return
}

// -----

func.func @atomic_scope(%v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %l = tile.alloc_local : memref<4xf32, #tile.scope<local>>
    // expected-error @+1 {{'tile.atomic_rmw' op destination must be in global or shared memory, got local}}
    tile.atomic_rmw add %v -> %l[%c0] : f32 -> memref<4xf32, #tile.scope<local>>
  }
  return
}

// -----

func.func @atomic_type(%out: memref<4xf32>, %v: f16) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.atomic_rmw' op value type 'f16' does not match the destination element type 'f32'}}
    tile.atomic_rmw max %v -> %out[%c0] : f16 -> memref<4xf32>
  }
  return
}

// -----

func.func @atomic_bitwise_float(%out: memref<4xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.atomic_rmw' op 'bitor' needs an integer value, got 'f32'}}
    tile.atomic_rmw bitor %v -> %out[%c0] : f32 -> memref<4xf32>
  }
  return
}

// -----

func.func @atomic_offsets(%out: memref<4x4xi32>, %v: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.atomic_rmw' op expects 2 offsets (the destination rank), got 1}}
    tile.atomic_rmw add %v -> %out[%c0] : i32 -> memref<4x4xi32>
  }
  return
}

// -----

func.func @atomic_load_order(%src: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.atomic_load' op an atomic load cannot have memory order release}}
    %v = tile.atomic_load %src[%c0] {memory_order = #tile.memory_order<release>} : memref<4xi32> -> i32
  }
  return
}

// -----

func.func @atomic_store_order(%dst: memref<4xi32>, %v: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    // expected-error @+1 {{'tile.atomic_store' op an atomic store cannot have memory order acquire}}
    tile.atomic_store %v -> %dst[%c0] {memory_order = #tile.memory_order<acquire>} : i32 -> memref<4xi32>
  }
  return
}

// -----

func.func @partial_barrier_id() {
  %c1 = arith.constant 1 : index
  %id = arith.constant 16 : i32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    // expected-error @+1 {{'tile.partial_barrier' op id must be in [0, 15], got 16}}
    tile.partial_barrier %id : i32
  }
  return
}

// -----

func.func @partial_barrier_threads(%id: i32) {
  %c1 = arith.constant 1 : index
  %n = arith.constant 96 : i32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    // expected-error @+1 {{'tile.partial_barrier' op threads must be a multiple of 32 in [32, 64] (the kernel's threads), got 96}}
    tile.partial_barrier %id, %n : i32, i32
  }
  return
}

// -----

func.func @partial_barrier_arrive(%id: i32) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    // expected-error @+1 {{'tile.partial_barrier' op an arrival names the threads of the barrier}}
    tile.partial_barrier %id arrive : i32
  }
  return
}

// -----

// A grid barrier is every thread's.
func.func @grid_sync_in_parallel() {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    tile.parallel (%i) in (64) {
      // expected-error @+1 {{'tile.grid_sync' op is a barrier of the whole grid}}
      tile.grid_sync
    }
  }
  return
}

// -----

func.func @cluster_barrier_without_clusters() {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    // expected-error @+1 {{'tile.cluster_barrier' op synchronizes the blocks of a cluster, but the kernel runs without clusters}}
    tile.cluster_barrier arrive
  }
  return
}
