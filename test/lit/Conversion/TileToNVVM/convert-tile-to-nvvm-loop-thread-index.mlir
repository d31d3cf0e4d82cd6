// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx81 loop-thread-index=true},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx81},canonicalize,cse)' | FileCheck %s --check-prefix=HOIST

// With loop-thread-index=true (tl.enable_loop_thread_index) a loop body
// sees the thread index through an asm copy with side effects, which LLVM
// cannot hoist: the thread-dependent shared-memory
// addresses of the copy inside the loop are computed from the copy, in the
// loop, instead of being hoisted out of it and held in registers across it.
// Each loop level makes its own copy (of the enclosing loop's copy); the
// code outside loops uses the thread index itself. By default there is no
// copy.

// CHECK-LABEL: gpu.func @per_iteration_kernel
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: scf.for
// CHECK-NEXT: %[[N:.+]] = arith.index_castui %[[TID]] : index to i32
// CHECK-NEXT: %[[C:.+]] = llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $1;", "=r,r" %[[N]] : (i32) -> i32
// CHECK-NEXT: %[[LTID:.+]] = arith.index_castui %[[C]] : i32 to index
// CHECK-NEXT: arith.remui %[[LTID]], %c8 : index
// CHECK-NEXT: arith.divui %[[LTID]], %c8 : index
// CHECK-NOT: %[[TID]]
// CHECK: scf.for
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "mov.b32 $0, $1;", "=r,r" %[[C]] : (i32) -> i32
// CHECK-NOT: %[[TID]]
// CHECK: gpu.return

// HOIST-LABEL: gpu.func @per_iteration_kernel
// HOIST-NOT: llvm.inline_asm
// HOIST: gpu.return
func.func @per_iteration(%X: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    scf.for %i = %c0 to %n step %c1 {
      tile.copy %X[%c0, %c0] [64, 64] to %a[%c0, %c0] [64, 64] : memref<64x64xf16> to memref<64x64xf16, #tile.scope<shared>>
      tile.barrier
      scf.for %j = %c0 to %n step %c1 {
        tile.copy %a[%c0, %c0] [64, 64] to %X[%c0, %c0] [64, 64] : memref<64x64xf16, #tile.scope<shared>> to memref<64x64xf16>
      }
    }
  }
  return
}
