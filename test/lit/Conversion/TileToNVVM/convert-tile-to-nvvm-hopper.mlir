// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80 producer-registers=40})' | FileCheck %s --check-prefix=REGS40
// RUN: not tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80 producer-registers=30})' 2>&1 | FileCheck %s --check-prefix=BADREGS

// The Hopper GEMM tile (128x256x64, 4 stages, 2 consumer warpgroups) after
// tile-warp-specialize, lowered for sm_90a. The block gets the producer
// warpgroup (384 threads), a register cap at entry (minctasm = 1) and the
// cluster shape; the two tensor maps come first among the kernel's
// arguments (placeholders at the launch, described in `tile.tensormaps`:
// A boxes of 128x64, B boxes of one 64x64 panel, 128-byte swizzle). Thread 0
// initializes the 4 full (1 arrival) and 4 empty (16 arrivals) barriers, then
// the cluster synchronizes. The producer drops to 24 registers, waits on
// `empty`, announces 48 KB and issues one TMA load for A and, from the
// block of the cluster that owns them, the four B panels multicast to both
// blocks. The consumers raise their registers to 240, wait on `full`, issue
// four m64n256k16 wgmma (B N-major: layout row), keep one group in flight
// and release the previous slot in both blocks (mapa + remote arrive).
// CHECK-LABEL: func.func @gemm
// CHECK: %[[Z:.+]] = llvm.mlir.zero : !llvm.ptr
// CHECK: gpu.launch_func @gemm_kernel::@gemm_kernel blocks in (%c16, %c32, %c1) threads in (%c384, %c1, %c1) dynamic_shared_memory_size %c198656_i32 args(%[[Z]] : !llvm.ptr, %[[Z]] : !llvm.ptr, %{{.+}} : memref<4096x4096xf16>, %{{.+}} : memref<4096x4096xf16>, %{{.+}} : memref<4096x4096xf32>, %{{.+}} : index) {tile.tensormaps = [{box = array<i64: 128, 64>, param = 0 : i64, swizzle = 128 : i64}, {box = array<i64: 64, 64>, param = 1 : i64, swizzle = 128 : i64}]}
// CHECK: gpu.func @gemm_kernel(%[[TA:.+]]: !llvm.ptr, %[[TB:.+]]: !llvm.ptr, %{{.+}}: memref<4096x4096xf16>, %{{.+}}: memref<4096x4096xf16>, %{{.+}}: memref<4096x4096xf32>, %{{.+}}: index) kernel attributes {known_block_size = array<i32: 384, 1, 1>, nvvm.cluster_dim = array<i32: 1, 2, 1>, nvvm.minctasm = 1 : i32, tile.tensormap_args = 2 : i64}
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c1_i32 : !llvm.ptr<3>, i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.+}}, %c16_i32 : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: nvvm.setmaxregister decrease 24
// REGS40: nvvm.setmaxregister decrease 40
// REGS40: nvvm.setmaxregister increase 232
// BADREGS: error: convert-tile-to-nvvm: producer-registers must be a multiple of 8 from 24 to 256, got 30
// CHECK: nvvm.mbarrier.try_wait
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.+}}, %c49152_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[TA]], %{{.+}}, box[%{{.+}}, %{{.+}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank
// CHECK-COUNT-4: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.+}}, %[[TB]], %{{.+}}, box[%{{.+}}, %{{.+}}] multicast_mask = %c3_i16
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvvm.mbarrier.try_wait
// Only the first K step's descriptors are built from the addresses (and,
// shift, or with the fixed fields), each pinned where the gemm is by an
// opaque move (LLVM would hoist every K step's descriptor of a gemm in a
// loop out of it); the later ones add the distance in 16-byte units to
// them (constants once LLVM folds the index arithmetic).
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[DB0:.+]] = arith.ori %{{.+}}, %c4611686293338849280_i64 : i64
// CHECK-NEXT: %[[DB:.+]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b64 $0, $1;", "=l,l" %[[DB0]] : (i64) -> i64
// CHECK: %[[DA0:.+]] = arith.ori %{{.+}}, %c4611686293305360384_i64 : i64
// CHECK-NEXT: %[[DA:.+]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b64 $0, $1;", "=l,l" %[[DA0]] : (i64) -> i64
// CHECK: nvvm.wgmma.mma_async %[[DA]], %[[DB]], %{{.+}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// CHECK-NOT: arith.shrui
// CHECK: %[[DB1:.+]] = arith.addi %[[DB]], %{{.+}} : i64
// CHECK-NOT: arith.shrui
// CHECK: %[[DA1:.+]] = arith.addi %[[DA]], %{{.+}} : i64
// CHECK-NEXT: nvvm.wgmma.mma_async %[[DA1]], %[[DB1]], %{{.+}}, <m = 64, n = 256, k = 16>
// CHECK-NOT: arith.shrui
// CHECK-COUNT-2: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mapa %{{.+}}, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: nvvm.mbarrier.arrive %{{.+}} : !llvm.ptr<7>
// CHECK: nvvm.mapa %{{.+}}, %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK-NEXT: nvvm.mbarrier.arrive %{{.+}} : !llvm.ptr<7>
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK-NEXT: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
#map2 = affine_map<(d0) -> (d0 * 64)>
#map3 = affine_map<(d0) -> (d0 * 256)>
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(256) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<4x64x256xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<4xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(16) : memref<4xi64, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<128x256xf32, #tile.scope<fragment>>
    tile.warp_specialize producer(128) {
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c4 : index
        %round = arith.divui %k, %c4 : index
        %parity = arith.remui %round, %c2 : index
        %phase = arith.xori %parity, %c1 : index
        tile.barrier_wait %empty[%slot], %phase : memref<4xi64, #tile.scope<shared>>
        tile.barrier_arrive %full[%slot] expect_tx(49152) : memref<4xi64, #tile.scope<shared>>
        %m0 = affine.apply #map1(%by)
        %kk = affine.apply #map2(%k)
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<4x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %A[%m0, %kk] [128, 64] to %a_slot[%c0, %c0] [128, 64] via %full[%slot] : memref<4096x4096xf16> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<4xi64, #tile.scope<shared>>
        %n0 = affine.apply #map3(%bx)
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf16, #tile.scope<shared>> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %B[%kk, %n0] [64, 256] to %b_slot[%c0, %c0] [64, 256] via %full[%slot] {multicast = 2 : i64} : memref<4096x4096xf16> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>, memref<4xi64, #tile.scope<shared>>
      }
    } consumer {
      tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
      %m0 = affine.apply #map1(%by)
      %n0 = affine.apply #map3(%bx)
      scf.for %k = %c0 to %n step %c1 {
        %slot = arith.remui %k, %c4 : index
        %round = arith.divui %k, %c4 : index
        %phase = arith.remui %round, %c2 : index
        tile.barrier_wait %full[%slot], %phase : memref<4xi64, #tile.scope<shared>>
        %a_slot = memref.subview %a[%slot, 0, 0] [1, 128, 64] [1, 1, 1] : memref<4x128x64xf16, #tile.scope<shared>> to memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
        %b_slot = memref.subview %b[%slot, 0, 0] [1, 64, 256] [1, 1, 1] : memref<4x64x256xf16, #tile.scope<shared>> to memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %a_slot, %b_slot, %c {async, wgmma = array<i64: 2, 1>} : memref<128x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<64x256xf16, strided<[256, 1], offset: ?>, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
        tile.gemm_wait 1
        %not_first = arith.cmpi ugt, %k, %c0 : index
        scf.if %not_first {
          %prev_plus = arith.addi %slot, %c3 : index
          %prev = arith.remui %prev_plus, %c4 : index
          tile.barrier_arrive %empty[%prev] {cluster} : memref<4xi64, #tile.scope<shared>>
        }
      }
      tile.gemm_wait 0
      tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
    } {cluster = array<i64: 1, 2, 1>}
  }
  return
}
// -----

// wgmma with A from registers (the RS form, P @ V in attention): layout
// inference gives the 16-bit fragment A the layout of a 64x32 wgmma
// accumulator (each warp's m16k16 fragments), the lowering packs its
// registers into four 32-bit A registers per k step before the fence and
// issues the RS form as inline PTX (MLIR's NVVM op has only the
// shared-memory form): accumulators tied, B (K x N, N-major) through its
// descriptor with imm-trans-b = 1. No shared memory holds A and no barrier
// comes between the parallel loop and the gemm.
// CHECK-LABEL: func.func @register_a
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-8: vector.from_elements %{{.+}}, %{{.+}} : vector<2xf16>
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-2: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {$0, {{.+}}, $31}, {$32, $33, $34, $35}, $36, p, 1, 1, 1;\0A}", "=f,{{.+}},=f,r,r,r,r,l,0,1,{{.+}},31"
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
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
    tile.gemm %p, %v, %o {wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %o[%c0, %c0] [64, 64] to %O[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}

// -----

// A cleared wgmma accumulator (S = Q K^T in attention) is not zeroed in
// registers: the first K step ignores it (D scale zero), the others add.
// CHECK-LABEL: func.func @clear_accum
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>]
// CHECK: nvvm.wgmma.mma_async {{.+}} <m = 64, n = 64, k = 16>, D[<f32>, <one>]
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @clear_accum(%Q: memref<64x32xf16>, %K: memref<64x32xf16>, %O: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %q = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<64x32xf16, #tile.scope<shared>>
    %k = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<64x32xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %Q[%c0, %c0] [64, 32] to %q[%c0, %c0] [64, 32] : memref<64x32xf16> to memref<64x32xf16, #tile.scope<shared>>
    tile.copy %K[%c0, %c0] [64, 32] to %k[%c0, %c0] [64, 32] : memref<64x32xf16> to memref<64x32xf16, #tile.scope<shared>>
    tile.barrier
    tile.gemm %q, %k, %s {clear_accum, transpose_b, wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<shared>>, memref<64x32xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %s[%c0, %c0] [64, 64] to %O[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}

// -----

// Consumer warpgroups taking turns at the gemms of an attention loop (both
// gemms marked `pingpong` by tile-warp-specialize; 2 warpgroups, each owning
// 64 rows): named barrier 3 + w is warpgroup w's turn. The last warpgroup
// lets the first go first; each gemm waits for its turn, issues its wgmma
// group and hands the turn to the next warpgroup before waiting for the
// results (the tensor cores run them in issue order); the first warpgroup
// takes the last hand-over at the end, so every arrival is waited for.
// CHECK-LABEL: func.func @pingpong
// CHECK: nvvm.setmaxregister increase 240
// CHECK: %[[WG:.+]] = arith.divui %{{.+}}, %c128
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[WG]], %c0
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[WG]], %c1
// CHECK: scf.if %[[LAST]] {
// CHECK-NEXT: nvvm.barrier.arrive id = %c3_i32 number_of_threads = %c256_i32
// CHECK: scf.for
// CHECK: nvvm.barrier id = %[[MINE:.+]] number_of_threads = %c256_i32
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.barrier.arrive id = %[[NEXT:.+]] number_of_threads = %c256_i32
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.barrier id = %[[MINE]] number_of_threads = %c256_i32
// CHECK: llvm.inline_asm
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.barrier.arrive id = %[[NEXT]] number_of_threads = %c256_i32
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: nvvm.barrier id = %c3_i32 number_of_threads = %c256_i32
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
#map1 = affine_map<(d0) -> (d0 * 128)>
func.func @pingpong(%Q: memref<4096x128xf16>, %K: memref<4x4096x128xf16>, %V: memref<4x4096x128xf16>, %O: memref<4096x128xf32>) {
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c32, %c4) threads(256) {
    %k = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x128x128xf16, #tile.scope<shared>>
    %full = tile.alloc_barrier arrivals(1) : memref<2xi64, #tile.scope<shared>>
    %empty = tile.alloc_barrier arrivals(8) : memref<2xi64, #tile.scope<shared>>
    %q = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<128x128xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<128x128xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<128x128xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<128x128xf32, #tile.scope<fragment>>
    tile.warp_specialize producer(128) {
      %n = arith.addi %bx, %c1 : index
      scf.for %j = %c0 to %n step %c1 {
        %slot = arith.remui %j, %c2 : index
        %round = arith.divui %j, %c2 : index
        %parity = arith.remui %round, %c2 : index
        %phase = arith.xori %parity, %c1 : index
        tile.barrier_wait %empty[%slot], %phase : memref<2xi64, #tile.scope<shared>>
        tile.barrier_arrive %full[%slot] expect_tx(65536) : memref<2xi64, #tile.scope<shared>>
        %kk = affine.apply #map1(%j)
        %k_slot = memref.subview %k[%slot, 0, 0] [1, 128, 128] [1, 1, 1] : memref<2x128x128xf16, #tile.scope<shared>> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %K[%by, %kk, %c0] [1, 128, 128] to %k_slot[%c0, %c0] [128, 128] via %full[%slot] : memref<4x4096x128xf16> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>, memref<2xi64, #tile.scope<shared>>
        %v_slot = memref.subview %v[%slot, 0, 0] [1, 128, 128] [1, 1, 1] : memref<2x128x128xf16, #tile.scope<shared>> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.copy %V[%by, %kk, %c0] [1, 128, 128] to %v_slot[%c0, %c0] [128, 128] via %full[%slot] : memref<4x4096x128xf16> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>, memref<2xi64, #tile.scope<shared>>
      }
    } consumer {
      %m0 = affine.apply #map1(%bx)
      tile.copy %Q[%m0, %c0] [128, 128] to %q[%c0, %c0] [128, 128] : memref<4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.fill %o, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
      %n = arith.addi %bx, %c1 : index
      tile.barrier
      scf.for %j = %c0 to %n step %c1 {
        %slot = arith.remui %j, %c2 : index
        %round = arith.divui %j, %c2 : index
        %phase = arith.remui %round, %c2 : index
        tile.barrier_wait %full[%slot], %phase : memref<2xi64, #tile.scope<shared>>
        %k_slot = memref.subview %k[%slot, 0, 0] [1, 128, 128] [1, 1, 1] : memref<2x128x128xf16, #tile.scope<shared>> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        %v_slot = memref.subview %v[%slot, 0, 0] [1, 128, 128] [1, 1, 1] : memref<2x128x128xf16, #tile.scope<shared>> to memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>>
        tile.gemm %q, %k_slot, %s {clear_accum, pingpong, policy = #tile.policy<full_row>, transpose_b, wgmma = array<i64: 2, 1>} : memref<128x128xf16, #tile.scope<shared>>, memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
        tile.copy %s[%c0, %c0] [128, 128] to %p[%c0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<128x128xf16, #tile.scope<fragment>>
        tile.gemm %p, %v_slot, %o {pingpong, policy = #tile.policy<full_row>, wgmma = array<i64: 2, 1>} : memref<128x128xf16, #tile.scope<fragment>>, memref<128x128xf16, strided<[128, 1], offset: ?>, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
        tile.barrier_arrive %empty[%slot] : memref<2xi64, #tile.scope<shared>>
      }
      tile.copy %o[%c0, %c0] [128, 128] to %O[%m0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x128xf32>
    }
  }
  return
}
// -----

// Asynchronous register-A gemms (T.gemm(..., wg_wait=-1), the dequant
// decode kernel's overlap): each is fenced, issued and committed without a
// wait, so the second fragment's math runs while the first wgmma is in
// flight; each in-flight wgmma reads its own fragment's registers, and one
// tile.gemm_wait 0 (T.wait_wgmma(0)) waits for both before the accumulator
// is read.
// CHECK-LABEL: func.func @async_register_a
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: arith.sitofp
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
func.func @async_register_a(%V: memref<32x64xf16>, %O: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %v0 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<16x64xf16, #tile.scope<shared>>
    %v1 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<16x64xf16, #tile.scope<shared>>
    %p0 = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x16xf16, #tile.scope<fragment>>
    %p1 = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x16xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128>} : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %V[%c0, %c0] [16, 64] to %v0[%c0, %c0] [16, 64] : memref<32x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    tile.copy %V[%c16, %c0] [16, 64] to %v1[%c0, %c0] [16, 64] : memref<32x64xf16> to memref<16x64xf16, #tile.scope<shared>>
    tile.fill %o, %zero : memref<64x64xf32, #tile.scope<fragment>>, f32
    tile.parallel (%i, %j) in (64, 16) attributes {layout = #tile.layout<#map, threads = 128>} {
      %s = arith.addi %i, %j : index
      %x = arith.index_cast %s : index to i32
      %y = arith.uitofp %x : i32 to f16
      memref.store %y, %p0[%i, %j] : memref<64x16xf16, #tile.scope<fragment>>
    }
    tile.barrier
    tile.gemm %p0, %v0, %o {async, wgmma = array<i64: 1, 1>} : memref<64x16xf16, #tile.scope<fragment>>, memref<16x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (64, 16) attributes {layout = #tile.layout<#map, threads = 128>} {
      %s = arith.muli %i, %j : index
      %x = arith.index_cast %s : index to i32
      %y = arith.sitofp %x : i32 to f16
      memref.store %y, %p1[%i, %j] : memref<64x16xf16, #tile.scope<fragment>>
    }
    tile.gemm %p1, %v1, %o {async, wgmma = array<i64: 1, 1>} : memref<64x16xf16, #tile.scope<fragment>>, memref<16x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm_wait 0
    tile.copy %o[%c0, %c0] [64, 64] to %O[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf32>
  }
  return
}
