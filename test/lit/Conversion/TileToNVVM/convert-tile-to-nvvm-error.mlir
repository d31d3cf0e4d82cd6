// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80})'
// RUN: not tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_100})' 2>&1 | FileCheck %s --check-prefix=CHIP

// Chips missing from the chip table (python/tilelang_mlir/base/chips.py) are
// refused before anything is lowered, naming the ones it has (LLVM's NVPTX
// backend aborts on Blackwell with the PTX version the pipeline asks for).
// CHIP: error: convert-tile-to-nvvm supports the NVIDIA chips sm_75, sm_80, sm_86, sm_87, sm_89, sm_90 and sm_90a, got sm_100

// 96 KB + 96 KB of shared buffers fit an sm_90 block but not an sm_80 one;
// both are live at the copy, so they cannot share bytes either (see
// convert-tile-to-nvvm-shared-reuse.mlir).
func.func @too_much_shared(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{needs 197632 bytes of shared memory (196608 for its shared buffers, 0 of scratch, 1024 to align swizzled buffers), more than the 163 KB a block can have on sm_80; with shared buffers whose lifetimes do not overlap sharing bytes, it still needs 197632 (196608 for its shared buffers)}}
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x256xf16, #tile.scope<shared>>
    tile.copy %a[%c0, %c0] [192, 256] to %b[%c0, %c0] [192, 256] : memref<192x256xf16, #tile.scope<shared>> to memref<192x256xf16, #tile.scope<shared>>
  }
  return
}

// -----

// A buffer that an op other than tile and memref accesses takes (here a
// yield out of an scf.if) is live for the whole kernel: no buffer can share
// bytes with it, and the error says why none could.
func.func @shared_escapes(%n: index, %p: i1) {
  // expected-error @+1 {{needs 197632 bytes of shared memory (196608 for its shared buffers, 0 of scratch, 1024 to align swizzled buffers), more than the 163 KB a block can have on sm_80; its shared buffers cannot share bytes: an op other than tile and memref accesses takes a shared buffer}}
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x256xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x256xf16, #tile.scope<shared>>
    %c = scf.if %p -> memref<192x256xf16, #tile.scope<shared>> {
      scf.yield %a : memref<192x256xf16, #tile.scope<shared>>
    } else {
      scf.yield %b : memref<192x256xf16, #tile.scope<shared>>
    }
  }
  return
}

// -----

#map = affine_map<(d0)[s0] -> (d0 floordiv 4 + s0 * 32, d0 mod 4)>
func.func @f64_erf(%X: memref<128xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<#map, threads = 128, replicate = 4>} : memref<128xf64, #tile.scope<fragment>>
    tile.copy %X[%c0] [128] to %f[%c0] [128] : memref<128xf64> to memref<128xf64, #tile.scope<fragment>>
    tile.parallel (%i) in (128) attributes {layout = #tile.layout<#map, threads = 128, replicate = 4>} {
      %v = memref.load %f[%i] : memref<128xf64, #tile.scope<fragment>>
      // expected-error @+1 {{this math function on 'f64' is not supported on CUDA targets yet}}
      %e = math.erf %v : f64
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

// -----

// Padded rows (T.make_padded_layout) are not implemented by the GPU
// lowerings: the buffer is refused instead of being placed densely.
func.func @padded_shared(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_shared' op shared buffer 'memref<64x64xf32, #tile.scope<shared>>' asks for 8 elements of padding per row (#tile.swizzle<0, pad = 8>), which GPU targets do not implement; drop T.make_padded_layout for this buffer (layout inference picks a swizzle against bank conflicts)}}
    %s = tile.alloc_shared {swizzle = #tile.swizzle<0, pad = 8>} : memref<64x64xf32, #tile.scope<shared>>
  }
  return
}

// -----

// An `mfma` wave grid (AMD layout inference) cannot be lowered for NVIDIA.
#map = affine_map<(d0, d1) -> (((d0 floordiv 4) mod 2) * 32 + d1, d0 mod 4 + (d0 floordiv 8) * 4)>
func.func @mfma_on_nvidia(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<0>} : memref<32x8xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<8x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #tile.layout<#map, threads = 64>} : memref<32x32xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op an MFMA gemm needs an AMD target}}
    tile.gemm %a, %b, %c {mfma = array<i64: 1, 1>} : memref<32x8xf16, #tile.scope<shared>>, memref<8x32xf16, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// The explicit layer can ask for Hopper operations on any target: on an
// older chip they are refused at the op (wgmma, a TMA copy, setmaxnreg).
#wgmma_acc80 = #tile.layout<affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 4, (d0 floordiv 8) * 4 + d1 mod 4)>, threads = 128>
func.func @wgmma_on_sm80(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x32xf16, #tile.scope<shared>>
    %v = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<32x64xf16, #tile.scope<shared>>
    %o = tile.alloc_fragment {layout = #wgmma_acc80} : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op is a wgmma gemm, which needs sm_90a; the kernel is compiled for sm_80}}
    tile.gemm %a, %v, %o {wgmma = array<i64: 1, 1>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @tma_copy_on_sm80(%A: memref<4096x4096xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x64xf16, #tile.scope<shared>>
    %bar = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op is a TMA copy (T.tma_copy), which needs sm_90a; the kernel is compiled for sm_80}}
    tile.copy %A[%c0, %c0] [64, 64] to %s[%c0, %c0] [64, 64] via %bar[%c0] {expect_tx} : memref<4096x4096xf16> to memref<64x64xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
    tile.barrier_arrive %bar[%c0] per_thread : memref<1xi64, #tile.scope<shared>>
    tile.barrier_wait %bar[%c0], %c0 : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @set_max_nreg_on_sm80(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(0 to 128) {
      // expected-error @+1 {{'tile.set_max_nreg' op changes the register budget (setmaxnreg), which needs sm_90a; the kernel is compiled for sm_80}}
      tile.set_max_nreg 240 increase
    }
  }
  return
}

// -----

// A grid given in the input is kept by layout inference, and the lowering
// checks that the accumulator's layout is the grid's: here a blocked layout
// forced on it would have the mma registers read from the wrong elements.
#blocked_acc = #tile.layout<affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 4, (d0 floordiv 8) * 4 + d1 mod 4)>, threads = 128>
func.func @grid_layout_mismatch(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment {layout = #blocked_acc} : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{is not the one of its `warp_partition` grid}}
    tile.gemm %a, %b, %c {warp_partition = array<i64: 2, 2>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
