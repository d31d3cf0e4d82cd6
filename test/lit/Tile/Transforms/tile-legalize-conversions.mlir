// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-legalize-conversions))' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-legalize-conversions,tile-legalize-conversions))' | FileCheck %s

// A float-to-int8 cast saturates: the in-range conversion is marked, the
// values at or above 2^7 become 127, those below -2^7 become -128 and NaN
// becomes 0. Running the pass twice gives the same IR (second RUN line).
// CHECK-LABEL: func.func @fptosi_i8
// CHECK-SAME: (%[[X:.+]]: f32)
// CHECK: %[[R:.+]] = arith.fptosi %[[X]] {tile.saturated} : f32 to i8
// CHECK-DAG: %[[HI:.+]] = arith.cmpf oge, %[[X]], %{{.+}} : f32
// CHECK-DAG: %[[LO:.+]] = arith.cmpf olt, %[[X]], %{{.+}} : f32
// CHECK: %[[S1:.+]] = arith.select %[[HI]], %{{.+}}, %[[R]] : i8
// CHECK: %[[S2:.+]] = arith.select %[[LO]], %{{.+}}, %[[S1]] : i8
// CHECK: %[[NAN:.+]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[OUT:.+]] = arith.select %[[NAN]], %{{.+}}, %[[S2]] : i8
// CHECK: return %[[OUT]]
// CHECK-NOT: arith.fptosi
func.func @fptosi_i8(%x: f32) -> i8 {
  %i = arith.fptosi %x : f32 to i8
  return %i : i8
}

// -----

// Unsigned conversions clamp at 2^8 and at -1; narrow floats compare in f32;
// vectors are converted lane by lane with splat bounds.
// CHECK-LABEL: func.func @fptoui_f16_vector
// CHECK: %[[W:.+]] = arith.extf %{{.+}} : vector<4xf16> to vector<4xf32>
// CHECK: arith.fptoui %[[W]] {tile.saturated} : vector<4xf32> to vector<4xi8>
// CHECK-DAG: arith.constant dense<2.560000e+02> : vector<4xf32>
// CHECK-DAG: arith.constant dense<-1.000000e+00> : vector<4xf32>
// CHECK: arith.cmpf uno
func.func @fptoui_f16_vector(%x: vector<4xf16>) -> vector<4xi8> {
  %i = arith.fptoui %x : vector<4xf16> to vector<4xi8>
  return %i : vector<4xi8>
}

// -----

// fp8 conversions become integer operations on the bits: f32 -> e4m3 rounds
// the mantissa to 3 bits (ties to even), saturates at 448 and keeps NaN;
// e4m3 -> f32 rebiases the exponent. No fp8 extf/truncf is left.
// CHECK-LABEL: func.func @fp8_round_trip
// CHECK: arith.minimumf %{{.+}}, %{{.+}} : f32
// CHECK: arith.bitcast %{{.+}} : i8 to f8E4M3FN
// CHECK: arith.bitcast %{{.+}} : f8E4M3FN to i8
// CHECK-NOT: arith.truncf %{{.+}} : f32 to f8E4M3FN
// CHECK-NOT: arith.extf %{{.+}} : f8E4M3FN to f32
func.func @fp8_round_trip(%x: f32) -> f32 {
  %h = arith.truncf %x : f32 to f8E4M3FN
  %y = arith.extf %h : f8E4M3FN to f32
  return %y : f32
}

// -----

// Integer to fp8 goes through f32; conversions without fp8 are left alone.
// CHECK-LABEL: func.func @int_to_fp8
// CHECK: %[[F:.+]] = arith.sitofp %{{.+}} : i32 to f32
// CHECK: arith.bitcast %{{.+}} : i8 to f8E5M2
// CHECK: arith.sitofp %{{.+}} : i32 to f16
func.func @int_to_fp8(%x: i32) -> (f8E5M2, f16) {
  %h = arith.sitofp %x : i32 to f8E5M2
  %g = arith.sitofp %x : i32 to f16
  return %h, %g : f8E5M2, f16
}

