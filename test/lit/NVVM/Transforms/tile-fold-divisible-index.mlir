// RUN: tile-opt %s -tile-fold-divisible-index -canonicalize | FileCheck %s

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
