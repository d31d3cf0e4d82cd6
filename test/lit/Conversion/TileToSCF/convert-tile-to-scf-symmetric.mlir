// RUN: tile-opt %s -split-input-file --convert-tile-to-scf --canonicalize --cse | FileCheck %s

// A peer's part is the local buffer reinterpreted at the distance, in
// elements, from its own address to the peer table's entry; copies into it
// are ordinary bounds-checked stores. The signal is a fence and an atomic
// update; the wait polls with atomic reads on the runtime's clock and fails
// a device assert when the timeout passes.
// CHECK-LABEL: func.func @push
// CHECK-SAME: (%[[X:.+]]: memref<256xf16>, %[[BUF:.+]]: memref<4x256xf16> {tile.symmetric}, %[[BP:.+]]: memref<?xi64>, %[[F:.+]]: memref<4xi32> {tile.symmetric}, %[[FP:.+]]: memref<?xi64>, %[[RANK:.+]]: index, %[[PEER:.+]]: index)
// CHECK: %[[HERE:.+]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: %[[THERE:.+]] = memref.load %[[BP]][%[[PEER]]] : memref<?xi64>
// CHECK: %[[T:.+]] = arith.index_cast %[[THERE]] : i64 to index
// CHECK: %[[D:.+]] = arith.subi %[[T]], %[[HERE]] : index
// CHECK: %[[OFF:.+]] = arith.divsi %[[D]], %c2 : index
// CHECK: %[[VIEW:.+]] = memref.reinterpret_cast %[[BUF]] to offset: [%[[OFF]]], sizes: [4, 256], strides: [256, 1]
// CHECK: memref.store %{{.+}}, %[[VIEW]][%[[RANK]], %{{.+}}] : memref<4x256xf16, strided<[256, 1], offset: ?>>
// CHECK: %[[FVIEW:.+]] = memref.reinterpret_cast %[[F]]
// CHECK: llvm.fence acq_rel
// CHECK: memref.atomic_rmw assign %{{.+}}, %[[FVIEW]][%[[RANK]]]
// CHECK: %[[START:.+]] = llvm.call @__tile_time_ns()
// CHECK: %[[DONE:.+]] = scf.while
// CHECK:   %[[V:.+]] = memref.atomic_rmw ori %{{.+}}, %[[F]][%[[PEER]]]
// CHECK:   arith.cmpi sge, %[[V]]
// CHECK:   llvm.call @__tile_time_ns()
// CHECK: %[[FAILED:.+]] = arith.xori %[[DONE]], %true
// CHECK: scf.if %[[FAILED]] {
// CHECK:   llvm.call @__tile_assert_fail
// CHECK-NOT: tile.
func.func @push(%x: memref<256xf16>, %buf: memref<4x256xf16> {tile.symmetric}, %bp: memref<?xi64>,
                %f: memref<4xi32> {tile.symmetric}, %fp: memref<?xi64>, %rank: index, %peer: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %p = tile.peer %buf, %bp[%peer] : memref<4x256xf16>, memref<?xi64> -> memref<4x256xf16, strided<[256, 1], offset: ?>>
    tile.copy %x[%c0] [256] to %p[%rank, %c0] [1, 256] : memref<256xf16> to memref<4x256xf16, strided<[256, 1], offset: ?>>
    %pf = tile.peer %f, %fp[%peer] : memref<4xi32>, memref<?xi64> -> memref<4xi32, strided<[1], offset: ?>>
    tile.signal set %one -> %pf[%rank] : i32 -> memref<4xi32, strided<[1], offset: ?>>
    tile.wait ge %one -> %f[%peer] {timeout_ms = 5000} : i32 -> memref<4xi32>
  }
  return
}
