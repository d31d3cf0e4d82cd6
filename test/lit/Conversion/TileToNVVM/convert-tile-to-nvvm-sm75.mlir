// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_75 features=+ptx80},canonicalize,cse)' | FileCheck %s

// Turing (sm_75) has no f16 mma.sync m16n8k16: each k16 step of an f16 gemm
// is two m16n8k8, the first on A's registers 0 and 1 (K 0..7) and B's
// register 0, the second on A's 2 and 3 (K 8..15) and B's 1, the second
// accumulating into the first's result. The fragments come from the same
// ldmatrix.x4 / transposing ldmatrix as on sm_80 (ldmatrix is sm_75).
// CHECK: gpu.module @gemm75_kernel [#nvvm.target<O = 3, chip = "sm_75", features = "+ptx80">]
// CHECK: %[[A:.+]] = nvgpu.ldmatrix {{.+}} {numTiles = 4 : i32, transpose = false} : {{.+}} -> vector<4x2xf16>
// CHECK: %[[B:.+]] = nvgpu.ldmatrix {{.+}} {numTiles = 2 : i32, transpose = true} : {{.+}} -> vector<2x2xf16>
// CHECK-DAG: %[[A0:.+]] = vector.extract %[[A]][0] : vector<2xf16> from vector<4x2xf16>
// CHECK-DAG: %[[A1:.+]] = vector.extract %[[A]][1] : vector<2xf16> from vector<4x2xf16>
// CHECK-DAG: %[[B0:.+]] = vector.extract %[[B]][0] : vector<2xf16> from vector<2x2xf16>
// CHECK: %[[D:.+]] = nvvm.mma.sync A[%[[A0]], %[[A1]]]  B[%[[B0]]]  C[{{.+}}]  {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 8>}
// CHECK-DAG: %[[A2:.+]] = vector.extract %[[A]][2] : vector<2xf16> from vector<4x2xf16>
// CHECK-DAG: %[[A3:.+]] = vector.extract %[[A]][3] : vector<2xf16> from vector<4x2xf16>
// CHECK-DAG: %[[B1:.+]] = vector.extract %[[B]][1] : vector<2xf16> from vector<2x2xf16>
// CHECK-DAG: %[[D0:.+]] = llvm.extractvalue %[[D]][0]
// CHECK: nvvm.mma.sync A[%[[A2]], %[[A3]]]  B[%[[B1]]]  C[%[[D0]], {{.+}}]  {{.+}} shape = #nvvm.shape<m = 16, n = 8, k = 8>}
// CHECK-NOT: k = 16
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + d1 floordiv 2, (d0 floordiv 8) * 2 + d1 mod 2)>
module {
  func.func @gemm75(%arg0: memref<16x16xf16>, %arg1: memref<16x8xf16>, %arg2: memref<16x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    tile.kernel blocks(%arg3) in (%c1) threads(32) {
      %0 = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<16x16xf16, #tile.scope<shared>>
      %1 = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<16x8xf16, #tile.scope<shared>>
      %2 = tile.alloc_fragment {layout = #tile.layout<#map, threads = 32>} : memref<16x8xf32, #tile.scope<fragment>>
      tile.copy %arg0[%c0, %c0] [16, 16] to %0[%c0, %c0] [16, 16] : memref<16x16xf16> to memref<16x16xf16, #tile.scope<shared>>
      tile.copy %arg1[%c0, %c0] [16, 8] to %1[%c0, %c0] [16, 8] : memref<16x8xf16> to memref<16x8xf16, #tile.scope<shared>>
      tile.barrier
      tile.gemm %0, %1, %2 {clear_accum, warp_partition = array<i64: 1, 1>} : memref<16x16xf16, #tile.scope<shared>>, memref<16x8xf16, #tile.scope<shared>> -> memref<16x8xf32, #tile.scope<fragment>>
      tile.copy %2[%c0, %c0] [16, 8] to %arg2[%c0, %c0] [16, 8] : memref<16x8xf32, #tile.scope<fragment>> to memref<16x8xf32>
    }
    return
  }
}
