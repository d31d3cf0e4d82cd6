// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80})'

// A wgmma gemm (the grid given here, as layout inference would set it on
// sm_90a) whose fragment A was forced into a blocked layout: wgmma cannot
// take those registers.
#blocked = #tile.layout<affine_map<(d0, d1) -> ((d0 mod 16) * 8 + d1 floordiv 4, (d0 floordiv 16) * 4 + d1 mod 4)>, threads = 128>
#wgmma_acc = #tile.layout<affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 4, (d0 floordiv 8) * 4 + d1 mod 4)>, threads = 128>
func.func @wgmma_register_a_layout(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %v = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<32x64xf16, #tile.scope<shared>>
    %p = tile.alloc_fragment {layout = #blocked} : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment {layout = #wgmma_acc} : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{a wgmma gemm reads a fragment A from registers only in the layout of an M x K wgmma accumulator, but A has the layout}}
    tile.gemm %p, %v, %o {wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
