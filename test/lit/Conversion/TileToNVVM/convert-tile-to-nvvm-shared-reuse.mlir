// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s

// Shared buffers whose lifetimes do not overlap share bytes when, placed one
// after the other, they would not fit the chip (163 KB a block on sm_80).
// %a (96 KB) is done with after the second copy and %b (96 KB) is used only
// from the third: %b takes %a's bytes (both views at offset 0) and the block
// needs 96 KB. Before the first op of %b, every thread waits for its
// cp.async groups and the block synchronizes: no thread may still read %a
// while another writes %b over it.
// CHECK-LABEL: func.func @reuse
// CHECK: gpu.launch_func @reuse_kernel::@reuse_kernel {{.+}} dynamic_shared_memory_size %c98304_i32
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK-DAG: memref.view %[[SMEM]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<49152xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view %[[SMEM]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<24576xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.cp.async
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.cp.async
// CHECK: gpu.return
func.func @reuse(%X: memref<192x256xf16>, %Y: memref<96x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %a = tile.alloc_shared : memref<192x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<96x256xf32, #tile.scope<shared>>
    tile.copy %X[%c0, %c0] [192, 256] to %a[%c0, %c0] [192, 256] : memref<192x256xf16> to memref<192x256xf16, #tile.scope<shared>>
    tile.barrier
    tile.copy %a[%c0, %c0] [192, 256] to %X[%c0, %c0] [192, 256] : memref<192x256xf16, #tile.scope<shared>> to memref<192x256xf16>
    tile.copy %Y[%c0, %c0] [96, 256] to %b[%c0, %c0] [96, 256] : memref<96x256xf32> to memref<96x256xf32, #tile.scope<shared>>
    tile.barrier
    tile.copy %b[%c0, %c0] [96, 256] to %Y[%c0, %c0] [96, 256] : memref<96x256xf32, #tile.scope<shared>> to memref<96x256xf32>
  }
  return
}

// -----

// The same program with buffers of 48 KB fits one after the other: the plan
// is the plain one (%b after %a) and nothing is added.
// CHECK-LABEL: func.func @linear
// CHECK: dynamic_shared_memory_size %c98304_i32
// CHECK: %[[SMEM:.+]] = gpu.dynamic_shared_memory
// CHECK-DAG: memref.view %[[SMEM]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<24576xf16, #gpu.address_space<workgroup>>
// CHECK-DAG: memref.view %[[SMEM]][%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<12288xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK: gpu.return
func.func @linear(%X: memref<96x256xf16>, %Y: memref<48x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %a = tile.alloc_shared : memref<96x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<48x256xf32, #tile.scope<shared>>
    tile.copy %X[%c0, %c0] [96, 256] to %a[%c0, %c0] [96, 256] : memref<96x256xf16> to memref<96x256xf16, #tile.scope<shared>>
    tile.barrier
    tile.copy %a[%c0, %c0] [96, 256] to %X[%c0, %c0] [96, 256] : memref<96x256xf16, #tile.scope<shared>> to memref<96x256xf16>
    tile.copy %Y[%c0, %c0] [48, 256] to %b[%c0, %c0] [48, 256] : memref<48x256xf32> to memref<48x256xf32, #tile.scope<shared>>
    tile.barrier
    tile.copy %b[%c0, %c0] [48, 256] to %Y[%c0, %c0] [48, 256] : memref<48x256xf32, #tile.scope<shared>> to memref<48x256xf32>
  }
  return
}

// -----

// Every use inside one loop (bounds the same for every thread): lifetimes
// are spans of the loop body, and the next iteration's %a follows this
// one's %b, so both first ops get the drain and the barrier.
// CHECK-LABEL: func.func @reuse_in_loop
// CHECK: dynamic_shared_memory_size %c98304_i32
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 {
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.barrier
// CHECK-NOT: nvvm.cp.async
// CHECK: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @reuse_in_loop(%X: memref<192x256xf16>, %Y: memref<96x256xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %a = tile.alloc_shared : memref<192x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<96x256xf32, #tile.scope<shared>>
    scf.for %i = %bx to %n step %c1 {
      tile.copy %X[%c0, %c0] [192, 256] to %a[%c0, %c0] [192, 256] : memref<192x256xf16> to memref<192x256xf16, #tile.scope<shared>>
      tile.barrier
      tile.copy %a[%c0, %c0] [192, 256] to %X[%c0, %c0] [192, 256] : memref<192x256xf16, #tile.scope<shared>> to memref<192x256xf16>
      tile.copy %Y[%c0, %c0] [96, 256] to %b[%c0, %c0] [96, 256] : memref<96x256xf32> to memref<96x256xf32, #tile.scope<shared>>
      tile.barrier
      tile.copy %b[%c0, %c0] [96, 256] to %Y[%c0, %c0] [96, 256] : memref<96x256xf32, #tile.scope<shared>> to memref<96x256xf32>
    }
  }
  return
}
