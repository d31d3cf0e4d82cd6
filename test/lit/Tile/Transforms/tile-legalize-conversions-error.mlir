// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(tile-legalize-conversions))'

// Vectors too long for LLVM's lowering (which counts elements in 32 bits)
// are turned away with a diagnostic, before any pass builds on them.
func.func @huge_vector(%x: vector<4294967297xf16>) -> vector<4294967297xi8> {
  // expected-error @+1 {{'arith.fptoui' op has the vector type 'vector<4294967297xf16>'; tile programs use fixed vectors of at most 65536 elements}}
  %i = arith.fptoui %x : vector<4294967297xf16> to vector<4294967297xi8>
  return %i : vector<4294967297xi8>
}
