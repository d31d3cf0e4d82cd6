// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80 features=+ptx80},canonicalize,cse)' | FileCheck %s --check-prefix=STORE

// A T.Parallel with `vector = 8` (coalesced_width) gives each thread 8
// consecutive elements of a row: the shared buffer it only reads is read
// with one 8-wide load (8 bytes of i8) and the one it only writes is
// written with one 8-wide store (16 bytes of f16) per group of registers,
// not with 8 scalar accesses each. 64x128 elements over 128 threads: 64
// registers a thread, 8 groups.
// CHECK-LABEL: gpu.func @main_kernel
// CHECK-COUNT-8: vector.load %{{.*}} : memref<8192xi8, #gpu.address_space<workgroup>>, vector<8xi8>
// CHECK-NOT: memref.load %{{.*}} : memref<8192xi8, #gpu.address_space<workgroup>>
// CHECK: gpu.return
// STORE-LABEL: gpu.func @main_kernel
// STORE-COUNT-8: vector.store %{{.*}} : memref<8192xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// STORE-NOT: memref.store %{{.*}} : memref<8192xf16, #gpu.address_space<workgroup>>
// STORE: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 8, (d0 floordiv 8) * 8 + d1 mod 8)>
func.func @main(%Q: memref<64x128xi8>, %W: memref<64x128xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %q = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x128xi8, #tile.scope<shared>>
    %w = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x128xf16, #tile.scope<shared>>
    tile.copy %Q[%c0, %c0] [64, 128] to %q[%c0, %c0] [64, 128] : memref<64x128xi8> to memref<64x128xi8, #tile.scope<shared>>
    tile.barrier
    tile.parallel (%i, %j) in (64, 128) attributes {layout = #tile.layout<#map, threads = 128>, vector = 8 : i64} {
      %b = memref.load %q[%i, %j] : memref<64x128xi8, #tile.scope<shared>>
      %f = arith.sitofp %b : i8 to f16
      memref.store %f, %w[%i, %j] : memref<64x128xf16, #tile.scope<shared>>
    }
    tile.barrier
    tile.copy %w[%c0, %c0] [64, 128] to %W[%c0, %c0] [64, 128] : memref<64x128xf16, #tile.scope<shared>> to memref<64x128xf16>
  }
  return
}

// -----

// A buffer the body both reads and writes keeps its scalar accesses (a
// load hoisted above the group or a store sunk below it could reorder
// them).
// CHECK-LABEL: gpu.func @main_kernel
// CHECK-COUNT-64: memref.load %{{.*}} : memref<8192xf16, #gpu.address_space<workgroup>>
// CHECK: gpu.return
// STORE-LABEL: gpu.func @main_kernel
// STORE-COUNT-64: memref.store %{{.*}} : memref<8192xf16, #gpu.address_space<workgroup>>
// STORE: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 8, (d0 floordiv 8) * 8 + d1 mod 8)>
func.func @main(%W: memref<64x128xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %w = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x128xf16, #tile.scope<shared>>
    tile.copy %W[%c0, %c0] [64, 128] to %w[%c0, %c0] [64, 128] : memref<64x128xf16> to memref<64x128xf16, #tile.scope<shared>>
    tile.barrier
    tile.parallel (%i, %j) in (64, 128) attributes {layout = #tile.layout<#map, threads = 128>, vector = 8 : i64} {
      %v = memref.load %w[%i, %j] : memref<64x128xf16, #tile.scope<shared>>
      %d = arith.addf %v, %v : f16
      memref.store %d, %w[%i, %j] : memref<64x128xf16, #tile.scope<shared>>
    }
    tile.barrier
    tile.copy %w[%c0, %c0] [64, 128] to %W[%c0, %c0] [64, 128] : memref<64x128xf16, #tile.scope<shared>> to memref<64x128xf16>
  }
  return
}

// -----

// Loads from one stage of a staged shared buffer (2 x 64 x 128 bytes, a
// stage is 8 KB, whole 1 KB periods of the 128-byte swizzle; a 3-d access
// stays scalar): the stage's
// offset is added after the XOR, so the swizzled rest does not depend on
// the stage and LLVM can keep it out of a pipelined loop.
// CHECK-LABEL: gpu.func @main_kernel
// (The stage the loads read is a kernel argument here, and nothing fills
// it: only the addresses matter.)
// CHECK: %[[STAGE:.+]] = arith.muli %{{.+}}, %c8192 : index
// CHECK: %[[SW:.+]] = arith.xori %{{.+}}, %{{.+}} : index
// CHECK-NEXT: %[[AT:.+]] = arith.addi %[[STAGE]], %[[SW]] : index
// CHECK-NEXT: memref.load %{{.+}}[%[[AT]]] : memref<16384xi8, #gpu.address_space<workgroup>>
// CHECK: gpu.return
#map = affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 8, (d0 floordiv 8) * 8 + d1 mod 8)>
func.func @main(%W: memref<64x128xf16>, %s: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %q = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<2x64x128xi8, #tile.scope<shared>>
    %w = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<64x128xf16, #tile.scope<shared>>
    tile.parallel (%i, %j) in (64, 128) attributes {layout = #tile.layout<#map, threads = 128>, vector = 8 : i64} {
      %b = memref.load %q[%s, %i, %j] : memref<2x64x128xi8, #tile.scope<shared>>
      %f = arith.sitofp %b : i8 to f16
      memref.store %f, %w[%i, %j] : memref<64x128xf16, #tile.scope<shared>>
    }
    tile.barrier
    tile.copy %w[%c0, %c0] [64, 128] to %W[%c0, %c0] [64, 128] : memref<64x128xf16, #tile.scope<shared>> to memref<64x128xf16>
  }
  return
}
