// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-pipeline,tile-layout-inference,tile-insert-barriers),convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s

// End to end, from a tile.pipelined loop to NVVM: software pipelining,
// layout inference and barrier insertion, then the lowering. Each pass is
// tested alone in Tile/Transforms/ and Conversion/TileToNVVM/convert-tile-to-nvvm.mlir
// (@gemm there is this kernel after the first three passes); this test
// checks that they compose.

// A pipelined f16 GEMM tile (128x128x32, 4 warps, 2 stages) on sm_80. The
// kernel is outlined into a gpu.module for the requested chip and launched
// with its grid, block and dynamic shared memory (2 stages x (8 + 8) KB plus
// 1 KB to align the base to the 1 KB period of the swizzle, computed at run
// time); the copies into shared memory are 16-byte cp.async (the offsets
// are provably multiples of 8 elements), committed and waited on in groups;
// the gemm loads A with ldmatrix.x4, B (K-major in shared memory, cut into
// 64-column panels) with transposing ldmatrix.x4 (two n tiles each), and issues m16n8k16
// mma.sync.
// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @gemm
// CHECK: gpu.launch_func @gemm_kernel::@gemm_kernel blocks in (%[[C2:.+]], %[[C2]], %{{.+}}) threads in (%{{.+}}, %{{.+}}, %{{.+}}) dynamic_shared_memory_size %c33792_i32 args(%{{.+}} : memref<256x256xf16>, %{{.+}} : memref<256x256xf16>, %{{.+}} : memref<256x256xf32>)
// CHECK: gpu.module @gemm_kernel [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx80">]
// CHECK: gpu.func @gemm_kernel({{.+}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK-DAG: gpu.thread_id x
// CHECK-DAG: gpu.block_id x
// CHECK-DAG: gpu.block_id y
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[ADDR:.+]] = memref.extract_aligned_pointer_as_index %[[SMEM]]
// CHECK: %[[MIS:.+]] = arith.remui %[[ADDR]], %c1024
// CHECK: %[[PAD0:.+]] = arith.subi %c1024, %[[MIS]]
// CHECK: %[[PAD:.+]] = arith.remui %[[PAD0]], %c1024
// CHECK: %[[A:.+]] = memref.view %[[SMEM]][%[[PAD]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: %[[BOFF:.+]] = arith.addi %[[PAD]], %c16384
// CHECK: %[[B:.+]] = memref.view %[[SMEM]][%[[BOFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.+}}, %[[A]][%{{.+}}], 8, %{{.+}} {bypassL1} : memref<256x256xf16> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK:   nvgpu.ldmatrix %[[A]][%{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK:   nvgpu.ldmatrix %[[B]][%{{.+}}] {numTiles = 4 : i32, transpose = true} : memref<8192xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK:   nvvm.mma.sync A[{{.+}}] B[{{.+}}] C[{{.+}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:   nvvm.cp.async.commit.group
// CHECK: gpu.return
// CHECK-NOT: tile.
func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c2, %c2) threads(128) {
    %a = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.pipelined %k = %c0 to %c8 step %c1 num_stages = 2 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 32)>(%k)
      tile.copy %A[%m, %kk] [128, 32] to %a[%c0, %c0] [128, 32] : memref<256x256xf16> to memref<128x32xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n] [32, 128] to %b[%c0, %c0] [32, 128] : memref<256x256xf16> to memref<32x128xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x32xf16, #tile.scope<shared>>, memref<32x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m, %n] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<256x256xf32>
  }
  return
}
