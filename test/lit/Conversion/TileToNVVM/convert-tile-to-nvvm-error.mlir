// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(tile-layout-inference),convert-tile-to-nvvm{chip=sm_80 features=+ptx80})'

// 96 KB + 96 KB of shared buffers fit an sm_90 block but not an sm_80 one.
func.func @too_much_shared(%n: index) {
  // expected-error @+1 {{needs 197632 bytes of shared memory (196608 for its shared buffers, 0 of scratch, 1024 to align swizzled buffers), more than the 163 KB a block can have on sm_80}}
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<192x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<192x256xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @f64_exp(%X: memref<128xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment : memref<128xf64, #tile.scope<fragment>>
    tile.copy %X[%c0] [128] to %f[%c0] [128] : memref<128xf64> to memref<128xf64, #tile.scope<fragment>>
    tile.parallel (%i) in (128) {
      %v = memref.load %f[%i] : memref<128xf64, #tile.scope<fragment>>
      // expected-error @+1 {{this math function on 'f64' is not supported on CUDA targets yet}}
      %e = math.exp %v : f64
      memref.store %e, %f[%i] : memref<128xf64, #tile.scope<fragment>>
    }
    tile.copy %f[%c0] [128] to %X[%c0] [128] : memref<128xf64, #tile.scope<fragment>> to memref<128xf64>
  }
  return
}

// -----

func.func @two_kernels(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
  }
  // expected-error @+1 {{a tile program for CUDA targets may contain}}
  tile.kernel blocks(%bx) in (%n) threads(128) {
  }
  return
}
