// RUN: tile-opt %s -tile-fuse-lop3 | FileCheck %s

// (x & M) | C: one lop3 (truth table 0xea), M the immediate, C a register.
// CHECK-LABEL: func.func @and_or
// CHECK-NOT: arith.andi
// CHECK: %[[V:.+]] = llvm.inline_asm asm_dialect = att "lop3.b32 $0, $1, 0x00780000, $2, 0xea;", "=r,r,r" %arg0, %c1065353216_i32{{.*}} : (i32, i32) -> i32
// CHECK-NOT: arith.ori
// CHECK: arith.bitcast %[[V]] : i32 to f32
func.func @and_or(%x: i32) -> f32 {
  %m = arith.constant 7864320 : i32
  %c = arith.constant 1065353216 : i32
  %a = arith.andi %x, %m : i32
  %v = arith.ori %a, %c : i32
  %f = arith.bitcast %v : i32 to f32
  return %f : f32
}

// (x & M) ^ C, operands in either order: truth table 0x6a.
// CHECK-LABEL: func.func @and_xor
// CHECK: llvm.inline_asm asm_dialect = att "lop3.b32 $0, $1, 0x007f8000, $2, 0x6a;", "=r,r,r" %arg0
func.func @and_xor(%x: i32) -> f32 {
  %m = arith.constant 8355840 : i32
  %c = arith.constant 1069547520 : i32
  %a = arith.andi %m, %x : i32
  %v = arith.xori %c, %a : i32
  %f = arith.bitcast %v : i32 to f32
  return %f : f32
}

// Left alone: a result shifted further (LLVM folds the chain), an and with
// another use, a non-constant operand, and i64.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: llvm.inline_asm
// CHECK: return
func.func @left_alone(%x: i32, %y: i32, %z: i64) -> (i32, i32, i32, i32, i64) {
  %m = arith.constant 255 : i32
  %c = arith.constant 128 : i32
  %k = arith.constant 15 : i32
  %a = arith.andi %x, %m : i32
  %v = arith.xori %a, %c : i32
  %s = arith.shli %v, %k : i32
  %b = arith.andi %x, %c : i32
  %w = arith.ori %b, %m : i32
  %d = arith.andi %x, %m : i32
  %u = arith.ori %d, %y : i32
  %m64 = arith.constant 255 : i64
  %c64 = arith.constant 4096 : i64
  %e = arith.andi %z, %m64 : i64
  %t = arith.ori %e, %c64 : i64
  return %s, %w, %b, %u, %t : i32, i32, i32, i32, i64
}

// A pair of float16 built in one word: the result only taken apart into its
// 16-bit halves (trunci, and shrui 16 then trunci) is fused too; LLVM would
// otherwise narrow the chain into 16-bit lanes and pack them again.
// CHECK-LABEL: func.func @halves
// CHECK: %[[V:.+]] = llvm.inline_asm asm_dialect = att "lop3.b32 $0, $1, 0x000f000f, $2, 0xea;"
// CHECK: arith.trunci %[[V]] : i32 to i16
// CHECK: arith.shrui %[[V]], %{{.+}} : i32
func.func @halves(%x: i32) -> (f16, f16) {
  %m = arith.constant 983055 : i32
  %c = arith.constant 1677747200 : i32
  %sixteen = arith.constant 16 : i32
  %a = arith.andi %x, %m : i32
  %v = arith.ori %a, %c : i32
  %lo = arith.trunci %v : i32 to i16
  %s = arith.shrui %v, %sixteen : i32
  %hi = arith.trunci %s : i32 to i16
  %f0 = arith.bitcast %lo : i16 to f16
  %f1 = arith.bitcast %hi : i16 to f16
  return %f0, %f1 : f16, f16
}

// A shift by 8 before the truncation is not a half: left alone.
// CHECK-LABEL: func.func @not_halves
// CHECK-NOT: llvm.inline_asm
// CHECK: return
func.func @not_halves(%x: i32) -> i16 {
  %m = arith.constant 983055 : i32
  %c = arith.constant 1677747200 : i32
  %eight = arith.constant 8 : i32
  %a = arith.andi %x, %m : i32
  %v = arith.ori %a, %c : i32
  %s = arith.shrui %v, %eight : i32
  %t = arith.trunci %s : i32 to i16
  return %t : i16
}
