// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-warp-specialize{cluster-size=1}),func.func(tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-warp-specialize{cluster-size=1}),func.func(tile-layout-inference{wgmma=true},tile-insert-barriers),convert-tile-to-nvvm{chip=sm_90a features=+ptx80 tma-store=false},canonicalize,cse)' | FileCheck %s --check-prefix=DIRECT

// End to end on sm_90a: warp specialization (clusters of 1), layout
// inference, barrier insertion, then the lowering with and without TMA
// stores for the epilogue. The lowering alone is tested on the
// warp-specialized kernel in
// Conversion/TileToNVVM/convert-tile-to-nvvm-tma-store.mlir.

// The epilogue of a warp-specialized kernel (a whole 128x128 f32 fragment
// into an f16 kernel argument) goes through a 32 KB staging buffer placed
// after the ring (96 KB + barriers, 1 KB-aligned: 99328 + 1024 alignment +
// 32768 = 133120 bytes) and a third tensor map (param 2, 128x64 boxes, the
// 128-byte swizzle). The consumer waits until earlier stores have read the
// buffer, writes it (f16 pairs), fences it for the async proxy, and thread 0
// issues one TMA store per 64-column panel as one bulk group; before the
// consumer ends, thread 0 waits for all of them.
// CHECK: gpu.launch_func @gemm_kernel::@gemm_kernel {{.+}} dynamic_shared_memory_size %c133120_i32
// CHECK-SAME: tile.tensormaps = [{{.+}}, {box = array<i64: 128, 64>, param = 2 : i64, swizzle = 128 : i64}]
// CHECK: gpu.func @gemm_kernel(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %[[TC:.+]]: !llvm.ptr,
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id = %c1_i32 number_of_threads = %c128_i32
// CHECK-COUNT-64: vector.store %{{.+}} : memref<16384xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %c1_i32 number_of_threads = %c128_i32
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[TC]], %{{.+}}, box[%{{.+}}, %{{.+}}]
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[TC]], %{{.+}}, box[%{{.+}}, %{{.+}}]
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0
// CHECK-NOT: {read}
// CHECK: gpu.return

// With tma-store=false the fragment is stored to global memory directly.
// DIRECT: dynamic_shared_memory_size %c100352_i32
// DIRECT-NOT: cp.async.bulk.tensor.global.shared.cta
// DIRECT: vector.store %{{.+}} : memref<4096x4096xf16>, vector<2xf16>
func.func @gemm(%A: memref<4096x4096xf16>, %B: memref<4096x4096xf16>, %C: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx, %by) in (%c32, %c32) threads(128) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.fill %c, %zero : memref<128x128xf32, #tile.scope<fragment>>, f32
    %m0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%by)
    %n0 = affine.apply affine_map<(d0) -> (d0 * 128)>(%bx)
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      tile.copy %A[%m0, %kk] [128, 64] to %a[%c0, %c0] [128, 64] : memref<4096x4096xf16> to memref<128x64xf16, #tile.scope<shared>>
      tile.copy %B[%kk, %n0] [64, 128] to %b[%c0, %c0] [64, 128] : memref<4096x4096xf16> to memref<64x128xf16, #tile.scope<shared>>
      tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %c[%c0, %c0] [128, 128] to %C[%m0, %n0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<4096x4096xf16>
  }
  return
}
