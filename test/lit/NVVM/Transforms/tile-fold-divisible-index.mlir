// RUN: tile-opt %s -tile-fold-divisible-index -canonicalize | FileCheck %s
// RUN: tile-opt %s -tile-fold-divisible-index -canonicalize -cse | FileCheck %s --check-prefix=CSE

// A thread's element: its base (t * 32, t * 8 + k * 64) plus a constant.
// Division by a divisor of every coefficient folds, and so does the
// remainder a - (a // d) * d built on it (the way `%` arrives).
// CHECK-LABEL: func.func @divisible
// CHECK-DAG: %[[C5:.+]] = arith.constant 5 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-NOT: arith.floordivsi
// CHECK: %[[Q:.+]] = arith.muli %arg0, %[[C4]] : index
// CHECK: return %[[Q]], %[[C5]]
func.func @divisible(%t: index) -> (index, index) {
  %c32 = arith.constant 32 : index
  %c5 = arith.constant 5 : index
  %c8 = arith.constant 8 : index
  %a = arith.muli %t, %c32 : index
  %b = arith.addi %a, %c5 : index
  %q = arith.floordivsi %b, %c8 : index
  %p = arith.muli %q, %c8 : index
  %r = arith.subi %b, %p : index
  return %q, %r : index, index
}

// Sums of several terms, subtraction and a negative constant: floor
// semantics ((8t + 64k - 3) // 8 = t + 8k - 1, remainder 5).
// CHECK-LABEL: func.func @sums
// CHECK-NOT: arith.floordivsi
// CHECK-DAG: arith.constant 5 : index
// CHECK: return
func.func @sums(%t: index, %k: index) -> (index, index) {
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c3 = arith.constant 3 : index
  %a = arith.muli %t, %c8 : index
  %b = arith.muli %c64, %k : index
  %s = arith.addi %a, %b : index
  %e = arith.subi %s, %c3 : index
  %q = arith.floordivsi %e, %c8 : index
  %p = arith.muli %q, %c8 : index
  %r = arith.subi %e, %p : index
  return %q, %r : index, index
}

// Left alone: a term whose coefficient the divisor does not divide, and
// integers that are not index (they may wrap).
// CHECK-LABEL: func.func @left_alone
// CHECK: arith.floordivsi
// CHECK: arith.floordivsi
// CHECK: return
func.func @left_alone(%t: index, %u: index, %w: i32) -> (index, i32) {
  %c32 = arith.constant 32 : index
  %c8 = arith.constant 8 : index
  %a = arith.muli %t, %c32 : index
  %b = arith.addi %a, %u : index
  %q = arith.floordivsi %b, %c8 : index
  %c32i = arith.constant 32 : i32
  %c8i = arith.constant 8 : i32
  %x = arith.muli %w, %c32i : i32
  %y = arith.floordivsi %x, %c8i : i32
  return %q, %y : index, i32
}

// In a loop, k * 64 + (base + c) with base + c the same in every iteration
// becomes (k * 64 + base) + c: one sum in the loop, each element adding its
// constant, instead of one loop-invariant register per element (cse then
// merges the two k * 64 + base). Outside loops, and where the inner sum
// changes with the loop, nothing moves.
// CHECK-LABEL: func.func @constant_outermost
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: %[[OUT:.+]] = arith.addi %arg0, %[[C8]] : index
// CHECK: scf.for %[[K:.+]] =
// CHECK: %[[KB:.+]] = arith.muli %[[K]], %{{.+}} : index
// CHECK: %[[S:.+]] = arith.addi %[[KB]], %arg0 : index
// CHECK: %[[E1:.+]] = arith.addi %[[S]], %[[C1]] : index
// CHECK: %[[S8:.+]] = arith.addi %[[KB]], %arg0 : index
// CHECK: %[[E8:.+]] = arith.addi %[[S8]], %[[C8]] : index
// CHECK: %[[V:.+]] = arith.addi %[[K]], %[[C1]] : index
// CHECK: %[[W:.+]] = arith.addi %arg1, %[[V]] : index
// CHECK: func.call @use(%[[E1]], %[[E8]], %[[W]])
// CHECK: return %[[OUT]]
func.func private @use(index, index, index)
func.func @constant_outermost(%base: index, %x: index, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %out = arith.addi %base, %c8 : index
  scf.for %k = %c0 to %n step %c1 {
    %kb = arith.muli %k, %c64 : index
    %b1 = arith.addi %base, %c1 : index
    %b8 = arith.addi %base, %c8 : index
    %e1 = arith.addi %kb, %b1 : index
    %e8 = arith.addi %kb, %b8 : index
    %v = arith.addi %k, %c1 : index
    %w = arith.addi %x, %v : index
    func.call @use(%e1, %e8, %w) : (index, index, index) -> ()
  }
  return %out : index
}

// A 128-byte swizzle of a float32 tile (32 elements a row): an element's
// address is l ^ ((l / 32) % 8) * 4 with l = row * 32 + col. A thread's
// elements are its (row, col) plus (0, 8) and (8, 8): constants with bits
// the thread's base never sets (col = (t % 4) * 2 sets bits 1-2, row =
// (t / 4) % 8 bits 0-2). The XOR is linear over such bits, so each address
// is the base's XOR a column constant plus a constant of whole swizzle
// periods (8 rows = 256 elements), with no division left per element.
// (After cse: one base, one XOR and one add.)
// CSE-LABEL: func.func @swizzle_disjoint
// CSE-DAG: %[[C8:.+]] = arith.constant 8 : index
// CSE-DAG: %[[C256:.+]] = arith.constant 256 : index
// CSE: %[[BASE:.+]] = arith.xori
// CSE-NOT: arith.divui
// CSE-NOT: arith.remui
// CSE: %[[E1:.+]] = arith.xori %[[BASE]], %[[C8]] : index
// CSE-NEXT: %[[E2:.+]] = arith.addi %[[E1]], %[[C256]] : index
// CSE-NEXT: return %[[BASE]], %[[E1]], %[[E2]]
func.func @swizzle_disjoint(%tid: index) -> (index, index, index) {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %q = arith.divui %tid, %c4 : index
  %row = arith.remui %q, %c8 : index
  %lane = arith.remui %tid, %c4 : index
  %col = arith.muli %lane, %c2 : index
  %col8 = arith.addi %col, %c8 : index
  %row8 = arith.addi %row, %c8 : index
  %r0 = arith.muli %row, %c32 : index
  %l0 = arith.addi %r0, %col : index
  %l1 = arith.addi %r0, %col8 : index
  %r8 = arith.muli %row8, %c32 : index
  %l2 = arith.addi %r8, %col8 : index
  %d0 = arith.divui %l0, %c32 : index
  %m0 = arith.remui %d0, %c8 : index
  %x0 = arith.muli %m0, %c4 : index
  %s0 = arith.xori %l0, %x0 : index
  %d1 = arith.divui %l1, %c32 : index
  %m1 = arith.remui %d1, %c8 : index
  %x1 = arith.muli %m1, %c4 : index
  %s1 = arith.xori %l1, %x1 : index
  %d2 = arith.divui %l2, %c32 : index
  %m2 = arith.remui %d2, %c8 : index
  %x2 = arith.muli %m2, %c4 : index
  %s2 = arith.xori %l2, %x2 : index
  return %s0, %s1, %s2 : index, index, index
}

// Left alone: a constant that may carry into the base's bits (col + 2 with
// col = (t % 4) * 2 setting bit 1), and a base with nothing known of it.
// CHECK-LABEL: func.func @swizzle_overlap
// CHECK-COUNT-2: arith.divui %{{.+}}, %c32{{.*}} : index
// CHECK: return
func.func @swizzle_overlap(%tid: index, %u: index) -> (index, index) {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %lane = arith.remui %tid, %c4 : index
  %col = arith.muli %lane, %c2 : index
  %l0 = arith.addi %col, %c2 : index
  %d0 = arith.divui %l0, %c32 : index
  %m0 = arith.remui %d0, %c8 : index
  %x0 = arith.muli %m0, %c4 : index
  %s0 = arith.xori %l0, %x0 : index
  %l1 = arith.addi %u, %c8 : index
  %d1 = arith.divui %l1, %c32 : index
  %m1 = arith.remui %d1, %c8 : index
  %x1 = arith.muli %m1, %c4 : index
  %s1 = arith.xori %l1, %x1 : index
  return %s0, %s1 : index, index
}
