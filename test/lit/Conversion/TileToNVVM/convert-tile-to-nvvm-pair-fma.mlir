// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx80},canonicalize,cse)' | FileCheck %s

// T.hfma2 on words holding two float16: math.fma on vector<2xf16> becomes
// llvm.intr.fma (one fma.rn.f16x2), not the float32 libdevice call the
// math lowering would make of a 16-bit fma; a float32 fma is left to it.
// CHECK-LABEL: gpu.func @main_kernel
// CHECK: llvm.intr.fma({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> vector<2xf16>
// CHECK: math.fma {{.*}} : f32
// CHECK: gpu.return
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 32, d0 mod 4)>
func.func @main(%A: memref<128xi32>, %B: memref<128xi32>, %C: memref<128xi32>, %F: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    tile.parallel (%i) in (128) attributes {layout = #tile.layout<#map, threads = 128, replicate = 4>} {
      %a = memref.load %A[%i] : memref<128xi32>
      %b = memref.load %B[%i] : memref<128xi32>
      %va = vector.broadcast %a : i32 to vector<1xi32>
      %vb = vector.broadcast %b : i32 to vector<1xi32>
      %ha = vector.bitcast %va : vector<1xi32> to vector<2xf16>
      %hb = vector.bitcast %vb : vector<1xi32> to vector<2xf16>
      %r = math.fma %ha, %hb, %hb : vector<2xf16>
      %w = vector.bitcast %r : vector<2xf16> to vector<1xi32>
      %e = vector.extract %w[0] : i32 from vector<1xi32>
      memref.store %e, %C[%i] : memref<128xi32>
      %f = arith.sitofp %a : i32 to f32
      %g = math.fma %f, %f, %f : f32
      memref.store %g, %F[%i] : memref<128xf32>
    }
  }
  return
}
