// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s

// A converting copy from global memory into shared memory loads 16-byte
// vectors of the source type and converts them lane-wise (no cp.async: the
// bytes change). Before the fix, the vector of the destination type was
// taken as the element type of another vector and the lowering aborted.
// CHECK-LABEL: gpu.func @copy_convert_kernel
// CHECK-NOT: nvvm.cp.async
// CHECK: arith.truncf %{{.+}} : vector<4xf32> to vector<4xf16>
func.func @copy_convert(%A: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %as = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<16x64xf16, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [16, 64] to %as[%c0, %c0] [16, 64] : memref<16x64xf32> to memref<16x64xf16, #tile.scope<shared>>
  }
  return
}

// -----

// Float to int8 through a fragment saturates (the marked in-range fptosi,
// then the clamps and NaN -> 0), the same rule as the CPU backend.
// CHECK-LABEL: gpu.func @copy_saturate_kernel
// CHECK: arith.fptosi %{{.+}} {tile.saturated} : f32 to i8
// CHECK: arith.cmpf uno
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 32, d0 mod 4)>
func.func @copy_saturate(%A: memref<128xf32>, %B: memref<128xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128, replicate = 4>} : memref<128xi8, #tile.scope<fragment>>
    tile.copy %A[%c0] [128] to %f[%c0] [128] : memref<128xf32> to memref<128xi8, #tile.scope<fragment>>
    tile.copy %f[%c0] [128] to %B[%c0] [128] : memref<128xi8, #tile.scope<fragment>> to memref<128xi8>
  }
  return
}

// -----

// Unsigned bytes become floats with uitofp and booleans stored as bytes are
// 0 or 1 (x != 0, widened): the logical element types of the copy say so.
// CHECK-LABEL: gpu.func @copy_logical_kernel
// CHECK: arith.uitofp %{{.+}} : {{.*}}i8{{.*}} to {{.*}}f32
// CHECK: arith.cmpi ne
// CHECK: arith.extui %{{.+}} : {{.*}}i1{{.*}} to {{.*}}i8
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 32, d0 mod 4)>
func.func @copy_logical(%A: memref<128xi8>, %B: memref<128xf32>, %C: memref<128xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128, replicate = 4>} : memref<128xf32, #tile.scope<fragment>>
    tile.copy %A[%c0] [128] to %f[%c0] [128] {src_element = ui8} : memref<128xi8> to memref<128xf32, #tile.scope<fragment>>
    tile.copy %f[%c0] [128] to %B[%c0] [128] : memref<128xf32, #tile.scope<fragment>> to memref<128xf32>
    %g = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128, replicate = 4>} : memref<128xi8, #tile.scope<fragment>>
    tile.copy %A[%c0] [128] to %g[%c0] [128] {dst_element = i1} : memref<128xi8> to memref<128xi8, #tile.scope<fragment>>
    tile.copy %g[%c0] [128] to %C[%c0] [128] : memref<128xi8, #tile.scope<fragment>> to memref<128xi8>
  }
  return
}
