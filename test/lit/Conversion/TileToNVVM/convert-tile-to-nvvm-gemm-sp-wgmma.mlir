// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=SM90

// The cases of convert-tile-to-nvvm-gemm-sp.mlir, with the input annotated as
// tile-layout-inference{wgmma=true} and tile-insert-barriers leave it for
// sm_90a: a warpgroup's gemm gets a wgmma grid, 64 threads stay on mma.sp.

// A 32x16 sparse tile over K = 64 on 2 warps (each 16x16: one m tile, two
// n tiles), on sm_80 and, with 64 threads (not a warpgroup), on sm_90a too:
// mma.sp m16n8k32. Per K step of 32, A_sparse's m16k16 fragment is one
// ldmatrix.x4 and B's k32n8 one transposing ldmatrix.x4 per n tile. The
// metadata register is built once for both steps from two i16 loads (rows
// g and g + 8 of E, the low and high halves) and serves step 0 with
// sparsity selector 0 and step 1 with selector 1.
// SM90-LABEL: func.func @gemm_sp_mma
// SM90-NOT: wgmma
// SM90: nvvm.mma.sp.sync
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
// SM90-LABEL: func.func @gemm_sp_wgmma
// SM90: gpu.module @gemm_sp_wgmma_kernel [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx82">]
// SM90: %[[META:.+]] = arith.ori %{{.+}}, %{{.+}} : i32
// SM90: nvvm.wgmma.fence.aligned
// SM90: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {{.+}}, $32, $33, $34, 0, p, 1, 1, 0, 1;\0A}", "=f,{{.+}},l,l,r,0,{{.+}}" %{{.+}}, %{{.+}}, %[[META]],
// SM90: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16 {{.+}}, $32, $33, $34, 1, p, 1, 1, 0, 1;\0A}", "=f,{{.+}},l,l,r,0,{{.+}}" %{{.+}}, %{{.+}}, %[[META]],
// SM90: nvvm.wgmma.commit.group.sync.aligned
// SM90-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @gemm_sp_wgmma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<64x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<64x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum, wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<shared>>, memref<64x4xi16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
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
// SM90-LABEL: func.func @gemm_sp_wgmma_k128
// SM90: %[[M0:.+]] = arith.ori %{{.+}}, %{{.+}} : i32
// SM90: %[[M1:.+]] = arith.ori %{{.+}}, %{{.+}} : i32
// SM90: nvvm.wgmma.fence.aligned
// SM90: wgmma.mma_async.sp{{.+}}, 0, p, 1, 1, 0, 1;{{.+}} %{{.+}}, %{{.+}}, %[[M0]],
// SM90: wgmma.mma_async.sp{{.+}}, 1, p, 1, 1, 0, 1;{{.+}} %{{.+}}, %{{.+}}, %[[M0]],
// SM90: wgmma.mma_async.sp{{.+}}, 0, p, 1, 1, 0, 1;{{.+}} %{{.+}}, %{{.+}}, %[[M1]],
// SM90: wgmma.mma_async.sp{{.+}}, 1, p, 1, 1, 0, 1;{{.+}} %{{.+}}, %{{.+}}, %[[M1]],
// SM90: nvvm.wgmma.commit.group.sync.aligned
// SM90-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SM90-NOT: wgmma.mma_async
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @gemm_sp_wgmma_k128(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %e = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<64x8xi16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<128x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {async, clear_accum, wgmma = array<i64: 1, 1>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x8xi16, #tile.scope<shared>>, memref<128x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
