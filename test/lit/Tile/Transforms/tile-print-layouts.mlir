// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-print-layouts))' -o /dev/null | FileCheck %s --check-prefixes=CHECK,MFMA

// A fragment of 2x4 over 4 threads: each cell is thread:register, rows are
// the first index; a replicated layout shows replica 0 and says where the
// other replicas are; a shared buffer shows where each element lands (the
// 32-byte swizzle cuts rows into 16-column panels stored one after the
// other: columns 16-31 start at element 32; within the first 128 bytes the
// XOR moves nothing). A buffer without an inferred layout is skipped.
// CHECK-LABEL: // tile-print-layouts: @tables
// CHECK-NEXT: %0 fragment 2x4xf32: 4 threads, 2 registers/thread; cells are thread:register
// CHECK-NEXT:   |   0   1   2   3
// CHECK-NEXT: 0 | 0:0 0:1 1:0 1:1
// CHECK-NEXT: 1 | 2:0 2:1 3:0 3:1
// CHECK-NEXT: %1 fragment 4xf32: 4 threads, 2 registers/thread, replicate 2 (replica k in thread + 2 * k, k < 2; replica 0 shown); cells are thread:register
// CHECK-NEXT:   |   0   1   2   3
// CHECK-NEXT: 0 | 0:0 0:1 1:0 1:1
// CHECK-NEXT: %2 shared 2x32xf16: swizzle 32 B, panels of 16 columns; cells are the element offset (panels and swizzle applied)
// CHECK-NEXT:   |  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
// CHECK-NEXT: 0 |  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
// CHECK-NEXT: 1 | 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
// CHECK-NOT: %3
func.func @tables(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(4) {
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 2, d1 mod 2)>, threads = 4>} : memref<2x4xf32, #tile.scope<fragment>>
    %r = tile.alloc_fragment {layout = #tile.layout<affine_map<(d0)[s0] -> (d0 floordiv 2 + s0 * 2, d0 mod 2)>, threads = 4, replicate = 2>} : memref<4xf32, #tile.scope<fragment>>
    %s = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<2x32xf16, #tile.scope<shared>>
    %t = tile.alloc_shared : memref<4x4xf16, #tile.scope<shared>>
  }
  return
}

// -----

// The MFMA accumulator of one wave as layout inference (mfma=true) leaves
// it: lane l holds column l mod 32 and rows 8 j + 4 (l / 32) + i in register
// 4 j + i: rows 0-3 are lanes 0-31 (registers 0-3), rows 4-7 lanes 32-63,
// row 8 starts register 4. (The shared operands come first, with their swizzles.)
// MFMA-LABEL: // tile-print-layouts: @mfma
// MFMA: %2 fragment 32x32xf32: 64 threads, 16 registers/thread; cells are thread:register
// MFMA-NEXT: |     0     1     2 {{.+}}    31
// MFMA-NEXT: 0 |   0:0   1:0   2:0 {{.+}}  31:0
// MFMA-NEXT: 1 |   0:1   1:1   2:1 {{.+}}  31:1
// MFMA-NEXT: 2 |   0:2   1:2
// MFMA-NEXT: 3 |   0:3   1:3
// MFMA-NEXT: 4 |  32:0  33:0
// MFMA-NEXT: 5 |  32:1
// MFMA-NEXT: 6 |  32:2
// MFMA-NEXT: 7 |  32:3  33:3 {{.+}}  63:3
// MFMA-NEXT: 8 |   0:4   1:4
// MFMA: 31 |  32:15  33:15 {{.+}}  63:15
#map = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1, d0 mod 4 + (d0 floordiv 8) * 4)>
func.func @mfma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<32x8xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<8x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x32xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {mfma = array<i64: 1, 1>} : memref<32x8xf16, #tile.scope<shared>>, memref<8x32xf16, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
  }
  return
}
