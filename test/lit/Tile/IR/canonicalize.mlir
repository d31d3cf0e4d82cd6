// RUN: tile-opt %s -split-input-file --canonicalize | FileCheck %s

// A zero fill right before a gemm of the same accumulator becomes clear_accum;
// index arithmetic in between does not get in the way.
// CHECK-LABEL: func.func @fold_zero_fill
// CHECK-NOT: tile.fill
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %{{.+}} {clear_accum}
func.func @fold_zero_fill(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %zero = arith.constant 0.0 : f32
    tile.fill %c, %zero : memref<16x16xf32, #tile.scope<fragment>>, f32
    %i = arith.addi %bx, %bx : index
    tile.gemm %a, %a, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A non-zero fill must stay, and so must a zero fill of another buffer.
// CHECK-LABEL: func.func @keep_fills
// CHECK: tile.fill %[[C:.+]], %{{.+}}
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %[[C]] :
// CHECK: tile.fill
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %[[C]] :
func.func @keep_fills(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %d = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    tile.fill %c, %one : memref<16x16xf32, #tile.scope<fragment>>, f32
    tile.gemm %a, %a, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
    tile.fill %d, %zero : memref<16x16xf32, #tile.scope<fragment>>, f32
    tile.gemm %a, %a, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Empty loops and pipelined loops that never run are removed.
// CHECK-LABEL: func.func @dead_loops
// CHECK-NOT: tile.parallel
// CHECK-NOT: tile.pipelined
// CHECK: return
func.func @dead_loops(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    tile.parallel (%i) in (16) {
    }
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
    }
    tile.pipelined %k = %c4 to %c0 step %c1 num_stages = 2 {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

// A pipelined loop with a dynamic trip count stays.
// CHECK-LABEL: func.func @live_loop
// CHECK: tile.pipelined
func.func @live_loop(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

// A kernel whose body has no effect is still launched (TileLang's empty
// kernels run): it is not dead code.
// CHECK-LABEL: func.func @keep_empty_kernel
// CHECK: tile.kernel blocks(%{{.+}}) in (%{{.+}}) threads(32)
func.func @keep_empty_kernel(%n: index, %x: memref<8xf32>) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %v = memref.load %x[%bx] : memref<8xf32>
  }
  return
}
