// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference{mma=false mfma=true}))' | FileCheck %s

// One wave (64 threads) on a 32x64 f16 accumulator: two 32x32 MFMA blocks
// side by side. Lane l holds column l mod 32 of each block and rows
// 8 j + 4 (l / 32) + i in register 4 j + i (i, j < 4), the second block in
// registers 16-31: the v_mfma_f32_32x32x8f16 accumulator.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1 mod 32, d0 mod 4 + (d0 floordiv 8) * 4 + (d1 floordiv 32) * 16)>
// CHECK-LABEL: func.func @one_wave
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 64>} : memref<32x64xf32
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {mfma = array<i64: 1, 1>}
func.func @one_wave(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<32x16xf16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Four waves on a 128x128 bf16 gemm: the square policy makes a 2x2 wave
// grid of 64x64 tiles (2x2 blocks each: registers 0-15, 16-31 along N, then
// 32-63 for the lower 32 rows); wave w = 2 wm + wn is threads 64 w .. 64 w +
// 63.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + (d0 floordiv 64) * 128 + d1 mod 32 + (d1 floordiv 64) * 64, d0 mod 4 + ((d0 floordiv 8) mod 4) * 4 + ((d0 floordiv 32) mod 2) * 32 + ((d1 floordiv 32) mod 2) * 16)>
// CHECK-LABEL: func.func @four_waves_bf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 256>} : memref<128x128xf32
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {mfma = array<i64: 2, 2>}
func.func @four_waves_bf16(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<128x32xbf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x128xbf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<128x32xbf16, #tile.scope<shared>>, memref<32x128xbf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// FullCol puts two waves side by side along N: the second wave (threads
// 64-127) holds columns 32-63.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1 mod 32 + (d1 floordiv 32) * 64, d0 mod 4 + (d0 floordiv 8) * 4)>
// CHECK-LABEL: func.func @full_col
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>}
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {mfma = array<i64: 1, 2>, policy = #tile.policy<full_col>, transpose_b}
func.func @full_col(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {transpose_b, policy = #tile.policy<full_col>} : memref<32x16xf16, #tile.scope<shared>>, memref<64x16xf16, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// No MFMA for f32 inputs, for a wave tile smaller than 32x32, or for a block
// that is not whole waves: the gemms keep no `mfma` grid (they run as FMA
// loops on a blocked accumulator).
// CHECK-LABEL: func.func @no_mfma
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} : memref<32x16xf32
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} : memref<16x16xf16
// CHECK-LABEL: func.func @half_wave
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} : memref<32x16xf16
// CHECK-NOT: mfma
func.func @no_mfma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared : memref<32x16xf32, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x32xf32, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x32xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<32x16xf32, #tile.scope<shared>>, memref<16x32xf32, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
    %a2 = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %b2 = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c2 = tile.alloc_fragment : memref<16x64xf32, #tile.scope<fragment>>
    tile.gemm %a2, %b2, %c2 : memref<16x16xf16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<16x64xf32, #tile.scope<fragment>>
  }
  return
}
func.func @half_wave(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x32xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<32x16xf16, #tile.scope<shared>>, memref<16x32xf16, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
  }
  return
}
