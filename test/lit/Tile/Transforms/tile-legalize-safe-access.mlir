// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-legalize-safe-access))' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-legalize-safe-access,tile-legalize-safe-access))' | FileCheck %s

// A gather through an index tensor: the index is a loaded value, so the
// load of %x reads a clamped position (0 where the index is outside
// [0, 16)) and zero is selected there; a static extent is never 0, so the
// clamped position is inside. The index tensor's own load (by a parallel
// variable below its extent) and the fragment store stay as they were.
// Running the pass twice changes nothing more (second RUN line: the
// accesses it has seen are marked).
// CHECK-LABEL: func.func @gather
// CHECK: tile.parallel (%[[I:.+]]) in (8)
// CHECK: %[[RAW:.+]] = memref.load %{{.+}}[%[[I]]] {tile.guarded} : memref<8xi32>
// CHECK: %[[J:.+]] = arith.index_cast %[[RAW]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[J]], %c16
// CHECK: %[[C:.+]] = arith.select %[[IN]], %[[J]], %c0
// CHECK: %[[L:.+]] = memref.load %{{.+}}[%[[C]]] {tile.guarded} : memref<16xf32>
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[V:.+]] = arith.select %[[IN]], %[[L]], %[[Z]] : f32
// CHECK: memref.store %[[V]], %{{.+}}[%[[I]]] : memref<8xf32, #tile.scope<fragment>>
// CHECK-NOT: arith.cmpi
func.func @gather(%x: memref<16xf32>, %idx: memref<8xi32>) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %s = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (8) {
      %raw = memref.load %idx[%i] : memref<8xi32>
      %j = arith.index_cast %raw : i32 to index
      %v = memref.load %x[%j] : memref<16xf32>
      memref.store %v, %s[%i] : memref<8xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A tile read 10 rows above the block's: negative rows are possible, so the
// row (and only the row) is checked; the annotated safe value is what an
// out-of-range read gives. The store below is proven in range: 4 blocks of
// 16 rows cover the 64 rows.
// CHECK-LABEL: func.func @shifted
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %c-10
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[ROW]], %c64
// CHECK-NOT: arith.cmpi
// CHECK: %[[C:.+]] = arith.select %[[IN]], %[[ROW]], %c0
// CHECK: %[[L:.+]] = memref.load %{{.+}}[%[[C]], %{{.+}}] {tile.guarded}
// CHECK: %[[PAD:.+]] = arith.constant 1.000000e+01 : f16
// CHECK: arith.select %[[IN]], %[[L]], %[[PAD]] : f16
// CHECK: memref.store %{{.+}}, %{{.+}} {tile.guarded} : memref<64x32xf16>
// CHECK-NOT: scf.if
func.func @shifted(%a: memref<64x32xf16>, %b: memref<64x32xf16>) {
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %cm10 = arith.constant -10 : index
  tile.kernel blocks(%by) in (%c4) threads(128) {
    tile.parallel (%i, %j) in (16, 32) {
      %base = arith.muli %by, %c16 : index
      %r0 = arith.addi %base, %i : index
      %row = arith.addi %r0, %cm10 : index
      %v = memref.load %a[%row, %j] {tile.safe_value = 1.0e+01 : f16} : memref<64x32xf16>
      memref.store %v, %b[%r0, %j] : memref<64x32xf16>
    }
  }
  return
}

// -----

// Dynamic sizes: a loop up to the symbolic size "n" of %x proves its
// accesses of %y too, whose first dimension has the same name; block
// indices below ceildiv(n, 32) times 32 can pass n, so that store is
// guarded (dropped out of range).
// CHECK-LABEL: func.func @dynamic
// CHECK: tile.parallel
// CHECK: %[[D:.+]] = memref.dim %{{.+}}, %c0
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %[[D]]
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: memref.store
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: return
func.func @dynamic(%x: memref<?x64xf32> {tile.dim_symbols = ["n", ""]},
                   %y: memref<?x64xf32> {tile.dim_symbols = ["n", ""]}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %t = arith.addi %n, %c31 : index
  %grid = arith.floordivsi %t, %c32 : index
  tile.kernel blocks(%bx) in (%grid) threads(128) {
    tile.parallel (%i, %j) in (32, 64) {
      %base = arith.muli %bx, %c32 : index
      %r = arith.addi %base, %i : index
      %zero = arith.constant 0.0 : f32
      memref.store %zero, %y[%r, %j] : memref<?x64xf32>
    }
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %x[%k, %c1] : memref<?x64xf32>
      memref.store %v, %y[%k, %c0] : memref<?x64xf32>
    }
  }
  return
}

// -----

// Shared and fragment buffers are the program's own: not checked. A
// remainder by a constant and an unsigned cast keep their bounds.
// CHECK-LABEL: func.func @local_and_rem
// CHECK-NOT: scf.if
// CHECK: return
func.func @local_and_rem(%x: memref<32xf32>, %i32: i32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %s = tile.alloc_shared : memref<32xf32, #tile.scope<shared>>
    %t = tile.thread_id : index
    %w = arith.index_cast %i32 : i32 to index
    %m = arith.remui %w, %c32 : index
    %v = memref.load %x[%m] : memref<32xf32>
    memref.store %v, %s[%t] : memref<32xf32, #tile.scope<shared>>
  }
  return
}

// -----

// A gather along a dynamic dimension: its extent may be 0 at run time, so
// no position is sure to exist and the load moves into an scf.if. The same
// gather as a top-level statement of a pipelined loop keeps the clamped
// form that the pipelining passes read as a load.
// CHECK-LABEL: func.func @dynamic_gather
// CHECK: tile.parallel
// CHECK: %[[IN:.+]] = arith.cmpi ult
// CHECK: scf.if %[[IN]] -> (f32) {
// CHECK-NEXT: memref.load %{{.+}} {tile.guarded} : memref<?xf32>
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK: tile.pipelined
// CHECK: %[[IN2:.+]] = arith.cmpi ult
// CHECK: %[[C:.+]] = arith.select %[[IN2]], %{{.+}}, %c0
// CHECK: %[[L:.+]] = memref.load %{{.+}}[%[[C]]] {tile.guarded} : memref<?xf32>
// CHECK: arith.select %[[IN2]], %[[L]]
func.func @dynamic_gather(%x: memref<?xf32>, %idx: memref<8xi32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %s = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (8) {
      %raw = memref.load %idx[%i] : memref<8xi32>
      %j = arith.index_cast %raw : i32 to index
      %v = memref.load %x[%j] : memref<?xf32>
      memref.store %v, %s[%i] : memref<8xf32, #tile.scope<fragment>>
    }
    tile.pipelined %k = %c0 to %c8 step %c1 num_stages = 2 {
      %raw = memref.load %idx[%k] : memref<8xi32>
      %j = arith.index_cast %raw : i32 to index
      %v = memref.load %x[%j] : memref<?xf32>
      memref.store %v, %out[%k] : memref<8xf32>
    }
  }
  return
}
