// RUN: tile-opt %s -split-input-file -tile-emulate-exp2=every=3 | FileCheck %s
// RUN: tile-opt %s -split-input-file -tile-emulate-exp2 | FileCheck %s --check-prefix=OFF
// RUN: not tile-opt %s -tile-emulate-exp2=every=1 2>&1 | FileCheck %s --check-prefix=ERR

// Of a block's exp2s, the third (the last of every 3) becomes the cubic:
// x clamped to [-126, 127], floor(x) from add.rm with 1.5 * 2^23, three
// FMAs on the fraction, times 2^floor(x) (its bits: floor(x) + 127 in the
// exponent field; a multiply, so that NaN propagates). The others stay on
// the special-function unit.
// CHECK-LABEL: func.func @softmax_row
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%arg0)
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%arg1)
// CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%arg2)
// CHECK: %[[LO:.+]] = arith.maximumf %arg2, %{{.+}} : f32
// CHECK: %[[X:.+]] = arith.minimumf %[[LO]], %{{.+}} : f32
// CHECK: %[[T:.+]] = llvm.call_intrinsic "llvm.nvvm.add.rm.f"(%[[X]], %{{.+}}) : (f32, f32) -> f32
// CHECK: %[[J:.+]] = arith.subf %[[T]], %{{.+}} : f32
// CHECK: %[[F:.+]] = arith.subf %[[X]], %[[J]] : f32
// CHECK: llvm.intr.fma
// CHECK: llvm.intr.fma
// CHECK: %[[P:.+]] = llvm.intr.fma
// CHECK: %[[TB:.+]] = arith.bitcast %[[T]] : f32 to i32
// CHECK: %[[SH:.+]] = arith.shli %[[TB]], %{{.+}} : i32
// CHECK: %[[E:.+]] = arith.addi %[[SH]], %{{.+}} : i32
// CHECK: %[[EF:.+]] = arith.bitcast %[[E]] : i32 to f32
// CHECK: %[[Y:.+]] = arith.mulf %[[P]], %[[EF]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%arg3)
// CHECK: return %{{.+}}, %{{.+}}, %[[Y]], %{{.+}}
// OFF-LABEL: func.func @softmax_row
// OFF-COUNT-4: llvm.nvvm.ex2.approx.ftz.f32
// OFF-NOT: llvm.intr.fma
// ERR: every=1 must be 0 (off) or 2..64
func.func @softmax_row(%a: f32, %b: f32, %c: f32, %d: f32) -> (f32, f32, f32, f32) {
  %0 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%a) : (f32) -> f32
  %1 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%b) : (f32) -> f32
  %2 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%c) : (f32) -> f32
  %3 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%d) : (f32) -> f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// -----

// A call of the name on other types is not the intrinsic: left alone (the
// pass built f32 arithmetic on i16 operands; found by the fuzzer).
// CHECK-LABEL: func.func @not_f32
// CHECK-COUNT-3: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT: llvm.intr.fma
func.func @not_f32(%a: i16, %b: i16, %c: i16) -> (i16, i16, i16) {
  %0 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%a) : (i16) -> i16
  %1 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%b) : (i16) -> i16
  %2 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%c) : (i16) -> i16
  return %0, %1, %2 : i16, i16, i16
}
