// RUN: tile-opt %s | FileCheck %s
// The printed form parses again to the same IR, and so does the generic form.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// Layout maps are printed as aliases at the top of the module.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + d1 floordiv 2, (d0 floordiv 8) * 2 + d1 mod 2)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + s0, d0 floordiv 8)>

// A kernel with a 2-D grid, its block indices and the four allocation scopes.
// CHECK-LABEL: func.func @kernel_and_allocs
// CHECK: tile.kernel blocks(%[[BX:.+]], %[[BY:.+]]) in (%{{.+}}, %{{.+}}) threads(128) {
// CHECK: tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<0, pad = 8>} : memref<64x64xf32, #tile.scope<shared>>
// CHECK: tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
// CHECK: tile.alloc_local : memref<8xf32, #tile.scope<local>>
// CHECK: tile.alloc_var : memref<i32, #tile.scope<var>>
// CHECK: arith.addi %[[BX]], %[[BY]]
func.func @kernel_and_allocs(%n: index) {
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(128) {
    %s = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %t = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %p = tile.alloc_shared {swizzle = #tile.swizzle<0, pad = 8>} : memref<64x64xf32, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %l = tile.alloc_local : memref<8xf32, #tile.scope<local>>
    %v = tile.alloc_var : memref<i32, #tile.scope<var>>
    %sum = arith.addi %bx, %by : index
  }
  return
}

// 1-D and 3-D grids, and thread extents in up to three dimensions.
// CHECK-LABEL: func.func @grid_shapes
// CHECK: tile.kernel blocks(%{{.+}}) in (%{{.+}}) threads(256)
// CHECK: tile.kernel blocks(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, %{{.+}}, %{{.+}}) threads(32, 4)
func.func @grid_shapes(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
  }
  tile.kernel blocks(%x, %y, %z) in (%n, %n, %n) threads(32, 4) {
  }
  return
}

// A fragment layout attribute, with and without replication, on an
// allocation and through annotate_layout.
// CHECK-LABEL: func.func @layouts
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 32>} : memref<16x8xf32, #tile.scope<fragment>>
// CHECK: tile.annotate_layout %{{.+}} (#tile.layout<#[[ROW]], threads = 32, replicate = 4>) : memref<16xf32, #tile.scope<fragment>>
// CHECK: tile.annotate_layout %{{.+}} (#tile.swizzle<64>) : memref<32x32xf16, #tile.scope<shared>>
func.func @layouts(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %acc = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> ((i mod 8) * 4 + j floordiv 2, (i floordiv 8) * 2 + j mod 2)>, threads = 32>} : memref<16x8xf32, #tile.scope<fragment>>
    %row = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    tile.annotate_layout %row (#tile.layout<affine_map<(i)[r] -> ((i mod 8) * 4 + r, i floordiv 8)>, threads = 32, replicate = 4>) : memref<16xf32, #tile.scope<fragment>>
    %s = tile.alloc_shared : memref<32x32xf16, #tile.scope<shared>>
    tile.annotate_layout %s (#tile.swizzle<64>) : memref<32x32xf16, #tile.scope<shared>>
  }
  return
}

// Copies between scopes, with dynamic global shapes, dtype conversion and a
// region of a 3-D tensor with a unit dimension.
// CHECK-LABEL: func.func @copies
// CHECK: tile.copy %{{.+}}[%{{.+}}, %{{.+}}] [128, 32] to %[[S:.+]][%{{.+}}, %{{.+}}] [128, 32] : memref<?x?xf16> to memref<128x32xf16, #tile.scope<shared>>
// CHECK: tile.copy %[[S]][%{{.+}}, %{{.+}}] [128, 32] to %{{.+}}[%{{.+}}, %{{.+}}] [128, 32] : memref<128x32xf16, #tile.scope<shared>> to memref<128x32xf32, #tile.scope<fragment>>
// CHECK: tile.copy %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] [1, 128, 32] to %[[S]][%{{.+}}, %{{.+}}] [128, 32] : memref<4x?x64xf16> to memref<128x32xf16, #tile.scope<shared>>
func.func @copies(%A: memref<?x?xf16>, %B: memref<4x?x64xf16>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %s = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<128x32xf32, #tile.scope<fragment>>
    tile.copy %A[%i, %c0] [128, 32] to %s[%c0, %c0] [128, 32] : memref<?x?xf16> to memref<128x32xf16, #tile.scope<shared>>
    tile.copy %s[%c0, %c0] [128, 32] to %f[%c0, %c0] [128, 32] : memref<128x32xf16, #tile.scope<shared>> to memref<128x32xf32, #tile.scope<fragment>>
    tile.copy %B[%bx, %i, %c0] [1, 128, 32] to %s[%c0, %c0] [128, 32] : memref<4x?x64xf16> to memref<128x32xf16, #tile.scope<shared>>
  }
  return
}

// Regions of one rank may differ in where their unit extents are when each
// picks one index of a longer dimension (a pipeline slot [1, 128, 32] of a
// multi-buffered tile filled from [128, 1, 32] of a [S, H, D] tensor); the
// logical element types of unsigned and boolean buffers print as attributes.
// CHECK-LABEL: func.func @copies_same_rank
// CHECK: tile.copy %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] [128, 1, 32] to %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] [1, 128, 32] : memref<?x8x32xf16> to memref<3x128x32xf16, #tile.scope<shared>>
// CHECK: tile.copy %{{.+}} {dst_element = i1, src_element = ui8} : memref<16xi8> to memref<16xi8, #tile.scope<fragment>>
func.func @copies_same_rank(%K: memref<?x8x32xf16>, %U: memref<16xi8>, %h: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %s = tile.alloc_shared : memref<3x128x32xf16, #tile.scope<shared>>
    tile.copy %K[%c0, %h, %c0] [128, 1, 32] to %s[%c1, %c0, %c0] [1, 128, 32] : memref<?x8x32xf16> to memref<3x128x32xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<16xi8, #tile.scope<fragment>>
    tile.copy %U[%c0] [16] to %f[%c0] [16] {dst_element = i1, src_element = ui8} : memref<16xi8> to memref<16xi8, #tile.scope<fragment>>
  }
  return
}

// Fill, gemm with every option, sparse gemm.
// CHECK-LABEL: func.func @compute
// CHECK: tile.fill %[[ACC:.+]], %{{.+}} : memref<64x64xf32, #tile.scope<fragment>>, f32
// CHECK: tile.gemm %[[A:.+]], %[[B:.+]], %[[ACC]] : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %[[ACC]] {clear_accum, k_pack = 2 : i64, policy = #tile.policy<full_col>, transpose_a, transpose_b}
// CHECK: tile.gemm_sp %{{.+}}, %{{.+}}, %{{.+}}, %[[ACC]] {policy = #tile.policy<full_row>} : memref<64x16xf16, #tile.scope<shared>>, memref<64x2xi16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
func.func @compute(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %at = tile.alloc_fragment : memref<32x64xf16, #tile.scope<fragment>>
    %bt = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %zero = arith.constant 0.0 : f32
    tile.fill %acc, %zero : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.gemm %a, %b, %acc : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %at, %bt, %acc {transpose_a, transpose_b, policy = #tile.policy<full_col>, clear_accum, k_pack = 2} : memref<32x64xf16, #tile.scope<fragment>>, memref<64x32xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    %as = tile.alloc_shared : memref<64x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x2xi16, #tile.scope<shared>>
    tile.gemm_sp %as, %e, %b, %acc {policy = #tile.policy<full_row>} : memref<64x16xf16, #tile.scope<shared>>, memref<64x2xi16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// The gemm element-type combinations the verifier accepts.
// CHECK-LABEL: func.func @gemm_types
// CHECK-COUNT-6: tile.gemm
func.func @gemm_types(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %bf = tile.alloc_shared : memref<16x16xbf16, #tile.scope<shared>>
    %f32 = tile.alloc_shared : memref<16x16xf32, #tile.scope<shared>>
    %f64 = tile.alloc_shared : memref<16x16xf64, #tile.scope<shared>>
    %i8 = tile.alloc_shared : memref<16x16xi8, #tile.scope<shared>>
    %e4 = tile.alloc_shared : memref<16x16xf8E4M3FN, #tile.scope<shared>>
    %e5 = tile.alloc_shared : memref<16x16xf8E5M2, #tile.scope<shared>>
    %f16 = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c32 = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %c16 = tile.alloc_fragment : memref<16x16xf16, #tile.scope<fragment>>
    %c64 = tile.alloc_fragment : memref<16x16xf64, #tile.scope<fragment>>
    %ci = tile.alloc_fragment : memref<16x16xi32, #tile.scope<fragment>>
    tile.gemm %bf, %bf, %c32 : memref<16x16xbf16, #tile.scope<shared>>, memref<16x16xbf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
    tile.gemm %f32, %f32, %c32 : memref<16x16xf32, #tile.scope<shared>>, memref<16x16xf32, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
    tile.gemm %f64, %f64, %c64 : memref<16x16xf64, #tile.scope<shared>>, memref<16x16xf64, #tile.scope<shared>> -> memref<16x16xf64, #tile.scope<fragment>>
    tile.gemm %i8, %i8, %ci : memref<16x16xi8, #tile.scope<shared>>, memref<16x16xi8, #tile.scope<shared>> -> memref<16x16xi32, #tile.scope<fragment>>
    tile.gemm %e4, %e5, %c32 : memref<16x16xf8E4M3FN, #tile.scope<shared>>, memref<16x16xf8E5M2, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
    tile.gemm %f16, %f16, %c16 : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf16, #tile.scope<fragment>>
  }
  return
}

// Reductions (dim removed or kept), cumsum, atomic add of a scalar and a tile.
// CHECK-LABEL: func.func @reductions
// CHECK: tile.reduce %[[S:.+]] -> %{{.+}} {clear, dim = 1 : i64, kind = #tile.reduce<max>} : memref<64x128xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
// CHECK: tile.reduce %[[S]] -> %{{.+}} {dim = 0 : i64, kind = #tile.reduce<abssum>} : memref<64x128xf32, #tile.scope<fragment>> -> memref<1x128xf32, #tile.scope<fragment>>
// CHECK: tile.reduce %{{.+}} -> %{{.+}} {clear, dim = 1 : i64, kind = #tile.reduce<absmax>, nan_propagate} : memref<64x128xf16, #tile.scope<fragment>> -> memref<64xf16, #tile.scope<fragment>>
// CHECK: tile.reduce %{{.+}} -> %{{.+}} {dim = 1 : i64, dst_element = ui32, kind = #tile.reduce<bitxor>, src_element = ui32} : memref<64x128xi32, #tile.scope<fragment>> -> memref<64xi32, #tile.scope<fragment>>
// CHECK: tile.cumsum %{{.+}} -> %{{.+}} {dim = 0 : i64, reverse} : memref<256xf32, #tile.scope<shared>> -> memref<256xf32, #tile.scope<shared>>
// CHECK: tile.atomic_add %{{.+}} -> %{{.+}}[%{{.+}}] : f32 -> memref<1024xf32>
// CHECK: tile.atomic_add %{{.+}} -> %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x64xf32, #tile.scope<fragment>> -> memref<?x64xf32>
func.func @reductions(%out: memref<1024xf32>, %out2: memref<?x64xf32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<64x128xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    %k = tile.alloc_fragment : memref<1x128xf32, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<64x128xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    tile.reduce %s -> %k {kind = #tile.reduce<abssum>, dim = 0} : memref<64x128xf32, #tile.scope<fragment>> -> memref<1x128xf32, #tile.scope<fragment>>
    %hs = tile.alloc_fragment : memref<64x128xf16, #tile.scope<fragment>>
    %hm = tile.alloc_fragment : memref<64xf16, #tile.scope<fragment>>
    tile.reduce %hs -> %hm {kind = #tile.reduce<absmax>, dim = 1, clear, nan_propagate} : memref<64x128xf16, #tile.scope<fragment>> -> memref<64xf16, #tile.scope<fragment>>
    %is = tile.alloc_fragment : memref<64x128xi32, #tile.scope<fragment>>
    %im = tile.alloc_fragment : memref<64xi32, #tile.scope<fragment>>
    tile.reduce %is -> %im {kind = #tile.reduce<bitxor>, dim = 1, src_element = ui32, dst_element = ui32} : memref<64x128xi32, #tile.scope<fragment>> -> memref<64xi32, #tile.scope<fragment>>
    %c = tile.alloc_shared : memref<256xf32, #tile.scope<shared>>
    tile.cumsum %c -> %c {dim = 0, reverse} : memref<256xf32, #tile.scope<shared>> -> memref<256xf32, #tile.scope<shared>>
    %v = arith.constant 1.0 : f32
    tile.atomic_add %v -> %out[%bx] : f32 -> memref<1024xf32>
    %p = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %c0 = arith.constant 0 : index
    tile.atomic_add %p -> %out2[%bx, %c0] : memref<64x64xf32, #tile.scope<fragment>> -> memref<?x64xf32>
  }
  return
}

// Parallel loops with element access, pipelined loops with and without a
// manual schedule, raster swizzle, device print and device assert.
// CHECK-LABEL: func.func @loops
// CHECK: tile.use_swizzle 10
// CHECK: tile.use_swizzle 8 {enable = false, order = #tile.raster<col>}
// CHECK: tile.parallel (%[[I:.+]], %[[J:.+]]) in (64, 128) {
// CHECK:   memref.load %{{.+}}[%[[I]], %[[J]]]
// CHECK:   math.exp
// CHECK:   memref.store
// CHECK: }
// CHECK: tile.pipelined %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} num_stages = 3 {
// CHECK: tile.pipelined %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} num_stages = 2 order = [1, 0] stage = [0, 1] group = {{\[\[}}0], [1]] {
// CHECK: tile.print %{{.+}} {msg = "x ="} : f32
// CHECK: tile.print %{{.+}} : memref<64x128xf32, #tile.scope<fragment>>
// CHECK: %[[OK:.+]] = arith.cmpi
// CHECK: tile.device_assert %[[OK]], "n must exceed the block index"
func.func @loops(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(128) {
    tile.use_swizzle 10
    tile.use_swizzle 8 {order = #tile.raster<col>, enable = false}
    %s = tile.alloc_fragment : memref<64x128xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (64, 128) {
      %x = memref.load %s[%i, %j] : memref<64x128xf32, #tile.scope<fragment>>
      %y = math.exp %x : f32
      memref.store %y, %s[%i, %j] : memref<64x128xf32, #tile.scope<fragment>>
    }
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %bs = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 {
      tile.copy %A[%c0, %k] [64, 32] to %as[%c0, %c0] [64, 32] : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.gemm %as, %bs, %acc : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 order = [1, 0] stage = [0, 1] group = [[0], [1]] {
      tile.copy %A[%c0, %k] [64, 32] to %as[%c0, %c0] [64, 32] : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
      tile.gemm %as, %bs, %acc : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    }
    %x = arith.constant 1.0 : f32
    tile.print %x {msg = "x ="} : f32
    tile.print %s : memref<64x128xf32, #tile.scope<fragment>>
    %ok = arith.cmpi ult, %bx, %n : index
    tile.device_assert %ok, "n must exceed the block index"
  }
  return
}

// The explicit warp-specialization layer: the thread index, roles, user
// barriers (one arrival count per barrier, per-thread arrivals), a TMA copy
// that announces its bytes, register budgets, proxy fences, named barriers.
// CHECK-LABEL: func.func @roles
// CHECK: %[[TX:.+]] = tile.thread_id : index
// CHECK: %[[B:.+]] = tile.alloc_barrier arrivals(128, 128, 256) : memref<3xi64, #tile.scope<shared>>
// CHECK: %{{.+}} = tile.alloc_barrier arrivals(1) : memref<2xi64, #tile.scope<shared>>
// CHECK: tile.role threads(0 to 128) {
// CHECK-NEXT: tile.set_max_nreg 240 increase
// CHECK-NEXT: tile.barrier_wait %[[B]][%{{.+}}], %{{.+}} : memref<3xi64, #tile.scope<shared>>
// CHECK: tile.barrier_arrive %[[B]][%{{.+}}] per_thread : memref<3xi64, #tile.scope<shared>>
// CHECK-NEXT: tile.barrier_arrive %[[B]][%{{.+}}] expect_tx(16) per_thread : memref<3xi64, #tile.scope<shared>>
// CHECK: tile.role threads(128 to 256) {
// CHECK-NEXT: tile.set_max_nreg 40
// CHECK-NEXT: tile.copy %{{.+}} via %[[B]][%{{.+}}] {expect_tx} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
// CHECK-NEXT: tile.fence_proxy_async
// CHECK-NEXT: tile.named_barrier 1, 128
func.func @roles(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %tx = tile.thread_id : index
    %bars = tile.alloc_barrier arrivals(128, 128, 256) : memref<3xi64, #tile.scope<shared>>
    %other = tile.alloc_barrier arrivals(1) : memref<2xi64, #tile.scope<shared>>
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    tile.role threads(0 to 128) {
      tile.set_max_nreg 240 increase
      tile.barrier_wait %bars[%c0], %c0 : memref<3xi64, #tile.scope<shared>>
      tile.barrier_arrive %bars[%c1] per_thread : memref<3xi64, #tile.scope<shared>>
      tile.barrier_arrive %bars[%c1] expect_tx(16) per_thread : memref<3xi64, #tile.scope<shared>>
    }
    tile.role threads(128 to 256) {
      tile.set_max_nreg 40
      tile.copy %A[%c0, %c0] [64, 32] to %as[%c0, %c0] [64, 32] via %bars[%c0] {expect_tx} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>, memref<3xi64, #tile.scope<shared>>
      tile.fence_proxy_async
      tile.named_barrier 1, 128
    }
  }
  return
}

// Per-thread cp.async and barrier arrivals when a thread's copies land.
// CHECK-LABEL: func.func @cp_async
// CHECK: tile.cp_async %{{.+}}[%{{.+}}, %{{.+}}] to %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] elements(8) : memref<?x512xf16> to memref<2x64x512xf16, #tile.scope<shared>>
// CHECK: tile.cp_async %{{.+}}[%{{.+}}, %{{.+}}] to %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] elements(8) if %{{.+}} : memref<?x512xf16> to memref<2x64x512xf16, #tile.scope<shared>>
// CHECK: tile.barrier_arrive %{{.+}}[%{{.+}}] per_thread after_copies : memref<2xi64, #tile.scope<shared>>
func.func @cp_async(%KV: memref<?x512xf16>, %n: index, %ok: i1) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %kv = tile.alloc_shared : memref<2x64x512xf16, #tile.scope<shared>>
    %ready = tile.alloc_barrier arrivals(128) : memref<2xi64, #tile.scope<shared>>
    tile.cp_async %KV[%c0, %c0] to %kv[%c0, %c0, %c0] elements(8) : memref<?x512xf16> to memref<2x64x512xf16, #tile.scope<shared>>
    tile.cp_async %KV[%c0, %c0] to %kv[%c0, %c0, %c0] elements(8) if %ok : memref<?x512xf16> to memref<2x64x512xf16, #tile.scope<shared>>
    tile.barrier_arrive %ready[%c0] per_thread after_copies : memref<2xi64, #tile.scope<shared>>
  }
  return
}

// A symmetric buffer: a rank's part (a view with a dynamic offset), a
// signal into a peer's flag and a wait on the local flags.
// CHECK-LABEL: func.func @symmetric
// CHECK: %[[P:.+]] = tile.peer %{{.+}}, %{{.+}}[%{{.+}}] : memref<4x256xf16>, memref<?xi64> -> memref<4x256xf16, strided<[256, 1], offset: ?>>
// CHECK: tile.signal add %{{.+}} -> %{{.+}}[%{{.+}}] : i32 -> memref<4xi32, strided<[1], offset: ?>>
// CHECK: tile.wait ge %{{.+}} -> %{{.+}}[%{{.+}}] {timeout_ms = 100 : i64} : i32 -> memref<4xi32>
func.func @symmetric(%buf: memref<4x256xf16> {tile.symmetric}, %bp: memref<?xi64>,
                     %f: memref<4xi32> {tile.symmetric}, %fp: memref<?xi64>, %r: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %p = tile.peer %buf, %bp[%r] : memref<4x256xf16>, memref<?xi64> -> memref<4x256xf16, strided<[256, 1], offset: ?>>
    %pf = tile.peer %f, %fp[%r] : memref<4xi32>, memref<?xi64> -> memref<4xi32, strided<[1], offset: ?>>
    tile.signal add %one -> %pf[%r] : i32 -> memref<4xi32, strided<[1], offset: ?>>
    tile.wait ge %one -> %f[%r] {timeout_ms = 100} : i32 -> memref<4xi32>
  }
  return
}

// Rounded arithmetic (TileLang's ieee_*).
// CHECK-LABEL: func.func @ieee
// CHECK: tile.ieee add, rz %{{.+}}, %{{.+}} : f32, f32 -> f32
// CHECK: tile.ieee fma, rd %{{.+}}, %{{.+}}, %{{.+}} : f64, f64, f64 -> f64
// CHECK: tile.ieee rsqrt, rn %{{.+}} : f16 -> f16
func.func @ieee(%n: index, %a: f32, %b: f64, %h: f16) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %x = tile.ieee add, rz %a, %a : f32, f32 -> f32
    %y = tile.ieee fma, rd %b, %b, %b : f64, f64, f64 -> f64
    %z = tile.ieee rsqrt, rn %h : f16 -> f16
  }
  return
}
