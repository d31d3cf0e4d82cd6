// RUN: tile-opt %s --pass-pipeline='builtin.module(func.func(tile-precise-math))' | FileCheck %s

// float32 and float16 functions go through float64 and are rounded once;
// rsqrt is 1 / sqrt in float64; float64 is left to tile-software-math; a
// fast function asked for by name (afn) stays as it is.
// CHECK-LABEL: func.func @widened
// CHECK:   %[[W:.*]] = arith.extf %arg0 : f32 to f64
// CHECK:   %[[E:.*]] = math.exp2 %[[W]] : f64
// CHECK:   arith.truncf %[[E]] : f64 to f32
// CHECK:   %[[H:.*]] = arith.extf %arg1 : f16 to f64
// CHECK:   math.sin %[[H]] : f64
// CHECK:   arith.truncf {{.*}} : f64 to f16
// CHECK:   %[[R:.*]] = arith.extf %arg0 : f32 to f64
// CHECK:   %[[S:.*]] = math.sqrt %[[R]] : f64
// CHECK:   arith.divf %{{.*}}, %[[S]] : f64
// CHECK:   math.log %arg2 : f64
// CHECK:   math.exp %arg0 fastmath<afn> : f32
func.func @widened(%x: f32, %h: f16, %d: f64) -> (f32, f16, f32, f64, f32) {
  %0 = math.exp2 %x : f32
  %1 = math.sin %h : f16
  %2 = math.rsqrt %x : f32
  %3 = math.log %d : f64
  %4 = math.exp %x fastmath<afn> : f32
  return %0, %1, %2, %3, %4 : f32, f16, f32, f64, f32
}
