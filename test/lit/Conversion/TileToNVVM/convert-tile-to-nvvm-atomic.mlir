// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx81},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=PTX80
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx81},canonicalize,cse)' | FileCheck %s --check-prefix=PTX80

// A float32 fragment in the wgmma accumulator layout (each thread holds
// column pairs) added into global memory: on sm_90 with PTX 8.1 every pair
// of registers goes out as one vector reduction (64x64 over 128 threads: 32
// registers, 16 reductions). Without PTX 8.1 (or before sm_90) each
// element is its own atomic.
// CHECK-LABEL: gpu.func @pairs_kernel
// CHECK-COUNT-16: llvm.inline_asm has_side_effects asm_dialect = att "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f" %{{.+}}, %{{.+}}, %{{.+}} : (!llvm.ptr<1>, f32, f32) -> ()
// CHECK-NOT: memref.atomic_rmw
// CHECK: gpu.return
// PTX80-LABEL: gpu.func @pairs_kernel
// PTX80-NOT: red.global
// PTX80-COUNT-32: memref.atomic_rmw addf
#acc = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @pairs(%out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#acc, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.fill %f, %one : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.atomic_add %f -> %out[%c0, %c0] : memref<64x64xf32, #tile.scope<fragment>> -> memref<64x64xf32>
  }
  return
}

// -----

// At a dynamic row of a dynamic-length destination the pairs keep the
// bounds check of their first element (rows past the end are dropped), and
// the address is linear in the runtime extent.
// CHECK-LABEL: gpu.func @ragged_kernel
// CHECK: memref.dim
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.global.add.v2.f32
#acc = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @ragged(%out: memref<?x64xf32>, %row: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#acc, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.fill %f, %one : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.atomic_add %f -> %out[%row, %c0] : memref<64x64xf32, #tile.scope<fragment>> -> memref<?x64xf32>
  }
  return
}

// -----

// An odd column offset breaks the pairs' alignment: one atomic per element.
// CHECK-LABEL: gpu.func @odd_kernel
// CHECK-NOT: red.global
// CHECK: memref.atomic_rmw addf
#acc = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @odd(%out: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#acc, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.fill %f, %one : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.atomic_add %f -> %out[%c0, %c1] : memref<64x64xf32, #tile.scope<fragment>> -> memref<64x128xf32>
  }
  return
}
