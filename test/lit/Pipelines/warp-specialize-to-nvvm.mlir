// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-warp-specialize,tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// End to end on sm_90a, from a tile.pipelined loop: warp specialization
// (producer/consumer split, mbarriers, pingpong), layout inference with
// wgmma, barrier insertion, then the lowering. Each pass is tested alone in
// Tile/Transforms/ and Conversion/TileToNVVM/convert-tile-to-nvvm-hopper.mlir
// (whose @gemm and @pingpong are these kernels after the first three
// passes); this test checks that they compose.

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
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c16, %c32) threads(256) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x256xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x256xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x256xf32, #tile.scope<fragment>>, f32
    %m = arith.muli %by, %c1 : index
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 256)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 4 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n0] [64, 256] to %b[%c0, %c0] [64, 256] : memref<4096x4096xf16> to memref<64x256xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x256xf16, #tile.scope<shared>> -> memref<128x256xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 256] to %C[%m0, %n0] [128, 256] : memref<128x256xf32, #tile.scope<fragment>> to memref<4096x4096xf32>
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
func.func @pingpong(%Q: memref<4096x128xf16>, %K: memref<4x4096x128xf16>, %V: memref<4x4096x128xf16>, %O: memref<4096x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%c32, %c4) threads(256) {
    %q = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<128x128xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<128x128xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.copy %Q[%m0, %c0] [128, 128] to %q[%c0, %c0] [128, 128] : memref<4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
    tile.fill %o, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %n = arith.addi %bx, %c1 : index
    tile.pipelined %j = %c0 to %n step %c1 num_stages = 2 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 128)>(%j)
      tile.copy %K[%by, %kk, %c0] [1, 128, 128] to %k[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.copy %V[%by, %kk, %c0] [1, 128, 128] to %v[%c0, %c0] [128, 128] : memref<4x4096x128xf16> to memref<128x128xf16, #tile.scope<shared>>
      tile.gemm %q, %k, %s {transpose_b, clear_accum, policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<shared>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
      tile.copy %s[%c0, %c0] [128, 128] to %p[%c0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<128x128xf16, #tile.scope<fragment>>
      tile.gemm %p, %v, %o {policy = #tile.policy<full_row>} : memref<128x128xf16, #tile.scope<fragment>>, memref<128x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %o[%c0, %c0] [128, 128] to %O[%m0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x128xf32>
  }
  return
}
