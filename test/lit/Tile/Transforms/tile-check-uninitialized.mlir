// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-check-uninitialized))' -verify-diagnostics

// An accumulation into a fragment nothing wrote: its first use is a load.
func.func @accumulate_undefined(%x: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    // expected-note @+1 {{allocated here}}
    %acc = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.parallel (%i) in (64) {
      // expected-warning @+1 {{reads a T.alloc_fragment buffer before anything writes it: its elements start undefined}}
      %a = memref.load %acc[%i] : memref<64xf32, #tile.scope<fragment>>
      %b = memref.load %x[%i] : memref<64xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %acc[%i] : memref<64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Cleared first (a tile op), stored first, or read under a condition (a
// value kept from an earlier trip): no warning.
func.func @written_first(%x: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    %acc = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.fill %acc, %zero : memref<64xf32, #tile.scope<fragment>>, f32
    %v = tile.alloc_var : memref<f32, #tile.scope<var>>
    memref.store %zero, %v[] : memref<f32, #tile.scope<var>>
    %w = memref.load %v[] : memref<f32, #tile.scope<var>>
    %u = tile.alloc_var : memref<f32, #tile.scope<var>>
    scf.for %k = %c0 to %n step %c1 {
      %first = arith.cmpi eq, %k, %c0 : index
      scf.if %first {
        memref.store %w, %u[] : memref<f32, #tile.scope<var>>
      } else {
        %p = memref.load %u[] : memref<f32, #tile.scope<var>>
        memref.store %p, %u[] : memref<f32, #tile.scope<var>>
      }
    }
  }
  return
}

// -----

// A local buffer read in a loop before the loop's store: the first trip
// reads what the registers held.
func.func @loop_reads_before_store(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(1) {
    // expected-note @+1 {{allocated here}}
    %l = tile.alloc_local : memref<4xi32, #tile.scope<local>>
    scf.for %k = %c0 to %n step %c1 {
      // expected-warning @+1 {{reads a T.alloc_local buffer before anything writes it}}
      %a = memref.load %l[%c0] : memref<4xi32, #tile.scope<local>>
      %b = arith.addi %a, %a : i32
      memref.store %b, %l[%c0] : memref<4xi32, #tile.scope<local>>
    }
  }
  return
}

// -----

// The read of a read-modify-write (a 4-bit element's byte) is a write.
func.func @partial_write(%v: i8) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(1) {
    %l = tile.alloc_local : memref<4xi8, #tile.scope<local>>
    %old = memref.load %l[%c0] {tile.partial_write} : memref<4xi8, #tile.scope<local>>
    %new = arith.ori %old, %v : i8
    memref.store %new, %l[%c0] : memref<4xi8, #tile.scope<local>>
    %r = memref.load %l[%c0] : memref<4xi8, #tile.scope<local>>
  }
  return
}

// -----

// Tile operations that read: a reduction into a destination nothing wrote
// (without `clear` it combines with it), a gemm accumulating into an
// uncleared fragment. The same operations with `clear` / `clear_accum`,
// and a reduction whose destination was filled first, do not warn.
func.func @tile_ops_read(%x: memref<64x64xf32>, %a: memref<64x64xf16, #tile.scope<shared>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %s = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.copy %x[%c0, %c0] [64, 64] to %s[%c0, %c0] [64, 64] : memref<64x64xf32> to memref<64x64xf32, #tile.scope<fragment>>
    // expected-note @+1 {{allocated here}}
    %m = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    // expected-warning @+1 {{reads a T.alloc_fragment buffer before anything writes it}}
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1} : memref<64x64xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    %m2 = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.reduce %s -> %m2 {kind = #tile.reduce<max>, dim = 1, clear} : memref<64x64xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    %m3 = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    tile.fill %m3, %zero : memref<64xf32, #tile.scope<fragment>>, f32
    tile.reduce %s -> %m3 {kind = #tile.reduce<sum>, dim = 1} : memref<64x64xf32, #tile.scope<fragment>> -> memref<64xf32, #tile.scope<fragment>>
    // expected-note @+1 {{allocated here}}
    %acc = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-warning @+1 {{reads a T.alloc_fragment buffer before anything writes it}}
    tile.gemm %a, %a, %acc : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    %acc2 = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %a, %acc2 {clear_accum} : memref<64x64xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}
