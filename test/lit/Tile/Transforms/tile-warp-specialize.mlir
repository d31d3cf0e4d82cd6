// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize),canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize{pingpong=false}),canonicalize,cse)' | FileCheck %s --check-prefix=NOPP

// A 128x256x64 GEMM tile, 4 stages, 256 threads, on a constant 16 x 32 grid.
// Both copies can run on TMA (kernel arguments with 8 KB row strides into
// whole shared buffers, offsets that are multiples of 64 and 256 elements):
// the buffers become 4-slot rings with their 128-byte swizzle fixed, guarded
// by `full` (one arrival, 48 KB of transactions per stage) and `empty`
// barriers. B does not depend on the row block (%by), so pairs of row blocks
// form clusters (1, 2, 1) that multicast B; `empty` then expects the 8
// consumer warps of both blocks. The producer waits for an empty slot with
// the flipped parity of its round, announces the bytes and issues the copies
// via `full`; the consumer waits for `full`, issues the gemm asynchronously,
// waits until only this iteration's gemm is in flight and releases the
// previous slot in both blocks of the cluster.
// CHECK-LABEL: func.func @gemm
// CHECK: tile.kernel blocks(%[[BX:.+]], %[[BY:.+]]) in (%c16, %c32) threads(256)
// CHECK-DAG: %[[A:.+]] = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x128x64xf16, #tile.scope<shared>>
// CHECK-DAG: %[[B:.+]] = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x64x256xf16, #tile.scope<shared>>
// CHECK-DAG: %[[FULL:.+]] = tile.alloc_barrier arrivals(1) : memref<4xi64, #tile.scope<shared>>
// CHECK-DAG: %[[EMPTY:.+]] = tile.alloc_barrier arrivals(16) : memref<4xi64, #tile.scope<shared>>
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   scf.for %[[K:.+]] = %c0 to %{{.+}} step %c1 {
// CHECK:     %[[S:.+]] = arith.remui %[[K]], %c4
// CHECK:     %[[R:.+]] = arith.divui %[[K]], %c4
// CHECK:     %[[P:.+]] = arith.remui %[[R]], %c2
// CHECK:     %[[FLIP:.+]] = arith.xori %[[P]], %c1
// CHECK:     tile.barrier_wait %[[EMPTY]][%[[S]]], %[[FLIP]]
// CHECK:     tile.barrier_arrive %[[FULL]][%[[S]]] expect_tx(49152)
// CHECK:     %[[AS:.+]] = memref.subview %[[A]][%[[S]], 0, 0] [1, 128, 64] [1, 1, 1]
// CHECK:     tile.copy %{{.+}}[%{{.+}}, %{{.+}}] [128, 64] to %[[AS]][%c0, %c0] [128, 64] via %[[FULL]][%[[S]]] :
// CHECK:     %[[BS:.+]] = memref.subview %[[B]][%[[S]], 0, 0] [1, 64, 256] [1, 1, 1]
// CHECK:     tile.copy %{{.+}}[%{{.+}}, %{{.+}}] [64, 256] to %[[BS]][%c0, %c0] [64, 256] via %[[FULL]][%[[S]]] {multicast = 2 : i64}
// CHECK: } consumer {
// CHECK:   tile.fill
// CHECK:   scf.for %[[K2:.+]] = %c0 to %{{.+}} step %c1 {
// CHECK:     %[[S2:.+]] = arith.remui %[[K2]], %c4
// CHECK:     tile.barrier_wait %[[FULL]][%[[S2]]], %{{.+}}
// CHECK:     tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {async}
// CHECK:     tile.gemm_wait 1
// CHECK:     %[[NOTFIRST:.+]] = arith.cmpi ugt, %[[K2]], %c0
// CHECK:     scf.if %[[NOTFIRST]] {
// CHECK:       tile.barrier_arrive %[[EMPTY]][%{{.+}}] {cluster}
// CHECK:   tile.gemm_wait 0
// CHECK:   tile.copy %{{.+}} to %{{.+}}[%{{.+}}, %{{.+}}] [128, 256]
// CHECK: } {cluster = array<i64: 1, 2, 1>}
// CHECK-NOT: tile.pipelined
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(256) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x256xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x256xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
    %m = arith.muli %by, %c1 : index
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 256)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 4 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n0] [64, 256] to %b[%c0, %c0] [64, 256] : memref<4096x4096xf16> to memref<64x256xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x256xf16, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}

// -----

// The row stride of a 45-column f16 tensor is 90 bytes, not a multiple of 16:
// no TMA, the loop is left to tile-pipeline.
// CHECK-LABEL: func.func @unaligned_rows
// CHECK-NOT: tile.warp_specialize
// CHECK: tile.pipelined
func.func @unaligned_rows(%A: memref<128x45xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
      %kk = arith.muli %k, %c32 : index
      tile.copy %A[%c0, %kk] [64, 32] to %a[%c0, %c0] [64, 32] : memref<128x45xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.copy %a[%c0, %c0] [64, 32] to %f[%c0, %c0] [64, 32] : memref<64x32xf16, #tile.scope<shared>> to memref<64x32xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A dynamic grid: no cluster; a statement other than gemms in the loop (a
// copy out of the slot into a fragment): the consumer releases each slot in
// its own iteration, without async gemms.
// CHECK-LABEL: func.func @no_overlap
// CHECK: tile.alloc_barrier arrivals(4)
// CHECK: tile.warp_specialize producer(128)
// CHECK: } consumer {
// CHECK:   tile.barrier_wait
// CHECK-NOT: {async}
// CHECK:   tile.copy %{{.+}} to %{{.+}} : memref<64x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>> to memref<64x32xf16, #tile.scope<fragment>>
// CHECK-NEXT: tile.barrier_arrive %{{.+}}[%{{.+}}] : memref<2xi64
// CHECK-NOT: cluster
func.func @no_overlap(%A: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
      %kk = arith.muli %k, %c32 : index
      tile.copy %A[%c0, %kk] [64, 32] to %a[%c0, %c0] [64, 32] : memref<4096x4096xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.copy %a[%c0, %c0] [64, 32] to %f[%c0, %c0] [64, 32] : memref<64x32xf16, #tile.scope<shared>> to memref<64x32xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Causal attention on 2 consumer warpgroups: the loop over K/V tiles ends at
// the query block's diagonal (its trip count depends on %bx), so blocks along
// x cannot share multicast copies (each issues a share of every iteration's
// boxes): no cluster; the K/V copies depend on %by, so no cluster along y
// either. Two synchronous gemms with other work between them: both are
// marked `pingpong` (the warpgroups take turns at them), unless the option
// is off.
// CHECK-LABEL: func.func @causal_attention
// CHECK: tile.warp_specialize producer(128)
// CHECK-NOT: multicast
// CHECK: } consumer {
// CHECK: scf.for
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {clear_accum, pingpong, policy = #tile.policy<full_row>, transpose_b}
// CHECK: tile.copy
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {pingpong, policy = #tile.policy<full_row>}
// CHECK-NEXT: tile.barrier_arrive %{{.+}}[%{{.+}}] : memref<2xi64
// CHECK-NOT: cluster
// NOPP-LABEL: func.func @causal_attention
// NOPP-NOT: pingpong
func.func @causal_attention(%Q: memref<4096x128xf16>, %K: memref<4x4096x128xf16>, %V: memref<4x4096x128xf16>, %O: memref<4096x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c32, %c4) threads(256) {
    %q = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<128x128xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %Q[%m0, %c0] [128, 128] to %q[%c0, %c0] [128, 128] : memref<4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.fill %o, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %n = arith.addi %bx, %c1 : index
    tile.pipelined %j = %c0 to %n step %c1 num_stages = 2 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 128)>(%j)
      tile.copy %K[%by, %kk, %c0] [1, 128, 128] to %k[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.copy %V[%by, %kk, %c0] [1, 128, 128] to %v[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.gemm %q, %k, %s {transpose_b, clear_accum, policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<shared>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
      tile.copy %s[%c0, %c0] [128, 128] to %p[%c0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<128x128xf16, #tile.scope<fragment>>
      tile.gemm %p, %v, %o {policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<fragment>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %o[%c0, %c0] [128, 128] to %O[%m0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x128xf32>
  }
  return
}

// -----

// A paged cache: the trip count comes from a length and each tile's page from
// a block table, both loaded from kernel arguments the kernel only reads. The
// producer loads them itself (the loop bound before its loop, the page in
// each iteration) and the K copy runs on TMA.
// CHECK-LABEL: func.func @paged_cache
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   %[[LEN:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<4xindex>
// CHECK:   scf.for %[[K:.+]] = %c0 to %[[LEN]] step %c1 {
// CHECK:     %[[PAGE:.+]] = memref.load %{{.+}}[%{{.+}}, %[[K]]] : memref<4x16xindex>
// CHECK:     tile.copy %{{.+}}[%[[PAGE]], %c0, %c0] [1, 64, 64] to %{{.+}} via
// CHECK: } consumer {
// CHECK-NOT: tile.pipelined
func.func @paged_cache(%K: memref<64x64x64xf16>, %table: memref<4x16xindex>, %lens: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    %k_s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x64xf16, #tile.scope<fragment>>
    %n = memref.load %lens[%bx] : memref<4xindex>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
      %page = memref.load %table[%bx, %k] : memref<4x16xindex>
      tile.copy %K[%page, %c0, %c0] [1, 64, 64] to %k_s[%c0, %c0] [64, 64] : memref<64x64x64xf16> to memref<64x64xf16, #tile.scope<shared>>
      tile.copy %k_s[%c0, %c0] [64, 64] to %f[%c0, %c0] [64, 64] : memref<64x64xf16, #tile.scope<shared>> to memref<64x64xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// The same loop with a block table the kernel also writes: the producer
// could read a stale page, so the loop is left to tile-pipeline.
// CHECK-LABEL: func.func @written_table
// CHECK-NOT: tile.warp_specialize
// CHECK: tile.pipelined
func.func @written_table(%K: memref<64x64x64xf16>, %table: memref<4x16xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    %k_s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x64xf16, #tile.scope<fragment>>
    memref.store %c0, %table[%bx, %c0] : memref<4x16xindex>
    tile.pipelined %k = %c0 to %c4 step %c1 num_stages = 2 {
      %page = memref.load %table[%bx, %k] : memref<4x16xindex>
      tile.copy %K[%page, %c0, %c0] [1, 64, 64] to %k_s[%c0, %c0] [64, 64] : memref<64x64x64xf16> to memref<64x64xf16, #tile.scope<shared>>
      tile.copy %k_s[%c0, %c0] [64, 64] to %f[%c0, %c0] [64, 64] : memref<64x64xf16, #tile.scope<shared>> to memref<64x64xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A 64 x 512 f16 tile (MLA's latent cache) is wider than the 256-element TMA
// box limit, but its 1 KB rows are stored as 128-byte panels and the lowering
// issues one 64-element box per panel: the copy runs on TMA, 64 KB a stage.
// CHECK-LABEL: func.func @wide_rows
// CHECK: tile.alloc_barrier arrivals(1)
// CHECK: tile.warp_specialize producer(128) {
// CHECK:   tile.barrier_arrive %{{.+}}[%{{.+}}] expect_tx(65536)
// CHECK:   tile.copy %{{.+}}[%{{.+}}, %c0] [64, 512] to %{{.+}} via
func.func @wide_rows(%A: memref<4096x512xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x512xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<64x512xf16, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %c64 step %c1 num_stages = 2 {
      %row = arith.muli %k, %c64 : index
      tile.copy %A[%row, %c0] [64, 512] to %a[%c0, %c0] [64, 512] : memref<4096x512xf16> to memref<64x512xf16, #tile.scope<shared>>
      tile.copy %a[%c0, %c0] [64, 512] to %f[%c0, %c0] [64, 512] : memref<64x512xf16, #tile.scope<shared>> to memref<64x512xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// The benchmark's 2:4 sparse tile (128x256, block_K = 128, 2 stages): the
// copies of A_sparse (128 x 64), E (128 x 8 int16: 16-byte rows, the
// narrowest TMA box) and B all run on TMA, 83968 bytes per stage, yet the
// consumer keeps no sparse gemm in flight: wgmma.mma_async.sp reads its
// metadata register while running, and the next iteration's metadata loads
// may reuse it (issue 8). The gemm is synchronous and each slot is released
// in its own iteration; nothing waits with a gemm pending.
// CHECK-LABEL: func.func @sparse_no_overlap
// CHECK-DAG: tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<2x128x8xi16, #tile.scope<shared>>
// CHECK-DAG: %[[FULL:.+]] = tile.alloc_barrier arrivals(1) : memref<2xi64, #tile.scope<shared>>
// CHECK-DAG: %[[EMPTY:.+]] = tile.alloc_barrier arrivals(8) : memref<2xi64, #tile.scope<shared>>
// CHECK: tile.warp_specialize producer(128) {
// CHECK:     tile.barrier_arrive %[[FULL]][%{{.+}}] expect_tx(83968)
// CHECK:     tile.copy %{{.+}} [128, 8] to %{{.+}} [128, 8] via %[[FULL]]
// CHECK: } consumer {
// CHECK:   scf.for %[[K:.+]] = %c0 to %{{.+}} step %c1 {
// CHECK:     %[[S:.+]] = arith.remui %[[K]], %c2
// CHECK:     tile.barrier_wait %[[FULL]][%[[S]]], %{{.+}}
// CHECK-NOT: async
// CHECK:     tile.gemm_sp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {policy = #tile.policy<full_row>} :
// CHECK-NEXT: tile.barrier_arrive %[[EMPTY]][%[[S]]] :
// CHECK-NOT: tile.gemm_wait
// NOPP-LABEL: func.func @sparse_no_overlap
// NOPP-NOT: async
// NOPP-NOT: tile.gemm_wait
// NOPP: return
func.func @sparse_no_overlap(%A: memref<8192x4096xf16>, %E: memref<8192x512xi16>, %B: memref<8192x8192xf16>, %C: memref<8192x8192xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(256) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<128x8xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<128x256xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x256xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 256)>(%bx)
    tile.pipelined %k = %c0 to %c64 step %c1 num_stages = 2 {
      %ka = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      %ke = affine.apply affine_map<(d0) -> (d0 * 8)>(%k)
      %kb = affine.apply affine_map<(d0) -> (d0 * 128)>(%k)
      tile.copy %A[%m0, %ka] [128, 64] to %a[%c0, %c0] [128, 64] : memref<8192x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %E[%m0, %ke] [128, 8] to %e[%c0, %c0] [128, 8] : memref<8192x512xi16> to memref<128x8xi16, #tile.scope<shared>>
      tile.copy %B[%kb, %n0] [128, 256] to %b[%c0, %c0] [128, 256] : memref<8192x8192xf16> to memref<128x256xf16, #tile.scope<shared>>
      tile.gemm_sp %a, %e, %b, %c {policy = #tile.policy<full_row>} : memref<128x64xf16, #tile.scope<shared>>, memref<128x8xi16, #tile.scope<shared>>, memref<128x256xf16, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<8192x8192xf32>
  }
  return
}

// -----

// An allocation after the first statement (`T.fill(g, 0)` between two
// `T.alloc_*`) moves above the specialized region, which uses it: it was
// left after it, and the IR did not verify ("does not dominate").
// CHECK-LABEL: func.func @alloc_after_fill
// CHECK: %[[G:.+]] = tile.alloc_fragment : memref<64x32xf16
// CHECK: %[[F:.+]] = tile.alloc_fragment : memref<64x32xf16
// CHECK: tile.warp_specialize
// CHECK: tile.fill %[[G]]
func.func @alloc_after_fill(%A: memref<64x1024xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f16
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %g = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    tile.fill %g, %zero : memref<64x32xf16, #tile.scope<fragment>>, f16
    %f = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
      %kk = arith.muli %k, %c32 : index
      tile.copy %A[%c0, %kk] [64, 32] to %a[%c0, %c0] [64, 32] : memref<64x1024xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.copy %a[%c0, %c0] [64, 32] to %f[%c0, %c0] [64, 32] : memref<64x32xf16, #tile.scope<shared>> to memref<64x32xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// One stage (TileLang's num_stages=0 or 1): the producer cannot run ahead,
// so the consumer waits for its gemm and releases the slot it read in the
// same iteration. (Keeping the gemm in flight and releasing the slot one
// iteration later, as with more stages, deadlocks: the producer waits for
// that release before it loads what the consumer waits for.)
// CHECK-LABEL: func.func @one_stage
// CHECK: tile.warp_specialize producer(128) {
// CHECK: } consumer {
// CHECK:   scf.for %[[K:.+]] = %c0 to %{{.+}} step %c1 {
// CHECK:     tile.barrier_wait %[[FULL:.+]][%c0], %{{.+}}
// CHECK-NOT: async
// CHECK:     tile.gemm %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-NOT: tile.gemm_wait 1
// CHECK-NOT: scf.if
// CHECK:     tile.barrier_arrive %{{.+}}[%c0] {cluster} :
// CHECK-NEXT: }
func.func @one_stage(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(128) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 1 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n0] [64, 128] to %b[%c0, %c0] [64, 128] : memref<4096x4096xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m0, %n0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
  }
  return
}

// -----

// Ring slots of small tiles start 128-byte aligned (every slot is a TMA
// destination): four (1, 8) float32 slots would be 32 bytes apart (the GPU
// campaign's CUDA_ERROR_MISALIGNED_ADDRESS), so each slot holds 4 rows;
// the (3, 48) float16 tile's rows are three 32-byte panels 3 * 32 bytes
// apart, so its slots hold 4 rows (panels 128 bytes apart). The copies,
// their boxes and expected bytes stay the tile's: 32 + 288 bytes.
// CHECK-LABEL: func.func @small_tile_ring
// CHECK-DAG: %[[X:.+]] = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<4x4x8xf32, #tile.scope<shared>>
// CHECK-DAG: %[[Y:.+]] = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<4x4x48xf16, #tile.scope<shared>>
// CHECK: tile.warp_specialize producer(128) {
// CHECK:     tile.barrier_arrive %{{.+}}[%{{.+}}] expect_tx(320)
// CHECK:     %[[XS:.+]] = memref.subview %[[X]][%{{.+}}, 0, 0] [1, 1, 8] [1, 1, 1]
// CHECK:     tile.copy %{{.+}} [1, 8] to %[[XS]][%c0, %c0] [1, 8] via
// CHECK:     %[[YS:.+]] = memref.subview %[[Y]][%{{.+}}, 0, 0] [1, 3, 48] [1, 1, 1]
// CHECK:     tile.copy %{{.+}} [3, 48] to %[[YS]][%c0, %c0] [3, 48] via
func.func @small_tile_ring(%X: memref<1x256xf32>, %Y: memref<3x768xf16>, %O: memref<1x8xf32>, %P: memref<3x48xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c1b = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1b) threads(128) {
    %x = tile.alloc_shared : memref<1x8xf32, #tile.scope<shared>>
    %y = tile.alloc_shared : memref<3x48xf16, #tile.scope<shared>>
    tile.pipelined %k = %c0 to %c16 step %c1 num_stages = 4 {
      %kx = affine.apply affine_map<(d0) -> (d0 * 8)>(%k)
      %ky = affine.apply affine_map<(d0) -> (d0 * 48)>(%k)
      tile.copy %X[%c0, %kx] [1, 8] to %x[%c0, %c0] [1, 8] : memref<1x256xf32> to memref<1x8xf32, #tile.scope<shared>>
      tile.copy %Y[%c0, %ky] [3, 48] to %y[%c0, %c0] [3, 48] : memref<3x768xf16> to memref<3x48xf16, #tile.scope<shared>>
      tile.copy %x[%c0, %c0] [1, 8] to %O[%c0, %c0] [1, 8] : memref<1x8xf32, #tile.scope<shared>> to memref<1x8xf32>
      tile.copy %y[%c0, %c0] [3, 48] to %P[%c0, %c0] [3, 48] : memref<3x48xf16, #tile.scope<shared>> to memref<3x48xf16>
    }
  }
  return
}
