// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80},canonicalize,cse)' | FileCheck %s --check-prefix=SM80

// T.atomic_add(out[i, 0, 0], tile, use_tma=True), twice, the tile written
// again between: a 64x128 float32 shared tile added into a rank-3 kernel
// argument. On sm_90a it is one bulk reduction through a tensor map of
// `out` (param 1, a 1x64x128 box, no swizzle): the threads fence their
// writes for the async proxy and synchronize, thread 0 issues the
// reduce-add at (0, 0, i) (innermost first) and commits it, and nobody
// waits. The copy that writes the tile again first has thread 0 wait until
// the reduce-add has read it, and the threads synchronize (the first copy,
// before any reduce-add and outside loops, does not). Every thread waits
// for its bulk groups' reads before the kernel returns.
// CHECK: gpu.launch_func @bulk_add_kernel::@bulk_add_kernel
// CHECK-SAME: tile.tensormaps = [{box = array<i64: 1, 64, 128>, param = 1 : i64, swizzle = 0 : i64}]
// CHECK: gpu.func @bulk_add_kernel(%[[MAP:.+]]: !llvm.ptr, %{{.+}}: memref<64x128xf32>, %{{.+}}: memref<2x64x128xf32>, %[[I:.+]]: index)
// CHECK-NOT: nvvm.cp.async.bulk.wait_group
// CHECK-NOT: memref.atomic_rmw
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: %[[ROW:.+]] = arith.index_cast %[[I]] : index to i32
// CHECK: nvvm.cp.async.bulk.tensor.reduce %[[MAP]], %{{.+}}, box[%c0_i32, %c0_i32, %[[ROW]]] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: }
// CHECK-NEXT: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: vector.store
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: gpu.return
// CHECK-NOT: memref.atomic_rmw

// Without TMA (sm_80) the same adds, element by element: thread t adds
// elements t, t + 128, ... between two barriers, and no tensor map.
// SM80-NOT: tile.tensormaps
// SM80: gpu.barrier
// SM80-NEXT: scf.for %{{.+}} = %{{.+}} to %c8192 step %c128
// SM80: memref.atomic_rmw addf %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}] : (f32, memref<2x64x128xf32>) -> f32
// SM80: gpu.barrier
// SM80-NOT: cp.async.bulk
func.func @bulk_add(%A: memref<64x128xf32>, %out: memref<2x64x128xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    %s = tile.alloc_shared : memref<64x128xf32, #tile.scope<shared>>
    tile.copy %A[%c0, %c0] [64, 128] to %s[%c0, %c0] [64, 128] : memref<64x128xf32> to memref<64x128xf32, #tile.scope<shared>>
    tile.atomic_add %s -> %out[%i, %c0, %c0] {tma} : memref<64x128xf32, #tile.scope<shared>> -> memref<2x64x128xf32>
    tile.copy %A[%c0, %c0] [64, 128] to %s[%c0, %c0] [64, 128] : memref<64x128xf32> to memref<64x128xf32, #tile.scope<shared>>
    tile.atomic_add %s -> %out[%i, %c0, %c0] {tma} : memref<64x128xf32, #tile.scope<shared>> -> memref<2x64x128xf32>
  }
  return
}

// -----

// In a loop whose body has a barrier before the write of the tile (the
// attention backward's: the barrier before its dq gemm), thread 0 waits
// for the previous iteration's reduce-add reads before that barrier, and the
// write needs no wait or barrier of its own: one barrier between the
// reduce-add and the rewrite, not two.
// CHECK-LABEL: gpu.func @settled_kernel
// CHECK: scf.for
// CHECK: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-NOT: nvvm.cp.async.bulk.wait_group
// CHECK: vector.store
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.cp.async.bulk.tensor.reduce
// SM80-LABEL: gpu.func @settled_kernel
func.func @settled(%A: memref<64x128xf32>, %out: memref<2x64x128xf32>, %i: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    %s = tile.alloc_shared : memref<64x128xf32, #tile.scope<shared>>
    scf.for %k = %c0 to %n step %c1 {
      tile.barrier
      tile.copy %A[%c0, %c0] [64, 128] to %s[%c0, %c0] [64, 128] : memref<64x128xf32> to memref<64x128xf32, #tile.scope<shared>>
      tile.atomic_add %s -> %out[%i, %c0, %c0] {tma} : memref<64x128xf32, #tile.scope<shared>> -> memref<2x64x128xf32>
    }
  }
  return
}
