// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=SM80

// The input carries what tile-layout-inference (mma.sync grids) and
// tile-insert-barriers write for sm_80; the same cases annotated for sm_90a
// (wgmma grids) are in convert-tile-to-nvvm-gemm-sp-wgmma.mlir.

// A 32x16 sparse tile over K = 64 on 2 warps (each 16x16: one m tile, two
// n tiles), on sm_80 and, with 64 threads (not a warpgroup), on sm_90a too:
// mma.sp m16n8k32. Per K step of 32, A_sparse's m16k16 fragment is one
// ldmatrix.x4 and B's k32n8 one transposing ldmatrix.x4 per n tile. The
// metadata register is built once for both steps from two i16 loads (rows
// g and g + 8 of E, the low and high halves) and serves step 0 with
// sparsity selector 0 and step 1 with selector 1.
// SM80-LABEL: func.func @gemm_sp_mma
// SM80: gpu.module @gemm_sp_mma_kernel [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">]
// SM80: %[[LO:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<128xi16, #gpu.address_space<workgroup>>
// SM80: %[[HI:.+]] = memref.load %{{.+}}[%{{.+}}] : memref<128xi16, #gpu.address_space<workgroup>>
// SM80: %[[HIW:.+]] = arith.extui %[[HI]] : i16 to i32
// SM80: %[[SH:.+]] = arith.shli %[[HIW]], %c16_i32 : i32
// SM80: %[[META:.+]] = arith.ori %{{.+}}, %[[SH]] : i32
// SM80: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = false} : memref<1024xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// SM80-COUNT-2: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = true} : memref<1024xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// SM80-COUNT-2: nvvm.mma.sp.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] sparseMetadata[%[[META]]] selector[%c0_i32] {shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// SM80-COUNT-2: nvvm.mma.sp.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] sparseMetadata[%[[META]]] selector[%c1_i32]
// SM80-NOT: mma.sp
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @gemm_sp_mma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<32x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<32x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<64x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x16xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum, warp_partition = array<i64: 2, 1>} : memref<32x32xf16, #tile.scope<shared>>, memref<32x4xi16, #tile.scope<shared>>, memref<64x16xf16, #tile.scope<shared>> -> memref<32x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// One warpgroup on a 64x64 tile over K = 64, on sm_90a: the module asks for
// PTX 8.2 (sparse wgmma on floating-point types). The metadata register is
// filled before the fence; then two wgmma.mma_async.sp m64n64k32 (inline
// PTX: A and B descriptors, the metadata register, the selector 0 then 1;
// the cleared accumulator is not read by the first, scale-d = 0; B given
// K x N is MN-major, imm-trans-b = 1), one group, waited for. On sm_80 the
// same gemm runs on mma.sp (4 warps of 16 rows).
// SM80-LABEL: func.func @gemm_sp_wgmma
// SM80-COUNT-16: nvvm.mma.sp.sync
// SM80-NOT: nvvm.mma.sp.sync
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 32) * 64 + (d1 floordiv 2) mod 4 + (d1 floordiv 32) * 32, ((d0 floordiv 8) mod 2) * 2 + ((d0 floordiv 16) mod 2) * 16 + d1 mod 2 + ((d1 floordiv 8) mod 4) * 4)>
func.func @gemm_sp_wgmma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<64x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<64x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum, warp_partition = array<i64: 2, 2>} : memref<64x32xf16, #tile.scope<shared>>, memref<64x4xi16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// K = 128 (block_K = 128 of the benchmark): four wgmma.mma_async.sp, steps
// 0 and 1 on the first metadata register (E's 16-bit chunks 0..3 of the
// row, selectors 0 then 1), steps 2 and 3 on a second one (chunks 4..7),
// both filled before the fence. Even `async`, the group is waited for
// before the gemm ends: the instructions read the metadata registers while
// in flight, so they must not outlive the op (issue 8).
// SM80-LABEL: func.func @gemm_sp_wgmma_k128
// SM80: nvvm.mma.sp.sync
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 32) * 64 + (d1 floordiv 2) mod 4 + (d1 floordiv 32) * 32, ((d0 floordiv 8) mod 2) * 2 + ((d0 floordiv 16) mod 2) * 16 + d1 mod 2 + ((d1 floordiv 8) mod 4) * 4)>
func.func @gemm_sp_wgmma_k128(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %e = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<64x8xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<128x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {async, clear_accum, warp_partition = array<i64: 2, 2>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x8xi16, #tile.scope<shared>>, memref<128x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
