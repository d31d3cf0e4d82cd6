// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference{wgmma=true}))' -verify-diagnostics

// T.wgmma_gemm (tile.require_wgmma) on a 32-row tile over one warpgroup:
// wgmma's tiles are 64 rows per warpgroup, so no warpgroup grid covers it;
// refused instead of falling back to mma.sync.
func.func @short_tile(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{T.wgmma_gemm() requires Hopper WGMMA lowering: no grid of whole warpgroups covers this 32x64 tile over 128 threads}}
    tile.gemm %a, %b, %c {tile.require_wgmma} : memref<32x16xf16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Without the attribute the same gemm runs on mma.sync (a warp grid).
func.func @short_tile_gemm(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<32x16xf16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
  }
  return
}
