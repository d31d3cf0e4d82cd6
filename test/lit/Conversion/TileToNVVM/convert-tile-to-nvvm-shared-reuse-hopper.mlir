// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// MLA decoding as tile-warp-specialize leaves it (test/python/test_shared_reuse.py,
// batch 132: 264 tiles, a persistent kernel, clusters of 2): the two stages
// of KV (2x64x512) and K_pe (2x64x64), Q (64x512), S (64x64), Q_pe (64x64)
// and O (64x512), all float16 and 128-byte swizzled, need 288 KB one after
// the other, more than the 227 KB of an sm_90a block. The producer's stage
// buffers share with nothing; the consumer's buffers have lifetimes in the
// body of the persistent loop over tiles, and O, used after the last read
// of Q, takes Q's bytes (offset 132096: one view, which CSE merged). The
// block needs 231936 bytes; the 512 left to the 227 KB hold a second region
// of scratch (the softmax's reductions take turns over two). Where the bytes change hands (before the copy
// into O, and at the top of each tile, where Q follows the previous tile's
// O) the consumers wait for their wgmma groups and cp.async groups, fence
// the async proxy and meet at their named barrier (1, 256 threads).
// CHECK-LABEL: func.func @main
// CHECK: gpu.launch_func @main_kernel::@main_kernel {{.+}} dynamic_shared_memory_size %c232448_i32
// CHECK: %[[STAGES:.+]] = arith.addi %[[BASE:.+]], %c1024 : index
// CHECK-NEXT: memref.view %{{.+}}[%[[STAGES]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<65536xf16, #gpu.address_space<workgroup>>
// CHECK: %[[KPE:.+]] = arith.addi %[[BASE]], %c197632 : index
// CHECK-NEXT: memref.view %{{.+}}[%[[KPE]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QO:.+]] = arith.addi %[[BASE]], %c132096 : index
// CHECK-NEXT: memref.view %{{.+}}[%[[QO]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32768xf16, #gpu.address_space<workgroup>>
// CHECK: %[[S:.+]] = arith.addi %[[BASE]], %c214016 : index
// CHECK-NEXT: memref.view %{{.+}}[%[[S]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xf16, #gpu.address_space<workgroup>>
// CHECK: %[[QPE:.+]] = arith.addi %[[BASE]], %c222208 : index
// CHECK-NEXT: memref.view %{{.+}}[%[[QPE]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4096xf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref<32768xf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.setmaxregister increase 240
// CHECK: scf.for
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %c1_i32 number_of_threads = %c256_i32
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %c1_i32 number_of_threads = %c256_i32
// CHECK-NOT: nvvm.cp.async.commit.group
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4 + (d1 floordiv 32) * 128, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + ((d1 floordiv 8) mod 4) * 4)>
#map1 = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4 + (d1 floordiv 256) * 128, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + ((d1 floordiv 8) mod 32) * 4)>
#map2 = affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0 mod 4 + (s0 floordiv 4) * 128, (d0 floordiv 8) mod 2)>
module {
  func.func @main(%arg0: memref<132x128x512xf16>, %arg1: memref<132x128x64xf16>, %arg2: memref<132x8192x1x512xf16>, %arg3: memref<132x8192x1x64xf16>, %arg4: memref<132x128x512xf16>) {
    %cst = arith.constant 0xFF800000 : f32
    %cst_0 = arith.constant 0.0601122938 : f32
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %cst_1 = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %c2 = arith.constant 2 : index
    %c132 = arith.constant 132 : index
    tile.kernel blocks(%arg5, %arg6) in (%c132, %c1) threads(256) attributes {tile.persistent = {blocks = 2 : i64, tiles = 264 : i64}} {
      %0 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x64x512xf16, #tile.scope<shared>>
      %1 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x64x64xf16, #tile.scope<shared>>
      %2 = tile.alloc_barrier arrivals(1) : memref<2xi64, #tile.scope<shared>>
      %3 = tile.alloc_barrier arrivals(16) : memref<2xi64, #tile.scope<shared>>
      %4 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x512xf16, #tile.scope<shared>>
      %5 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
      %6 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
      %7 = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x512xf16, #tile.scope<shared>>
      %8 = tile.alloc_fragment {layout = #tile.layout<#map, threads = 256>} : memref<64x64xf32, #tile.scope<fragment>>
      %9 = tile.alloc_fragment {layout = #tile.layout<#map1, threads = 256>} : memref<64x512xf32, #tile.scope<fragment>>
      %10 = tile.alloc_fragment {layout = #tile.layout<#map2, threads = 256, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
      %11 = tile.alloc_fragment {layout = #tile.layout<#map2, threads = 256, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
      %12 = tile.alloc_fragment {layout = #tile.layout<#map2, threads = 256, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
      %13 = tile.alloc_fragment {layout = #tile.layout<#map2, threads = 256, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
      %14 = tile.alloc_fragment {layout = #tile.layout<#map2, threads = 256, replicate = 8>} : memref<64xf32, #tile.scope<fragment>>
      tile.warp_specialize producer(128) {
        %15 = arith.divui %arg5, %c2 : index
        %grid_dim_x = gpu.grid_dim  x
        %16 = arith.divui %grid_dim_x, %c2 : index
        scf.for %arg7 = %15 to %c132 step %16 {
          %17 = arith.subi %arg7, %15 : index
          %18 = arith.divui %17, %16 : index
          %19 = arith.muli %18, %c128 : index
          scf.for %arg8 = %c0 to %c128 step %c1 {
            %20 = arith.addi %arg8, %19 : index
            %21 = arith.remui %20, %c2 : index
            %22 = arith.divui %20, %c2 : index
            %23 = arith.remui %22, %c2 : index
            %24 = arith.xori %23, %c1 : index
            tile.barrier_wait %3[%21], %24 : memref<2xi64, #tile.scope<shared>>
            tile.barrier_arrive %2[%21] expect_tx(73728) : memref<2xi64, #tile.scope<shared>>
            %25 = arith.muli %arg8, %c64 : index
            %subview = memref.subview %0[%21, 0, 0] [1, 64, 512] [1, 1, 1] : memref<2x64x512xf16, #tile.scope<shared>> to memref<64x512xf16, strided<[512, 1], offset: ?>, #tile.scope<shared>>
            tile.copy %arg2[%arg7, %25, %c0, %c0] [1, 64, 1, 512] to %subview[%c0, %c0] [64, 512] via %2[%21] {multicast = 2 : i64} : memref<132x8192x1x512xf16> to memref<64x512xf16, strided<[512, 1], offset: ?>, #tile.scope<shared>>, memref<2xi64, #tile.scope<shared>>
            %subview_2 = memref.subview %1[%21, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf16, #tile.scope<shared>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
            tile.copy %arg3[%arg7, %25, %c0, %c0] [1, 64, 1, 64] to %subview_2[%c0, %c0] [64, 64] via %2[%21] : memref<132x8192x1x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>, memref<2xi64, #tile.scope<shared>>
          }
        }
      } consumer {
        %15 = arith.divui %arg5, %c2 : index
        %16 = arith.remui %arg5, %c2 : index
        %grid_dim_x = gpu.grid_dim  x
        %17 = arith.divui %grid_dim_x, %c2 : index
        scf.for %arg7 = %15 to %c132 step %17 {
          %18 = arith.subi %arg7, %15 : index
          %19 = arith.divui %18, %17 : index
          %20 = arith.muli %16, %c64 : index
          tile.copy %arg0[%arg7, %20, %c0] [1, 64, 512] to %4[%c0, %c0] [64, 512] : memref<132x128x512xf16> to memref<64x512xf16, #tile.scope<shared>>
          tile.copy %arg1[%arg7, %20, %c0] [1, 64, 64] to %6[%c0, %c0] [64, 64] : memref<132x128x64xf16> to memref<64x64xf16, #tile.scope<shared>>
          tile.fill %9, %cst_1 : memref<64x512xf32, #tile.scope<fragment>>, f32
          tile.fill %14, %cst_1 : memref<64xf32, #tile.scope<fragment>>, f32
          tile.fill %10, %cst : memref<64xf32, #tile.scope<fragment>>, f32
          %21 = arith.muli %19, %c128 : index
          tile.barrier
          scf.for %arg8 = %c0 to %c128 step %c1 {
            %22 = arith.addi %arg8, %21 : index
            %23 = arith.remui %22, %c2 : index
            %24 = arith.divui %22, %c2 : index
            %25 = arith.remui %24, %c2 : index
            tile.barrier_wait %2[%23], %25 : memref<2xi64, #tile.scope<shared>>
            %subview = memref.subview %0[%23, 0, 0] [1, 64, 512] [1, 1, 1] : memref<2x64x512xf16, #tile.scope<shared>> to memref<64x512xf16, strided<[512, 1], offset: ?>, #tile.scope<shared>>
            %subview_2 = memref.subview %1[%23, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf16, #tile.scope<shared>> to memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>>
            tile.gemm %4, %subview, %8 {clear_accum, policy = #tile.policy<full_col>, transpose_b, wgmma = array<i64: 1, 2>} : memref<64x512xf16, #tile.scope<shared>>, memref<64x512xf16, strided<[512, 1], offset: ?>, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
            tile.gemm %6, %subview_2, %8 {policy = #tile.policy<full_col>, transpose_b, wgmma = array<i64: 1, 2>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, strided<[64, 1], offset: ?>, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
            tile.copy %10[%c0] [64] to %11[%c0] [64] : memref<64xf32, #tile.scope<fragment>> to memref<64xf32, #tile.scope<fragment>>
            tile.fill %10, %cst : memref<64xf32, #tile.scope<fragment>>, f32
            tile.reduce %8 -> %10 {dim = 1 : i64, kind = #tile.reduce<max>} : memref<64x64xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
            tile.parallel (%arg9) in (64) attributes {layout = #tile.layout<#map2, threads = 256, replicate = 8>} {
              %26 = memref.load %11[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %27 = arith.mulf %26, %cst_0 : f32
              %28 = memref.load %10[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %29 = arith.mulf %28, %cst_0 : f32
              %30 = arith.subf %27, %29 : f32
              %31 = math.exp2 %30 : f32
              memref.store %31, %12[%arg9] : memref<64xf32, #tile.scope<fragment>>
            }
            tile.parallel (%arg9, %arg10) in (64, 64) attributes {layout = #tile.layout<#map, threads = 256>} {
              %26 = memref.load %8[%arg9, %arg10] : memref<64x64xf32, #tile.scope<fragment>>
              %27 = arith.mulf %26, %cst_0 : f32
              %28 = memref.load %10[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %29 = arith.mulf %28, %cst_0 : f32
              %30 = arith.subf %27, %29 : f32
              %31 = math.exp2 %30 : f32
              memref.store %31, %8[%arg9, %arg10] : memref<64x64xf32, #tile.scope<fragment>>
            }
            tile.reduce %8 -> %13 {clear, dim = 1 : i64, kind = #tile.reduce<sum>} : memref<64x64xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
            tile.barrier
            tile.copy %8[%c0, %c0] [64, 64] to %5[%c0, %c0] [64, 64] : memref<64x64xf32, #tile.scope<fragment>> to memref<64x64xf16, #tile.scope<shared>>
            tile.parallel (%arg9) in (64) attributes {layout = #tile.layout<#map2, threads = 256, replicate = 8>} {
              %26 = memref.load %14[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %27 = memref.load %12[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %28 = arith.mulf %26, %27 : f32
              %29 = memref.load %13[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %30 = arith.addf %28, %29 : f32
              memref.store %30, %14[%arg9] : memref<64xf32, #tile.scope<fragment>>
            }
            tile.parallel (%arg9, %arg10) in (64, 512) attributes {layout = #tile.layout<#map1, threads = 256>} {
              %26 = memref.load %9[%arg9, %arg10] : memref<64x512xf32, #tile.scope<fragment>>
              %27 = memref.load %12[%arg9] : memref<64xf32, #tile.scope<fragment>>
              %28 = arith.mulf %26, %27 : f32
              memref.store %28, %9[%arg9, %arg10] : memref<64x512xf32, #tile.scope<fragment>>
            }
            tile.barrier
            tile.gemm %5, %subview, %9 {policy = #tile.policy<full_col>, wgmma = array<i64: 1, 2>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x512xf16, strided<[512, 1], offset: ?>, #tile.scope<shared>> -> memref<64x512xf32, #tile.scope<fragment>>
            tile.barrier_arrive %3[%23] {cluster} : memref<2xi64, #tile.scope<shared>>
          }
          tile.parallel (%arg8, %arg9) in (64, 512) attributes {layout = #tile.layout<#map1, threads = 256>} {
            %22 = memref.load %9[%arg8, %arg9] : memref<64x512xf32, #tile.scope<fragment>>
            %23 = memref.load %14[%arg8] : memref<64xf32, #tile.scope<fragment>>
            %24 = arith.divf %22, %23 : f32
            memref.store %24, %9[%arg8, %arg9] : memref<64x512xf32, #tile.scope<fragment>>
          }
          tile.copy %9[%c0, %c0] [64, 512] to %7[%c0, %c0] [64, 512] : memref<64x512xf32, #tile.scope<fragment>> to memref<64x512xf16, #tile.scope<shared>>
          tile.barrier
          tile.copy %7[%c0, %c0] [64, 512] to %arg4[%arg7, %20, %c0] [1, 64, 512] : memref<64x512xf16, #tile.scope<shared>> to memref<132x128x512xf16>
        }
      } {cluster = array<i64: 2, 1, 1>}
    }
    return
  }
}
