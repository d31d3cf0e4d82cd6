// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s --check-prefix=AMD

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
// The input is the loop as tile-pipeline leaves it (then canonicalized),
// annotated by layout inference (MFMA) and barrier insertion;
// test/lit/Pipelines/tile-pipeline-to-rocdl.mlir lowers the same gemm from
// its tile.pipelined form through the whole chain.
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
#map = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1 mod 32, d0 mod 4 + (d0 floordiv 8) * 4 + (d1 floordiv 32) * 16)>
#map1 = affine_map<(d0) -> (d0 * 32)>
#map2 = affine_map<(d0) -> (d0 * 16)>
func.func @gemm_f16(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c1, %c2) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<2x32x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x64xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<32x64xf32, #tile.scope<fragment>>, f32
    %m = affine.apply #map1(%by)
    // Prologue: stage 0 loads k = 0.
    tile.copy %A[%m, %c0] [32, 16] to %a[%c0, %c0, %c0] [1, 32, 16] {async} : memref<64x64xf16> to memref<2x32x16xf16, #tile.scope<shared>>
    tile.copy %B[%c0, %c0] [16, 64] to %b[%c0, %c0, %c0] [1, 16, 64] {async} : memref<64x64xf16> to memref<2x16x64xf16, #tile.scope<shared>>
    tile.async_commit
    // Steady state: wait for stage (k - 1) % 2, multiply it, load k into
    // stage k % 2.
    scf.for %k = %c1 to %c4 step %c1 {
      %kprev = arith.subi %k, %c1 : index
      tile.async_wait 0
      tile.barrier
      %rs = arith.remui %kprev, %c2 : index
      %a_rs = memref.subview %a[%rs, 0, 0] [1, 32, 16] [1, 1, 1] : memref<2x32x16xf16, #tile.scope<shared>> to memref<32x16xf16, strided<[16, 1], offset: ?>, #tile.scope<shared>>
      %b_rs = memref.subview %b[%rs, 0, 0] [1, 16, 64] [1, 1, 1] : memref<2x16x64xf16, #tile.scope<shared>> to memref<16x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
      tile.gemm %a_rs, %b_rs, %c {mfma = array<i64: 1, 1>} : memref<32x16xf16, strided<[16, 1], offset: ?>, #tile.scope<shared>>, memref<16x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
      %ws = arith.remui %k, %c2 : index
      %kk = affine.apply #map2(%k)
      tile.copy %A[%m, %kk] [32, 16] to %a[%ws, %c0, %c0] [1, 32, 16] {async} : memref<64x64xf16> to memref<2x32x16xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %c0] [16, 64] to %b[%ws, %c0, %c0] [1, 16, 64] {async} : memref<64x64xf16> to memref<2x16x64xf16, #tile.scope<shared>>
      tile.async_commit
    }
    // Epilogue: the last stage (k = 3 in stage 1).
    tile.async_wait 0
    tile.barrier
    %a_last = memref.subview %a[1, 0, 0] [1, 32, 16] [1, 1, 1] : memref<2x32x16xf16, #tile.scope<shared>> to memref<32x16xf16, strided<[16, 1], offset: 512>, #tile.scope<shared>>
    %a1 = memref.cast %a_last : memref<32x16xf16, strided<[16, 1], offset: 512>, #tile.scope<shared>> to memref<32x16xf16, strided<[16, 1], offset: ?>, #tile.scope<shared>>
    %b_last = memref.subview %b[1, 0, 0] [1, 16, 64] [1, 1, 1] : memref<2x16x64xf16, #tile.scope<shared>> to memref<16x64xf16, strided<[64, 1], offset: 1024>, #tile.scope<shared>>
    %b1 = memref.cast %b_last : memref<16x64xf16, strided<[64, 1], offset: 1024>, #tile.scope<shared>> to memref<16x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
    tile.gemm %a1, %b1, %c {mfma = array<i64: 1, 1>} : memref<32x16xf16, strided<[16, 1], offset: ?>, #tile.scope<shared>>, memref<16x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>> -> memref<32x64xf32, #tile.scope<fragment>>
    tile.async_commit
    tile.async_wait 0
    tile.copy %c[%c0, %c0] [32, 64] to %C[%m, %c0] [32, 64] : memref<32x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}

// -----

// A bf16 gemm of one 32x32x8 block: one wave, one MFMA. Lane l of wave w
// reads A[32 w + l mod 32][4 (l / 32) + i] (row-major 32x8 in the LDS: flat
// offset row * 8 + k) as i16 (the intrinsic's bf16 type), and the
// accumulator is cleared before (clear_accum) and written back register by
// register after.
// CHECK-LABEL: func.func @gemm_bf16
// CHECK: gpu.func @gemm_bf16_kernel
// CHECK: %[[ACC:.+]] = memref.alloca() {alignment = 16 : i64} : memref<16xf32, #gpu.address_space<private>>
// CHECK-NEXT: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[AV:.+]] = memref.view %{{.+}} to memref<256xbf16, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: %[[WAVE:.+]] = arith.divui %[[TID]], %c64 : index
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c64 : index
// CHECK: %[[L32:.+]] = arith.remui %[[LANE]], %c32 : index
// CHECK: %[[HALF:.+]] = arith.divui %[[LANE]], %c32 : index
// CHECK: %[[K0:.+]] = arith.muli %[[HALF]], %c4 : index
// CHECK: %[[ROW0:.+]] = arith.muli %[[WAVE]], %c32 : index
// CHECK-COUNT-16: memref.store %cst, %[[ACC]]
// CHECK: %[[ROW:.+]] = arith.addi %[[ROW0]], %[[L32]] : index
// CHECK: %[[RBASE:.+]] = arith.muli %[[ROW]], %c8 : index
// CHECK: %[[OFF:.+]] = arith.addi %[[RBASE]], %[[K0]] : index
// CHECK: %[[X0:.+]] = memref.load %[[AV]][%[[OFF]]]
// CHECK: %[[I0:.+]] = arith.bitcast %[[X0]] : bf16 to i16
// CHECK: %[[AOP:.+]] = vector.from_elements %[[I0]], %{{.+}}, %{{.+}}, %{{.+}} : vector<4xi16>
// CHECK: %[[BOP:.+]] = vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xi16>
// CHECK: %[[C:.+]] = vector.from_elements {{.+}} : vector<16xf32>
// CHECK: %[[D:.+]] = rocdl.mfma.f32.32x32x8bf16.1k %[[AOP]], %[[BOP]], %[[C]], %c0_i32, %c0_i32, %c0_i32 : (vector<4xi16>, vector<4xi16>, vector<16xf32>, i32, i32, i32) -> vector<16xf32>
// CHECK: %[[D0:.+]] = vector.extract %[[D]][0] : f32 from vector<16xf32>
// CHECK-NEXT: memref.store %[[D0]], %[[ACC]][%c0]
// CHECK: %[[D15:.+]] = vector.extract %[[D]][15] : f32 from vector<16xf32>
// CHECK-NEXT: memref.store %[[D15]], %[[ACC]][%c15]
#map = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1, d0 mod 4 + (d0 floordiv 8) * 4)>
func.func @gemm_bf16(%A: memref<32x8xbf16>, %B: memref<8x32xbf16>, %C: memref<32x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<32x8xbf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<8x32xbf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x32xf32, #tile.scope<fragment>>
    tile.copy %A[%c0, %c0] [32, 8] to %a[%c0, %c0] [32, 8] : memref<32x8xbf16> to memref<32x8xbf16, #tile.scope<shared>>
    tile.copy %B[%c0, %c0] [8, 32] to %b[%c0, %c0] [8, 32] : memref<8x32xbf16> to memref<8x32xbf16, #tile.scope<shared>>
    tile.barrier
    tile.gemm %a, %b, %c {clear_accum, mfma = array<i64: 1, 1>} : memref<32x8xbf16, #tile.scope<shared>>, memref<8x32xbf16, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
    tile.copy %c[%c0, %c0] [32, 32] to %C[%c0, %c0] [32, 32] : memref<32x32xf32, #tile.scope<fragment>> to memref<32x32xf32>
  }
  return
}

// -----

// A row maximum of a 16x512 fragment over two waves: a row's 128 threads
// (4 columns each) are both waves, so the lane part is 16 butterflies (one
// per row a thread holds) at xor distances 1..32 within the 64-lane wave,
// and the wave part goes through the LDS scratch (16 partials per wave,
// 128 bytes as sized from the layouts, barriers around, the maximum of
// both); exp becomes the AMDGPU exp2.
// Every per-thread array, the reduction's own included, is allocated at the
// top of the kernel, where LLVM promotes it to registers (an alloca in a
// later block would stay in scratch).
// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch_func @row_max_kernel::@row_max_kernel {{.+}} dynamic_shared_memory_size %c128_i32
// CHECK: gpu.func @row_max_kernel
// CHECK-COUNT-3: memref.alloca() {alignment = 16 : i64} : memref<{{16|4|64}}xf32, #gpu.address_space<private>>
// CHECK-NEXT: %[[TID:.+]] = gpu.thread_id x
// CHECK-NOT: memref.alloca
// CHECK: arith.maxnumf
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c1_i32, %c64_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c2_i32, %c64_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c4_i32, %c64_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c8_i32, %c64_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c16_i32, %c64_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c32_i32, %c64_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: %[[SCRATCH:.+]] = memref.view %{{.+}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32xf32, #gpu.address_space<workgroup>>
// CHECK: %[[WAVE:.+]] = arith.divui %[[TID]], %c64 : index
// CHECK: %[[W:.+]] = arith.remui %[[WAVE]], %c2 : index
// CHECK: gpu.barrier
// CHECK: %[[SLOT:.+]] = arith.muli %[[W]], %c16 : index
// CHECK: memref.store %{{.+}}, %[[SCRATCH]][%[[SLOT]]]
// CHECK: gpu.barrier
// CHECK: %[[P0:.+]] = memref.load %[[SCRATCH]][%c0]
// CHECK: %[[P1:.+]] = memref.load %[[SCRATCH]][%c16]
// CHECK: arith.maxnumf %[[P0]], %[[P1]] : f32
// CHECK-NOT: memref.alloca
// CHECK: llvm.call_intrinsic "llvm.amdgcn.exp2.f32"
// CHECK-NOT: math.exp
// CHECK-NOT: memref.alloca
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> (d1 floordiv 4, d0 * 4 + d1 mod 4)>
#map1 = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 4, d0 mod 4)>
func.func @row_max(%X: memref<16x512xf32>, %Y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %x = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<16x512xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment {layout = #tile.layout<#map1, threads = 128, replicate = 32>} : memref<16xf32, #tile.scope<fragment>>
    tile.copy %X[%c0, %c0] [16, 512] to %x[%c0, %c0] [16, 512] : memref<16x512xf32> to memref<16x512xf32, #tile.scope<fragment>>
    tile.reduce %x -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<16x512xf32, #tile.scope<fragment>> -> memref<16xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (16) attributes {layout = #tile.layout<#map1, threads = 128, replicate = 32>} {
      %v = memref.load %m[%i] : memref<16xf32, #tile.scope<fragment>>
      %e = math.exp %v : f32
      memref.store %e, %m[%i] : memref<16xf32, #tile.scope<fragment>>
    }
    tile.copy %m[%c0] [16] to %Y[%c0] [16] : memref<16xf32, #tile.scope<fragment>> to memref<16xf32>
  }
  return
}

// -----

// A device assert on AMD traps (llvm.trap is `s_trap 2`, which aborts the
// dispatch): the message would need the device libraries' printf.
// CHECK-LABEL: gpu.func @check_kernel
// CHECK-DAG: %[[TRUE:.+]] = arith.constant true
// CHECK: %[[OK:.+]] = arith.cmpf oge, %{{.+}}, %{{.+}} : f32
// CHECK: %[[BAD:.+]] = arith.xori %[[OK]], %[[TRUE]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK-NEXT: llvm.intr.trap
// CHECK-NEXT: }
// CHECK-NOT: llvm.call
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 16, d0 mod 4)>
func.func @check(%X: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64, replicate = 4>} : memref<64xf32, #tile.scope<fragment>>
    tile.copy %X[%c0] [64] to %f[%c0] [64] : memref<64xf32> to memref<64xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (64) attributes {layout = #tile.layout<#map, threads = 64, replicate = 4>} {
      %v = memref.load %f[%i] : memref<64xf32, #tile.scope<fragment>>
      %ok = arith.cmpf oge, %v, %zero : f32
      tile.device_assert %ok, "X must be non-negative" loc("kernel.py":12:9)
    }
  }
  return
}

// -----

// Block rasterization needs the grid's extent. MLIR's ROCDL conversion
// would turn gpu.grid_dim into a device-library call (not linked): the grid
// in work-items comes from the HSA dispatch packet (grid_size_x at byte 12,
// grid_size_y at 16) and is divided by the static block size (64 x 2).
// CHECK-LABEL: gpu.func @raster_kernel
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK: %[[P0:.+]] = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
// CHECK: %[[F0:.+]] = llvm.getelementptr %[[P0]][12] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[X0:.+]] = llvm.load %[[F0]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[X1:.+]] = arith.index_castui %[[X0]] : i32 to index
// CHECK: %[[GX:.+]] = arith.divui %[[X1]], %[[C64]] : index
// CHECK: %[[P1:.+]] = llvm.call_intrinsic "llvm.amdgcn.dispatch.ptr"() : () -> !llvm.ptr<4>
// CHECK: %[[F1:.+]] = llvm.getelementptr %[[P1]][16] : (!llvm.ptr<4>) -> !llvm.ptr<4>, i8
// CHECK: %[[Y0:.+]] = llvm.load %[[F1]] invariant {alignment = 4 : i64} : !llvm.ptr<4> -> i32
// CHECK: %[[Y1:.+]] = arith.index_castui %[[Y0]] : i32 to index
// CHECK: %[[GY:.+]] = arith.divui %[[Y1]], %[[C2]] : index
// CHECK: arith.muli %{{.+}}, %[[GX]] : index
// CHECK: arith.subi %[[GY]], %{{.+}} : index
func.func @raster(%X: memref<256x256xf32>, %n: index) {
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(64, 2) {
    tile.use_swizzle 4
    %i = arith.muli %by, %n : index
    %j = arith.addi %i, %bx : index
    %v = arith.index_cast %j : index to i32
    %f = arith.sitofp %v : i32 to f32
    memref.store %f, %X[%by, %bx] : memref<256x256xf32>
  }
  return
}

// -----

// A converting copy into LDS: float32 loads, converted lane-wise to f16
// (the lowering used to abort on the vector type of the destination).
// CHECK-LABEL: gpu.func @copy_convert_kernel
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

// No TMA or wgmma reads shared memory here: T.fence_proxy_async has nothing
// to order and lowers to nothing (as on NVIDIA chips before sm_90).
// CHECK-LABEL: gpu.func @fence_proxy_async_kernel
// CHECK-NOT: fence
// CHECK: memref.store
// CHECK-NOT: fence
// CHECK: gpu.return
func.func @fence_proxy_async(%X: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    tile.fence_proxy_async
    memref.store %one, %X[%c0] : memref<64xf32>
  }
  return
}
