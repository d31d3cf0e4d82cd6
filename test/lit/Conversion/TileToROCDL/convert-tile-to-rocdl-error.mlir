// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx942})'
// RUN: not tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx1100})' 2>&1 | FileCheck %s --check-prefix=CHIP

// RDNA chips (wave32, no MFMA) are refused before anything is lowered.
// CHIP: error: convert-tile-to-rocdl supports the CDNA chips gfx90a, gfx942 and gfx950 (wave64 with MFMA), got gfx1100

// 96 KB of shared buffers exceed the 64 KB of LDS a gfx942 workgroup has
// (gfx950 has 160 KB: see convert-tile-to-rocdl-lds.mlir).
func.func @too_much_lds(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{needs 99328 bytes of shared memory (98304 for its shared buffers, 0 of scratch, 1024 to align swizzled buffers), more than the 64 KB a block can have on gfx942}}
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x128xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x128xf16, #tile.scope<shared>>
    tile.copy %a[%c0, %c0] [192, 128] to %b[%c0, %c0] [192, 128] : memref<192x128xf16, #tile.scope<shared>> to memref<192x128xf16, #tile.scope<shared>>
  }
  return
}

// -----

// Device printf needs the ROCm device libraries, which are not linked.
func.func @print(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    // expected-error @+1 {{T.print is not supported on ROCm targets yet (device printf needs the ROCm device libraries)}}
    tile.print %bx {msg = "block"} : index
  }
  return
}

// -----

// Warp specialization (a TMA producer warpgroup) is a Hopper design.
func.func @warp_specialize(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.warp_specialize' op is warp-specialized through TMA and transaction barriers (NVIDIA sm_90a), which ROCm targets do not have}}
    tile.warp_specialize producer(128) {
    } consumer {
    }
  }
  return
}

// -----

// f64 transcendental functions would need the device libraries too.
#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 16, d0 mod 4)>
func.func @f64_erf(%X: memref<64xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64, replicate = 4>} : memref<64xf64, #tile.scope<fragment>>
    tile.copy %X[%c0] [64] to %f[%c0] [64] : memref<64xf64> to memref<64xf64, #tile.scope<fragment>>
    tile.parallel (%i) in (64) attributes {layout = #tile.layout<#map, threads = 64, replicate = 4>} {
      %v = memref.load %f[%i] : memref<64xf64, #tile.scope<fragment>>
      // expected-error @+1 {{this math function on 'f64' is not supported on ROCm targets yet}}
      %e = math.erf %v : f64
      memref.store %e, %f[%i] : memref<64xf64, #tile.scope<fragment>>
    }
    tile.copy %f[%c0] [64] to %X[%c0] [64] : memref<64xf64, #tile.scope<fragment>> to memref<64xf64>
  }
  return
}

// -----

// One kernel per function, at its top level (the host side is a launch).
func.func @two_kernels(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
  }
  // expected-error @+1 {{'tile.kernel' op a tile program for ROCm targets may contain one T.Kernel}}
  tile.kernel blocks(%bx) in (%n) threads(64) {
  }
  return
}

// -----

func.func @nested_kernel(%n: index, %flag: i1) {
  scf.if %flag {
    // expected-error @+1 {{'tile.kernel' op must be at the top level of its function on ROCm targets}}
    tile.kernel blocks(%bx) in (%n) threads(64) {
    }
  }
  return
}

// -----

// A gemm marked for MFMA by hand on f32 inputs: MFMA 32x32x8 takes f16 or
// bf16.
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 8 + d1 floordiv 4, (d0 floordiv 8) * 4 + d1 mod 4)>
func.func @mfma_f32(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<32x8xf32, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<8x32xf32, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x32xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op MFMA gemms support f16/bf16 inputs with an f32 accumulator, got 'f32' -> 'f32'}}
    tile.gemm %a, %b, %c {mfma = array<i64: 1, 1>} : memref<32x8xf32, #tile.scope<shared>>, memref<8x32xf32, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// An mbarrier wait names the op; an op without a ROCm lowering does too.
func.func @barrier_wait(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %bar = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.barrier_arrive' op uses a transaction barrier (T.alloc_barrier, an NVIDIA mbarrier), which ROCm targets do not have}}
    tile.barrier_arrive %bar[%c0] per_thread : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @named_barrier(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.named_barrier' op has no lowering for ROCm targets}}
    tile.named_barrier 1, 64
  }
  return
}

// -----

// A copy through a transaction barrier is a TMA load, which only NVIDIA
// targets register: the target-neutral lowering of tile.copy refuses it.
func.func @tma_copy(%A: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %bar = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op is a copy through a transaction barrier (TMA, NVIDIA sm_90a), which ROCm targets do not have}}
    tile.copy %A[%c0, %c0] [64, 64] to %a[%c0, %c0] [64, 64] via %bar[%c0] : memref<64x64xf16> to memref<64x64xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
  }
  return
}
