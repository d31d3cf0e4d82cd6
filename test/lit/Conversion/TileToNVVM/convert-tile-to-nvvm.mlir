// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80 scratch-slots=1},canonicalize,cse)' | FileCheck %s --check-prefix=SLOT1

// A pipelined f16 GEMM tile (128x128x32, 4 warps, 2 stages) on sm_80. The
// kernel is outlined into a gpu.module for the requested chip and launched
// with its grid, block and dynamic shared memory (2 stages x (8 + 8) KB plus
// 1 KB to align the base to the 1 KB period of the swizzle, computed at run
// time); the copies into shared memory are 16-byte cp.async (the offsets
// are provably multiples of 8 elements), committed and waited on in groups;
// the gemm loads A with ldmatrix.x4, B (K-major in shared memory, cut into
// 64-column panels) with transposing ldmatrix.x4 (two n tiles each), and issues m16n8k16
// mma.sync.
// The input is the loop as tile-pipeline leaves it (then canonicalized):
// a 2-stage prologue / steady state / epilogue over buffers with a leading
// stage dimension, annotated by layout inference and barrier insertion.
// test/lit/Pipelines/tile-pipeline-to-nvvm.mlir lowers the same gemm from
// its tile.pipelined form through the whole chain.
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
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 64) * 64 + (d1 floordiv 2) mod 4 + (d1 floordiv 64) * 32, ((d0 floordiv 8) mod 2) * 2 + ((d0 floordiv 16) mod 4) * 32 + d1 mod 2 + ((d1 floordiv 8) mod 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
#map2 = affine_map<(d0) -> (d0 * 32)>
func.func @gemm(%A: memref<256x256xf16>, %B: memref<256x256xf16>, %C: memref<256x256xf32>) {
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c2, %c2) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<2x128x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x32x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m = affine.apply #map1(%by)
    %n = affine.apply #map1(%bx)
    // Prologue: stage 0 loads k = 0.
    tile.copy %A[%m, %c0] [128, 32] to %a[%c0, %c0, %c0] [1, 128, 32] {async} : memref<256x256xf16> to memref<2x128x32xf16, #tile.scope<shared>>
    tile.copy %B[%c0, %n] [32, 128] to %b[%c0, %c0, %c0] [1, 32, 128] {async} : memref<256x256xf16> to memref<2x32x128xf16, #tile.scope<shared>>
    tile.async_commit
    // Steady state: wait for stage (k - 1) % 2, multiply it, load k into
    // stage k % 2.
    scf.for %k = %c1 to %c8 step %c1 {
      %kprev = arith.subi %k, %c1 : index
      tile.async_wait 0
      tile.barrier
      %rs = arith.remui %kprev, %c2 : index
      %a_rs = memref.subview %a[%rs, 0, 0] [1, 128, 32] [1, 1, 1] : memref<2x128x32xf16, #tile.scope<shared>> to memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>
      %b_rs = memref.subview %b[%rs, 0, 0] [1, 32, 128] [1, 1, 1] : memref<2x32x128xf16, #tile.scope<shared>> to memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
      tile.gemm %a_rs, %b_rs, %c {warp_partition = array<i64: 2, 2>} : memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>, memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
      %ws = arith.remui %k, %c2 : index
      %kk = affine.apply #map2(%k)
      tile.copy %A[%m, %kk] [128, 32] to %a[%ws, %c0, %c0] [1, 128, 32] {async} : memref<256x256xf16> to memref<2x128x32xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n] [32, 128] to %b[%ws, %c0, %c0] [1, 32, 128] {async} : memref<256x256xf16> to memref<2x32x128xf16, #tile.scope<shared>>
      tile.async_commit
    }
    // Epilogue: the last stage (k = 7 in stage 1).
    tile.async_wait 0
    tile.barrier
    %a_last = memref.subview %a[1, 0, 0] [1, 128, 32] [1, 1, 1] : memref<2x128x32xf16, #tile.scope<shared>> to memref<128x32xf16, strided<[32, 1], offset: 4096>, #tile.scope<shared>>
    %a1 = memref.cast %a_last : memref<128x32xf16, strided<[32, 1], offset: 4096>, #tile.scope<shared>> to memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>
    %b_last = memref.subview %b[1, 0, 0] [1, 32, 128] [1, 1, 1] : memref<2x32x128xf16, #tile.scope<shared>> to memref<32x128xf16, strided<[128, 1], offset: 4096>, #tile.scope<shared>>
    %b1 = memref.cast %b_last : memref<32x128xf16, strided<[128, 1], offset: 4096>, #tile.scope<shared>> to memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
    tile.gemm %a1, %b1, %c {warp_partition = array<i64: 2, 2>} : memref<128x32xf16, strided<[32, 1], offset: ?>, #tile.scope<shared>>, memref<32x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    tile.async_commit
    tile.async_wait 0
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m, %n] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<256x256xf32>
  }
  return
}

// -----

// A row maximum of a 64x128 fragment: each warp's 32 lanes span a row
// (4 columns each) and each thread holds 16 rows, so the maximum is 16
// butterflies of xor-shuffles over lane distances 1..16; the result changes
// layout through the scratch area of shared memory between barriers (256
// bytes, the result only: rows need no step across warps); exp becomes
// ex2.approx.ftz of a scaled argument (subnormal results flushed: the
// unflushed form costs a range test and two multiplies around each ex2).
// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch_func @row_max_kernel::@row_max_kernel {{.+}} dynamic_shared_memory_size %c256_i32
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<64x128xf32>, vector<4xf32>
// CHECK: arith.maxnumf
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c4_i32, %c32_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c8_i32, %c32_i32 : f32
// CHECK-COUNT-16: gpu.shuffle xor %{{.+}}, %c16_i32, %c32_i32 : f32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT: math.exp
#map = affine_map<(d0, d1) -> ((d0 mod 4) * 32 + d1 floordiv 4, (d0 floordiv 4) * 4 + d1 mod 4)>
#map1 = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 16, d0 mod 4)>
func.func @row_max(%X: memref<64x128xf32>, %Y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %x = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x128xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment {layout = #tile.layout<#map1, threads = 128, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
    tile.copy %X[%c0, %c0] [64, 128] to %x[%c0, %c0] [64, 128] : memref<64x128xf32> to memref<64x128xf32, #tile.scope<fragment>>
    tile.reduce %x -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<64x128xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (64) attributes {layout = #tile.layout<#map1, threads = 128, replicate = 8>} {
      %v = memref.load %m[%i] : memref<64xf32, #tile.scope<fragment>>
      %e = math.exp %v : f32
      memref.store %e, %m[%i] : memref<64xf32, #tile.scope<fragment>>
    }
    tile.copy %m[%c0] [64] to %Y[%c0] [64] : memref<64xf32, #tile.scope<fragment>> to memref<64xf32>
  }
  return
}

// -----

// An asynchronous copy of a 32x64 tile whose rows may run past the 100 rows
// of the source: an out-of-range copy gets a source size of 0 (zero fill)
// and its indices are clamped to 0, so its address stays in the tensor.
// CHECK-LABEL: gpu.func @ragged_tile_kernel
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: arith.cmpi ult, %[[ROW]], %c100
// CHECK: %[[OK:.+]] = arith.andi
// CHECK: %[[N:.+]] = arith.select %[[OK]], %c8, %c0 : index
// CHECK-DAG: %[[R:.+]] = arith.select %[[OK]], %[[ROW]], %c0 : index
// CHECK-DAG: %[[C:.+]] = arith.select %[[OK]], %{{.+}}, %c0 : index
// CHECK: nvgpu.device_async_copy %arg0[%[[R]], %[[C]]], %{{.+}}[%{{.+}}], 8, %[[N]] {bypassL1} : memref<100x64xf16> to memref<2048xf16, #gpu.address_space<workgroup>>
func.func @ragged_tile(%A: memref<100x64xf16>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    %a = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %m = arith.muli %bx, %c32 : index
    tile.copy %A[%m, %c0] [32, 64] to %a[%c0, %c0] [32, 64] {async} : memref<100x64xf16> to memref<32x64xf16, #tile.scope<shared>>
    tile.async_commit
    tile.async_wait 0
  }
  return
}

// -----

// A row maximum, then a row sum of the same fragment: both results go
// through scratch (256 bytes each). Successive ops that stage through
// scratch take turns over two regions (scratch-slots, default 2), so the
// block has 512 bytes and the sum's scratch starts where the maximum's
// ends; with one region both use the same 256 bytes.
// CHECK-LABEL: func.func @row_max_sum
// CHECK: dynamic_shared_memory_size %c512_i32
// CHECK: memref.view %{{.+}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.+}}[%c256{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
// SLOT1-LABEL: func.func @row_max_sum
// SLOT1: dynamic_shared_memory_size %c256_i32
// SLOT1-NOT: %c256
// SLOT1: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 4) * 32 + d1 floordiv 4, (d0 floordiv 4) * 4 + d1 mod 4)>
#map1 = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 16, d0 mod 4)>
func.func @row_max_sum(%X: memref<64x128xf32>, %Y: memref<64xf32>, %Z: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %x = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x128xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment {layout = #tile.layout<#map1, threads = 128, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
    %s = tile.alloc_fragment {layout = #tile.layout<#map1, threads = 128, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
    tile.copy %X[%c0, %c0] [64, 128] to %x[%c0, %c0] [64, 128] : memref<64x128xf32> to memref<64x128xf32, #tile.scope<fragment>>
    tile.reduce %x -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<64x128xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    tile.reduce %x -> %s {kind = #tile.reduce<sum>, dim = 1, clear} : memref<64x128xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    tile.copy %m[%c0] [64] to %Y[%c0] [64] : memref<64xf32, #tile.scope<fragment>> to memref<64xf32>
    tile.copy %s[%c0] [64] to %Z[%c0] [64] : memref<64xf32, #tile.scope<fragment>> to memref<64xf32>
  }
  return
}

// -----

// T.print of a fragment: every thread prints which thread it is, then the
// elements it holds with their flat index (widened to f64 for printf).
// CHECK-LABEL: func.func @print_fragment
// CHECK: gpu.printf "block (%lld, %lld, %lld) thread %lld\0A"
// CHECK: gpu.printf "  [%lld] = %g\0A", %{{.+}}, %{{.+}} : i64, f64
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 8, d0 mod 4)>
func.func @print_fragment(%n: index) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 32, replicate = 4>} : memref<32xf32, #tile.scope<fragment>>
    tile.fill %f, %one : memref<32xf32, #tile.scope<fragment>>, f32
    tile.print %f : memref<32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A device assert in a parallel loop checks every element a thread holds:
// each failing check calls CUDA's __assertfail with the message, the file
// and line of the op's location, the function and a character size of 1
// (declared in the gpu.module; ptxas resolves it as a system call).
// CHECK-LABEL: gpu.module @check_kernel
// CHECK-DAG: llvm.mlir.global internal constant @[[FUNC:.+]]("check\00") {addr_space = 0 : i32}
// CHECK-DAG: llvm.mlir.global internal constant @[[FILE:.+]]("kernel.py\00") {addr_space = 0 : i32}
// CHECK-DAG: llvm.mlir.global internal constant @[[MSG:.+]]("X must be non-negative\00") {addr_space = 0 : i32}
// CHECK-DAG: llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)
// CHECK: gpu.func @check_kernel
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK-DAG: %[[F:.+]] = llvm.mlir.addressof @[[FUNC]] : !llvm.ptr
// CHECK-DAG: %[[LINE:.+]] = arith.constant 12 : i32
// CHECK-DAG: %[[P:.+]] = llvm.mlir.addressof @[[FILE]] : !llvm.ptr
// CHECK-DAG: %[[M:.+]] = llvm.mlir.addressof @[[MSG]] : !llvm.ptr
// CHECK-DAG: %[[TRUE:.+]] = arith.constant true
// CHECK: %[[V:.+]] = memref.load %{{.+}}[%c0] : memref<4xf32>
// CHECK: %[[OK:.+]] = arith.cmpf oge, %[[V]], %{{.+}} : f32
// CHECK: %[[BAD:.+]] = arith.xori %[[OK]], %[[TRUE]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK-NEXT: llvm.call @__assertfail(%[[M]], %[[P]], %[[LINE]], %[[F]], %[[ONE]]) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
// CHECK-COUNT-3: llvm.call @__assertfail(%[[M]], %[[P]], %[[LINE]], %[[F]], %[[ONE]])
// CHECK-NOT: __assertfail
// CHECK: gpu.return
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

// A gemm whose A operand is a 16-bit fragment (P @ V in attention): layout
// inference gives P the layout mma.sync reads A from registers in (the
// accumulator layout of a 64x32 gemm on the same 4x1 warp rows), so the
// gemm packs P's registers into the m16k16 A fragments (two k steps, the
// same A for the eight n tiles of a step): no staging through shared
// memory (4 KB for V and 1 KB of alignment, no scratch), no barrier,
// ldmatrix only for B (two n tiles to a transposing ldmatrix.x4).
// CHECK-LABEL: func.func @register_a
// CHECK: gpu.launch_func {{.+}} dynamic_shared_memory_size %c5120_i32
// CHECK: gpu.func @register_a_kernel
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: vector.from_elements %{{.+}}, %{{.+}} : vector<2xf16>
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.mma.sync A[%[[A0:.+]], %[[A1:.+]], %[[A2:.+]], %[[A3:.+]]]  B
// CHECK-COUNT-7: nvvm.mma.sync A[%[[A0]], %[[A1]], %[[A2]], %[[A3]]]  B
// CHECK-COUNT-4: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @register_a(%V: memref<32x64xf16>, %O: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %v = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<32x64xf16, #tile.scope<shared>>
    %p = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %V[%c0, %c0] [32, 64] to %v[%c0, %c0] [32, 64] : memref<32x64xf16> to memref<32x64xf16, #tile.scope<shared>>
    tile.parallel (%i, %j) in (64, 32) attributes {layout = #tile.layout<#map, threads = 128>} {
      %s = arith.addi %i, %j : index
      %x = arith.index_cast %s : index to i32
      %y = arith.sitofp %x : i32 to f16
      memref.store %y, %p[%i, %j] : memref<64x32xf16, #tile.scope<fragment>>
    }
    tile.fill %o, %zero : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.barrier
    tile.gemm %p, %v, %o {policy = #tile.policy<full_row>, warp_partition = array<i64: 4, 1>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %o[%c0, %c0] [64, 64] to %O[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}

// -----

// Float multiplies and adds in the kernel may contract into fma, as CUDA
// compiles by default: the lowering marks them `contract`.
// CHECK-LABEL: func.func @contract
// CHECK: gpu.func @contract_kernel
// CHECK: %[[M:.+]] = arith.mulf %{{.+}}, %{{.+}} fastmath<contract> : f32
// CHECK: arith.subf %[[M]], %{{.+}} fastmath<contract> : f32
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 32, d0 mod 4)>
func.func @contract(%X: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128, replicate = 4>} : memref<128xf32, #tile.scope<fragment>>
    tile.copy %X[%c0] [128] to %f[%c0] [128] : memref<128xf32> to memref<128xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (128) attributes {layout = #tile.layout<#map, threads = 128, replicate = 4>} {
      %v = memref.load %f[%i] : memref<128xf32, #tile.scope<fragment>>
      %m = arith.mulf %v, %two : f32
      %d = arith.subf %m, %v : f32
      memref.store %d, %f[%i] : memref<128xf32, #tile.scope<fragment>>
    }
    tile.copy %f[%c0] [128] to %X[%c0] [128] : memref<128xf32, #tile.scope<fragment>> to memref<128xf32>
  }
  return
}

// -----

// tile.ieee on NVIDIA: PTX's rounded instructions (sub adds the negation);
// rsqrt and 16-bit types take the shared path.
// CHECK-LABEL: gpu.func @ieee_ops_kernel
// CHECK: llvm.call_intrinsic "llvm.nvvm.add.rz.f"
// CHECK: arith.negf
// CHECK: llvm.call_intrinsic "llvm.nvvm.add.rp.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.fma.rm.d"
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
func.func @ieee_ops(%o: memref<4xf32>, %d: memref<1xf64>, %a: f32, %b: f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %x = tile.ieee add, rz %a, %a : f32, f32 -> f32
    %y = tile.ieee sub, ru %a, %a : f32, f32 -> f32
    %z = tile.ieee fma, rd %b, %b, %b : f64, f64, f64 -> f64
    %w = tile.ieee sqrt, rn %a : f32 -> f32
    memref.store %x, %o[%c0] : memref<4xf32>
    memref.store %y, %o[%c1] : memref<4xf32>
    memref.store %w, %o[%c2] : memref<4xf32>
    memref.store %z, %d[%c0] : memref<1xf64>
  }
  return
}

// -----

// float64 math has no instruction: exp is a reduction by ln 2 (two fmas
// with its two parts) and a series; pow of f32 goes through f64.
// CHECK-LABEL: gpu.func @f64_math_kernel
// CHECK-NOT: math.exp
// CHECK: math.roundeven %{{.+}} : f64
// CHECK: math.fma %{{.+}}, %{{.+}}, %{{.+}} : f64
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK-NOT: math.powf
// CHECK: gpu.return
func.func @f64_math(%o: memref<1xf64>, %p: memref<1xf32>, %x: f64, %a: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %e = math.exp %x : f64
    memref.store %e, %o[%c0] : memref<1xf64>
    %q = math.powf %a, %a : f32
    memref.store %q, %p[%c0] : memref<1xf32>
  }
  return
}
