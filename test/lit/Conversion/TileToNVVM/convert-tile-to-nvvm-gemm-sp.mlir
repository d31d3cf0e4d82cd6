// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference,tile-insert-barriers),convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=SM80
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=SM90

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
// SM90-LABEL: func.func @gemm_sp_mma
// SM90-NOT: wgmma
// SM90: nvvm.mma.sp.sync
func.func @gemm_sp_mma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared : memref<32x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<32x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x16xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum} : memref<32x32xf16, #tile.scope<shared>>, memref<32x4xi16, #tile.scope<shared>>, memref<64x16xf16, #tile.scope<shared>> -> memref<32x16xf32, #tile.scope<fragment>>
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
// SM80-LABEL: func.func @gemm_sp_wgmma
// SM80-COUNT-16: nvvm.mma.sp.sync
// SM80-NOT: nvvm.mma.sp.sync
func.func @gemm_sp_wgmma(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum} : memref<64x32xf16, #tile.scope<shared>>, memref<64x4xi16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
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
// SM80-LABEL: func.func @gemm_sp_wgmma_k128
// SM80: nvvm.mma.sp.sync
func.func @gemm_sp_wgmma_k128(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x8xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_sp %a, %e, %b, %c {clear_accum, async} : memref<64x64xf16, #tile.scope<shared>>, memref<64x8xi16, #tile.scope<shared>>, memref<128x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
