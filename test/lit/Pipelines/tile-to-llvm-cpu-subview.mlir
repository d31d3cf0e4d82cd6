// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-scf,canonicalize,cse,expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)' | FileCheck %s

// The CPU chain (compiler/cpu.py) on a gemm that reads one stage of a
// two-stage shared buffer (`S[k % 2, :, :]`): the loops read through the
// subview, whose address arithmetic expand-strided-metadata spells out;
// convert-to-llvm has no lowering of memref.subview and left an
// unrealized cast that LLVM IR cannot translate (found by the fuzzer).
// CHECK-LABEL: llvm.func @gemm
// CHECK-NOT: unrealized_conversion_cast
// CHECK-NOT: memref.subview
// CHECK: llvm.fmul
// CHECK: llvm.return
func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf32>) {
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  tile.kernel blocks(%bx, %by) in (%c2, %c2) threads(128) {
    %a = tile.alloc_shared : memref<2x128x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<2x32x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    scf.for %k = %c1 to %c8 step %c1 {
      %s = arith.remui %k, %c2 : index
      %a_s = memref.subview %a[%s, 0, 0] [1, 128, 32] [1, 1, 1] : memref<2x128x32xf16, #tile.scope<shared>> to memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>
      %b_s = memref.subview %b[%s, 0, 0] [1, 32, 128] [1, 1, 1] : memref<2x32x128xf16, #tile.scope<shared>> to memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
      tile.gemm %a_s, %b_s, %c : memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>, memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
  }
  return
}
