// RUN: tile-opt %s | FileCheck %s
// The printed form parses again to the same IR, and so does the generic form.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// The per-thread ops of TileThreadOps.td: lanes and warps, shuffles, votes,
// reductions, block votes, election and element atomics.
// CHECK-LABEL: func.func @thread_ops
func.func @thread_ops(%out: memref<128xf32>, %flags: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %w = arith.constant 16 : i32
  %t = arith.constant 64 : i32
  %mask = arith.constant -1 : i32
  %p = arith.constant true
  %f = arith.constant 2.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    // CHECK: tile.warp_size : index
    %ws = tile.warp_size : index
    // CHECK: tile.shuffle xor %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : f32
    %s = tile.shuffle xor %f, %one, %w, %mask : f32
    // CHECK: tile.shuffle up %{{.+}} : i32
    %u = tile.shuffle up %one, %one, %w, %mask : i32
    // CHECK: tile.warp_vote ballot %{{.+}}, %{{.+}} -> i64
    %b = tile.warp_vote ballot %p, %mask -> i64
    // CHECK: tile.warp_vote all %{{.+}}, %{{.+}} -> i32
    %a = tile.warp_vote all %p, %mask -> i32
    // CHECK: tile.warp_match any %{{.+}}, %{{.+}} : i32
    %m = tile.warp_match any %one, %mask : i32
    // CHECK: tile.active_mask -> i64
    %am = tile.active_mask -> i64
    // CHECK: tile.warp_reduce max %{{.+}} {is_unsigned} : i32
    %r = tile.warp_reduce max %one {is_unsigned} : i32
    // CHECK: tile.sync_warp %{{.+}}
    tile.sync_warp %mask
    // CHECK: tile.block_vote count %{{.+}} -> i32
    %n = tile.block_vote count %p -> i32
    // CHECK: tile.elect 64 -> i1
    %e = tile.elect 64 -> i1
    // CHECK: tile.partial_barrier %{{.+}}, %{{.+}} : i32, i32
    tile.partial_barrier %one, %t : i32, i32
    // CHECK: tile.partial_barrier %{{.+}}, %{{.+}} arrive : i32, i32
    tile.partial_barrier %one, %t arrive : i32, i32
    // CHECK: tile.partial_barrier %{{.+}} : i32
    tile.partial_barrier %one : i32
    // CHECK: tile.thread_return
    tile.thread_return
    // CHECK: tile.pdl_wait
    tile.pdl_wait
    // CHECK: tile.grid_sync
    tile.grid_sync
    // CHECK: tile.pdl_trigger
    tile.pdl_trigger
    // CHECK: tile.atomic_rmw max %{{.+}} -> %{{.+}}[%{{.+}}] : f32 -> memref<128xf32>
    tile.atomic_rmw max %f -> %out[%c0] : f32 -> memref<128xf32>
    // CHECK: tile.atomic_rmw add %{{.+}} -> %{{.+}}[%{{.+}}] {memory_order = #tile.memory_order<acq_rel>} : i32 -> memref<4xi32> -> i32
    %old = tile.atomic_rmw add %one -> %flags[%c1] {memory_order = #tile.memory_order<acq_rel>} : i32 -> memref<4xi32> -> i32
    // CHECK: tile.atomic_load %{{.+}}[%{{.+}}] {memory_order = #tile.memory_order<acquire>} : memref<4xi32> -> i32
    %l = tile.atomic_load %flags[%c0] {memory_order = #tile.memory_order<acquire>} : memref<4xi32> -> i32
    // CHECK: tile.atomic_store %{{.+}} -> %{{.+}}[%{{.+}}] {memory_order = #tile.memory_order<release>} : i32 -> memref<4xi32>
    tile.atomic_store %l -> %flags[%c0] {memory_order = #tile.memory_order<release>} : i32 -> memref<4xi32>
  }
  return
}

// CHECK-LABEL: func.func @cluster_ops
func.func @cluster_ops() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %bars = tile.alloc_barrier arrivals(256) : memref<1xi64, #tile.scope<shared>>
    // CHECK: tile.cluster_barrier arrive
    tile.cluster_barrier arrive
    // CHECK: tile.cluster_barrier wait
    tile.cluster_barrier wait
    // CHECK: tile.cluster_rank : i32
    %r = tile.cluster_rank : i32
    // CHECK: tile.barrier_arrive_rank %{{.+}}[%{{.+}}], %{{.+}} : memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive_rank %bars[%c0], %r : memref<1xi64, #tile.scope<shared>>
    %s = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<4x64xf32, #tile.scope<shared>>
    // CHECK: tile.cluster_copy %{{.+}}[%{{.+}}, %{{.+}}] [4, 32] to %{{.+}}[%{{.+}}, %{{.+}}] [4, 32] rank(%{{.+}}) via %{{.+}}[%{{.+}}] : memref<4x64xf32, #tile.scope<shared>> to memref<4x64xf32, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    tile.cluster_copy %s[%c0, %c0] [4, 32] to %d[%c0, %c0] [4, 32] rank(%r) via %bars[%c0]
        : memref<4x64xf32, #tile.scope<shared>> to memref<4x64xf32, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    // CHECK: tile.cluster_copy %{{.+}}[%{{.+}}] [1, 64] to %{{.+}}[%{{.+}}] [64, 1] rank(%{{.+}}) : memref<4x64xf32, #tile.scope<shared>> to memref<64x1xf32, #tile.scope<shared>>
    %col = tile.alloc_shared : memref<64x1xf32, #tile.scope<shared>>
    tile.cluster_copy %s[%c0, %c0] [1, 64] to %col[%c0, %c0] [64, 1] rank(%r)
        : memref<4x64xf32, #tile.scope<shared>> to memref<64x1xf32, #tile.scope<shared>>
  }
  return
}

// CHECK-LABEL: func.func @multicast_mask
func.func @multicast_mask(%A: memref<512x512xf16>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) attributes {tile.cluster = array<i64: 4, 1, 1>} {
    %s = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %bar = tile.alloc_barrier arrivals(4) : memref<1xi64, #tile.scope<shared>>
    // CHECK: via %{{.+}}[%{{.+}}] {eviction = #tile.eviction<evict_first>, expect_tx, multicast_mask = 6 : i64}
    tile.copy %A[%c0, %c0] [128, 64] to %s[%c0, %c0] [128, 64] via %bar[%c0] {expect_tx, multicast_mask = 6 : i64, eviction = #tile.eviction<evict_first>}
        : memref<512x512xf16> to memref<128x64xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
  }
  return
}
