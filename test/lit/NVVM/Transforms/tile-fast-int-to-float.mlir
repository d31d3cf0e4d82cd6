// RUN: tile-opt %s -tile-fast-int-to-float -split-input-file | FileCheck %s

// An int4 nibble minus 8 ([-8, 7]) to f16: 0x6400 + 8 added to the integer,
// reinterpreted as f16 (1032 + q), minus 1032.
// CHECK-LABEL: func.func @nibble_f16
// CHECK: %[[OFF:.*]] = arith.constant 25608 : i32
// CHECK: %[[S:.*]] = arith.addi %{{.*}}, %[[OFF]] : i32
// CHECK: %[[T:.*]] = arith.trunci %[[S]] : i32 to i16
// CHECK: %[[V:.*]] = arith.bitcast %[[T]] : i16 to f16
// CHECK: %[[BIAS:.*]] = arith.constant 1.032000e+03 : f16
// CHECK: %[[R:.*]] = arith.subf %[[V]], %[[BIAS]] : f16
// CHECK-NOT: sitofp
// CHECK: return %[[R]]
func.func @nibble_f16(%b: i8) -> f16 {
  %c15 = arith.constant 15 : i32
  %c8 = arith.constant 8 : i32
  %w = arith.extui %b : i8 to i32
  %n = arith.andi %w, %c15 : i32
  %q = arith.subi %n, %c8 : i32
  %f = arith.sitofp %q : i32 to f16
  return %f : f16
}

// -----

// The high nibble, unsigned ([0, 15]) to bf16: 128.0 = 0x4300.
// CHECK-LABEL: func.func @high_nibble_bf16
// CHECK: arith.constant 17152 : i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: arith.constant 1.280000e+02 : bf16
// CHECK: arith.subf
// CHECK-NOT: uitofp
func.func @high_nibble_bf16(%b: i8) -> bf16 {
  %c4 = arith.constant 4 : i32
  %w = arith.extui %b : i8 to i32
  %n = arith.shrui %w, %c4 : i32
  %f = arith.uitofp %n : i32 to bf16
  return %f : bf16
}

// -----

// A signed byte to f16 ([-128, 127]: 0x6400 + 128 + x, minus 1152): the
// zero-extended byte with its sign bit flipped, OR 0x6400, is one xor.
// CHECK-LABEL: func.func @int8_f16
// CHECK: %[[Z:.*]] = arith.extui %{{.*}} : i8 to i32
// CHECK: %[[M:.*]] = arith.constant 25728 : i32
// CHECK: arith.xori %[[Z]], %[[M]] : i32
// CHECK: arith.constant 1.152000e+03 : f16
// CHECK-NOT: sitofp
func.func @int8_f16(%b: i8) -> f16 {
  %w = arith.extsi %b : i8 to i32
  %f = arith.sitofp %w : i32 to f16
  return %f : f16
}

// -----

// A signed byte to bf16 spans 256 integers, more than bf16 holds above
// 128.0: through f32 (2^23 = 0x4B000000) and an exact truncation.
// CHECK-LABEL: func.func @int8_bf16
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.constant 1258291328 : i32
// CHECK: arith.xori
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.constant 0x4B000080 : f32
// CHECK: arith.subf %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: sitofp
func.func @int8_bf16(%b: i8) -> bf16 {
  %f = arith.sitofp %b : i8 to bf16
  return %f : bf16
}

// -----

// An int4 nibble minus 8 to f32: 2^23 + 8 added to the integer, reinterpreted
// (2^23 + 8 + q), minus 2^23 + 8; a signed byte to f32 is the xor form.
// CHECK-LABEL: func.func @nibble_and_byte_f32
// CHECK: %[[OFF:.*]] = arith.constant 1258291208 : i32
// CHECK: %[[S:.*]] = arith.addi %{{.*}}, %[[OFF]] : i32
// CHECK: %[[V:.*]] = arith.bitcast %[[S]] : i32 to f32
// CHECK: %[[BIAS:.*]] = arith.constant 0x4B000008 : f32
// CHECK: arith.subf %[[V]], %[[BIAS]] : f32
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.constant 1258291328 : i32
// CHECK: arith.xori
// CHECK: arith.constant 0x4B000080 : f32
// CHECK-NOT: sitofp
func.func @nibble_and_byte_f32(%b: i8) -> (f32, f32) {
  %c15 = arith.constant 15 : i32
  %c8 = arith.constant 8 : i32
  %w = arith.extui %b : i8 to i32
  %n = arith.andi %w, %c15 : i32
  %q = arith.subi %n, %c8 : i32
  %f = arith.sitofp %q : i32 to f32
  %g = arith.sitofp %b : i8 to f32
  return %f, %g : f32, f32
}

// -----

// Wide or unknown ranges and other float types keep their conversion.
// CHECK-LABEL: func.func @left_alone
// CHECK: arith.sitofp %{{.*}} : i32 to f16
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.uitofp %{{.*}} : i16 to bf16
// CHECK: arith.sitofp %{{.*}} : i8 to f64
func.func @left_alone(%x: i32, %b: i8, %h: i16) -> (f16, f32, bf16, f64) {
  %f = arith.sitofp %x : i32 to f16
  %g = arith.sitofp %x : i32 to f32
  %k = arith.uitofp %h : i16 to bf16
  %d = arith.sitofp %b : i8 to f64
  return %f, %g, %k, %d : f16, f32, bf16, f64
}
