// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference{wgmma=true}))' | FileCheck %s

// Two warpgroups on a 128x256 accumulator split M (each a 64x256 tile: one
// m64n256 instruction per K step). In a warpgroup, warp w holds rows
// [16 w, 16 w + 16) with the mma.sync quad pattern per 8-column chunk;
// registers follow wgmma's order (chunk-major); the second warpgroup
// (threads 128-255) holds rows 64-127. B (K x N) is read N-major through
// 64-column panels with a 128-byte swizzle.
// (The warp digit and the warpgroup digit merge: 8 warps of 16 rows.)
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @two_warpgroups
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<128x64xf16
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x256xf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 256>} : memref<128x256xf32
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {wgmma = array<i64: 2, 1>}
func.func @two_warpgroups(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x256xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x256xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x256xf16, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// float8 needs K-major operands: with B given K x N (not transposed) wgmma
// cannot read it, and mma.sync has no float8 here: the gemm gets neither a
// `wgmma` grid nor a `warp_partition` (it runs as FMA loops).
// CHECK-LABEL: func.func @fp8_needs_k_major
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} : memref<64x64xf8E4M3FN
func.func @fp8_needs_k_major(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x64xf8E4M3FN, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x64xf8E4M3FN, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<64x64xf8E4M3FN, #tile.scope<shared>>, memref<64x64xf8E4M3FN, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// FullCol on 2 warpgroups splits N when each half fits one instruction:
// 64x256 becomes two 64x128 warpgroup tiles (threads 128-255 hold columns
// 128-255).
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4 + (d1 floordiv 128) * 128, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + ((d1 floordiv 8) mod 16) * 4)>
// CHECK-LABEL: func.func @full_col
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[COL]], threads = 256>}
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {policy = #tile.policy<full_col>, transpose_b, wgmma = array<i64: 1, 2>}
func.func @full_col(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<256x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x256xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {transpose_b, policy = #tile.policy<full_col>} : memref<64x64xf16, #tile.scope<shared>>, memref<256x64xf16, #tile.scope<shared>> -> memref<64x256xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// wgmma takes a 16-bit fragment A from registers (P @ V in attention): P
// gets the layout of a 64x32 wgmma accumulator, which is also the layout
// of S from the first gemm, so S, P and O share one map.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @register_a
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x32xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x32xf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x64xf32
// CHECK: tile.gemm {{.+}}transpose_b, wgmma = array<i64: 1, 1>}
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<full_row>, wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<fragment>>
func.func @register_a(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %q = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<64x32xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %q, %k, %s {transpose_b, policy = #tile.policy<full_row>} : memref<64x64xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x32xf32, #tile.scope<fragment>>
    tile.copy %s[%c0, %c0] [64, 32] to %p[%c0, %c0] [64, 32] : memref<64x32xf32, #tile.scope<fragment>> to memref<64x32xf16, #tile.scope<fragment>>
    tile.gemm %p, %v, %o {policy = #tile.policy<full_row>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Register A with warpgroups side by side along N (FullCol, 64x256 on two
// warpgroups) needs A's rows in both: A gets the 64x32 accumulator layout
// replicated over the two warpgroups (threads t and t + 128 hold the same
// elements) and the gemm runs on wgmma, RS form.
// CHECK-DAG: #[[REP:.+]] = affine_map<(d0, d1)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0 * 128 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @register_a_split_n
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[REP]], threads = 256, replicate = 2>} : memref<64x32xf16
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<full_col>, wgmma = array<i64: 1, 2>}
func.func @register_a_split_n(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %v = tile.alloc_shared : memref<32x256xf16, #tile.scope<shared>>
    %p = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<64x256xf32, #tile.scope<fragment>>
    tile.gemm %p, %v, %o {policy = #tile.policy<full_col>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x256xf16, #tile.scope<shared>> -> memref<64x256xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A 2:4 sparse gemm takes the dense wgmma's accumulator layout and grid
// (here 2 warpgroups splitting M) and the `wgmma` mark: A_sparse
// (64-byte rows) and B get swizzles, E (8-byte rows) none.
// CHECK-LABEL: func.func @gemm_sp_wgmma
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<128x32xf16
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<128x4xi16
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x128xf16
// CHECK: tile.gemm_sp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {policy = #tile.policy<full_row>, wgmma = array<i64: 2, 1>}
func.func @gemm_sp_wgmma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<128x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {policy = #tile.policy<full_row>} : memref<128x32xf16, #tile.scope<shared>>, memref<128x4xi16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Replicate: every warpgroup computes the whole 64x64 score tile (grid 1x1
// repeated over the two warpgroups), so P, converted from S elementwise,
// is already A's replicated layout for the FullCol P @ V on both
// warpgroups: S, P share one map and no conversion goes through shared
// memory.
// CHECK-DAG: #[[REP:.+]] = affine_map<(d0, d1)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0 * 128 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @replicate
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[REP]], threads = 256, replicate = 2>} : memref<64x64xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[REP]], threads = 256, replicate = 2>} : memref<64x64xf16
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<replicate>, transpose_b, wgmma = array<i64: 1, 1>}
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<full_col>, wgmma = array<i64: 1, 2>} : memref<64x64xf16, #tile.scope<fragment>>
func.func @replicate(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %q = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<64x512xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<64x64xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<64x512xf32, #tile.scope<fragment>>
    tile.gemm %q, %k, %s {transpose_b, policy = #tile.policy<replicate>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %s[%c0, %c0] [64, 64] to %p[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf16, #tile.scope<fragment>>
    tile.gemm %p, %v, %o {policy = #tile.policy<full_col>} : memref<64x64xf16, #tile.scope<fragment>>, memref<64x512xf16, #tile.scope<shared>> -> memref<64x512xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A K-major B (N x K) swizzled in 32-byte spans (a user's choice) cannot
// feed sparse wgmma (one instruction reads 32 of its K, 64 bytes): the
// sparse gemm falls back to mma.sp with the warp partition of mma.sync.
// CHECK-LABEL: func.func @gemm_sp_narrow_k_major_b
// CHECK: tile.gemm_sp %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {policy = #tile.policy<full_row>, transpose_b, warp_partition = array<i64: 4, 1>}
func.func @gemm_sp_narrow_k_major_b(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<64x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {transpose_b, policy = #tile.policy<full_row>} : memref<64x16xf16, #tile.scope<shared>>, memref<64x2xi16, #tile.scope<shared>>, memref<64x32xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Replicate needs the tile to fit one warpgroup (N at most 256): a 64x512
// accumulator gets no wgmma grid.
// CHECK-LABEL: func.func @replicate_too_wide
// CHECK-NOT: wgmma = array
func.func @replicate_too_wide(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<512x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x512xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {transpose_b, policy = #tile.policy<replicate>} : memref<64x64xf16, #tile.scope<shared>>, memref<512x64xf16, #tile.scope<shared>> -> memref<64x512xf32, #tile.scope<fragment>>
  }
  return
}
