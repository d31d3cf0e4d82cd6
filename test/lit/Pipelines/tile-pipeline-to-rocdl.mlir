// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline,tile-layout-inference{mma=false mfma=true},tile-insert-barriers),convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-pipeline,tile-layout-inference{mma=false mfma=true},tile-insert-barriers),convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s --check-prefix=AMD

// End to end on gfx942, from a tile.pipelined loop: software pipelining,
// layout inference with MFMA and barrier insertion, then the lowering. Each
// pass is tested alone in Tile/Transforms/ and
// Conversion/TileToROCDL/convert-tile-to-rocdl.mlir (@gemm_f16 there is
// this kernel after the first three passes); this test checks that they
// compose.

// Nothing NVIDIA-specific survives in any case below: no cp.async (copies
// are synchronous), no ldmatrix/mma.sync, no NVVM intrinsics.
// AMD-NOT: nvgpu.
// AMD-NOT: nvvm.
// AMD-NOT: #nvvm.target
// AMD-NOT: gpu.grid_dim

// A pipelined f16 GEMM tile (32x64x16, one wave of 64 threads, 2 stages) on
// gfx942. The kernel is outlined into a gpu.module with a ROCDL target; the
// two stages of A (2 x 32x16) and B (2 x 16x64) live in the LDS (6 KB plus
// 1 KB to align the swizzle base); the copies of the pipeliner are plain
// 16-byte global loads and LDS stores (the prologue fills stage 0, the loop
// fills the next stage after its gemm, behind one barrier per iteration).
// Each K step of 8 gathers per lane 4 A values (row l mod 32, columns
// 4 (l / 32) + i) and 4 B values per 32-column block from the LDS, and
// issues one v_mfma_f32_32x32x8f16 per 32x32 block: 2 steps x 2 blocks per
// iteration; the accumulator (32 f32 per lane) is a private array that LLVM
// promotes to registers.
// CHECK-LABEL: func.func @gemm_f16
// CHECK: gpu.launch_func @gemm_f16_kernel::@gemm_f16_kernel blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) dynamic_shared_memory_size %c7168_i32
// CHECK: gpu.module @gemm_f16_kernel [#rocdl.target<O = 3, chip = "gfx942">]
// CHECK: gpu.func @gemm_f16_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK: %[[ACC:.+]] = memref.alloca() {alignment = 16 : i64} : memref<32xf32, #gpu.address_space<private>>
// CHECK-NEXT: gpu.thread_id x
// CHECK: %[[A:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1024xf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.+]] = memref.view %{{.+}}[%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2048xf16, #gpu.address_space<workgroup>>
// CHECK: vector.load %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<64x64xf16>, vector<8xf16>
// CHECK: vector.store %{{.+}}, %[[A]][%{{.+}}] {alignment = 16 : i64} : memref<1024xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: vector.store %{{.+}}, %[[B]][%{{.+}}] {alignment = 16 : i64} : memref<2048xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.for
// CHECK-NEXT: arith.subi
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: memref.load %[[A]]
// CHECK: vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf16>
// CHECK-COUNT-4: memref.load %[[B]]
// CHECK: vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf16>
// CHECK-COUNT-16: memref.load %[[ACC]]
// CHECK: rocdl.mfma.f32.32x32x8f16 %{{.+}}, %{{.+}}, %{{.+}}, %c0_i32, %c0_i32, %c0_i32 : (vector<4xf16>, vector<4xf16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
// CHECK-COUNT-3: rocdl.mfma.f32.32x32x8f16
// CHECK: vector.store %{{.+}}, %[[A]]
// CHECK: vector.store %{{.+}}, %[[B]]
// CHECK: vector.store %{{.+}}, %[[B]]{{.+}}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-4: rocdl.mfma.f32.32x32x8f16
// CHECK-NOT: rocdl.mfma
// CHECK: gpu.return
func.func @gemm_f16(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c1, %c2) threads(64) {
    %a = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<32x64xf32, #tile.scope<fragment>>, f32
    %m = affine.apply affine_map<(d0) -> (d0 * 32)>(%by)
    tile.pipelined %k = %c0 to %c4 step %c1 num_stages = 2 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 16)>(%k)
      tile.copy %A[%m, %kk] [32, 16] to %a[%c0, %c0] [32, 16] : memref<64x64xf16> to memref<32x16xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %c0] [16, 64] to %b[%c0, %c0] [16, 64] : memref<64x64xf16> to memref<16x64xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<32x16xf16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [32, 64] to %C[%m, %c0] [32, 64] : memref<32x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}
