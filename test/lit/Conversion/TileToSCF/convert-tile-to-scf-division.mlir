// RUN: tile-opt %s --convert-tile-to-scf | FileCheck %s

// A signed division by a run-time divisor: an assertion that it is not zero
// comes first, and -1 becomes 1 where the dividend is the smallest i32 (the
// host's idiv traps on both); a division by a constant is left alone.
// CHECK: llvm.mlir.global internal constant @[[MSG:.+]]("integer division by zero\00")
// CHECK-LABEL: func.func @divide
// CHECK: %[[A:.+]] = memref.load %arg0
// CHECK: %[[B:.+]] = memref.load %arg1
// CHECK: %[[NZ:.+]] = arith.cmpi ne, %[[B]], %{{.+}} : i32
// CHECK: %[[Z:.+]] = arith.xori %[[NZ]]
// CHECK: scf.if %[[Z]] {
// CHECK: llvm.mlir.addressof @[[MSG]]
// CHECK: llvm.call @__tile_assert_fail
// CHECK-DAG: %[[M1:.+]] = arith.cmpi eq, %[[B]], %c-1_i32
// CHECK-DAG: %[[MIN:.+]] = arith.cmpi eq, %[[A]], %c-2147483648_i32
// CHECK: %[[OV:.+]] = arith.andi %[[MIN]], %[[M1]]
// CHECK: %[[SAFE:.+]] = arith.select %[[OV]], %c1_i32, %[[B]]
// CHECK: %[[Q:.+]] = arith.floordivsi %[[A]], %[[SAFE]] : i32
// CHECK-NEXT: arith.divui %[[Q]], %c3_i32 : i32
func.func @divide(%a: memref<4xi32>, %b: memref<4xi32>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : i32
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %x = memref.load %a[%c0] : memref<4xi32>
    %y = memref.load %b[%c0] : memref<4xi32>
    %q = arith.floordivsi %x, %y : i32
    %u = arith.divui %q, %c3 : i32
    memref.store %u, %a[%c0] : memref<4xi32>
  }
  return
}
