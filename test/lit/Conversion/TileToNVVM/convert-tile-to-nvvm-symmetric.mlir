// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a features=+ptx81},canonicalize,cse)' | FileCheck %s
// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx942},canonicalize,cse)' | FileCheck %s --check-prefix=AMD

// On the GPU the peer view (after a device assert that the rank indexes
// the peer table) is the same reinterpretation of the kernel
// argument; the block's threads copy into it. tile.signal is a barrier and
// thread 0's system fence and release add (inline PTX: LLVM's NVPTX atomics
// stay at GPU scope); tile.wait is thread 0's loop of acquire loads at
// system scope on %globaltimer, __assertfail on a timeout, then a barrier
// and, on sm_90, a proxy fence (TMA may read what the flag released).
// CHECK-LABEL: gpu.func @push_kernel
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[RANKS:.+]] = memref.dim %arg2, %c0
// CHECK: %[[IN:.+]] = arith.cmpi uge, %arg6, %[[RANKS]]
// CHECK: scf.if %[[IN]] {
// CHECK:   llvm.call @__assertfail
// CHECK: %[[HERE:.+]] = memref.extract_aligned_pointer_as_index %arg1
// CHECK: memref.load %arg2[%arg6] : memref<?xi64>
// CHECK: %[[VIEW:.+]] = memref.reinterpret_cast %arg1 to offset: [%{{.+}}], sizes: [4, 256], strides: [256, 1]
// CHECK: vector.store %{{.+}}, %[[VIEW]][%arg5, %{{.+}}]
// CHECK: gpu.barrier
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[TID]], %c0 : index
// CHECK: scf.if %[[FIRST]] {
// CHECK:   memref.extract_strided_metadata
// CHECK:   llvm.inline_asm has_side_effects asm_dialect = att "fence.acq_rel.sys;\0A\09red.release.sys.global.add.u32 [$0], $1;", "l,r,~{memory}"
// CHECK: scf.if %[[FIRST]] {
// CHECK:   nvvm.read.ptx.sreg.globaltimer
// CHECK:   scf.while
// CHECK:     llvm.inline_asm has_side_effects asm_dialect = att "ld.acquire.sys.global.b32 $0, [$1];", "=r,l,~{memory}"
// CHECK:     nvvm.read.ptx.sreg.globaltimer
// CHECK:   llvm.call @__assertfail
// CHECK: gpu.barrier
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "fence.proxy.async.global;", "~{memory}"
// CHECK-NEXT: gpu.return

// On AMD the same structure with LLVM's atomics, whose default scope is the
// system: a release add after an acq_rel fence, acquire loads, the
// s_memrealtime clock (100 MHz: ticks times 10), a trap on a timeout.
// AMD-LABEL: gpu.func @push_kernel
// AMD: llvm.intr.trap
// AMD: memref.reinterpret_cast
// AMD: llvm.fence acq_rel
// AMD: llvm.atomicrmw add %{{.+}}, %{{.+}} release : !llvm.ptr<1>, i32
// AMD: llvm.call_intrinsic "llvm.amdgcn.s.memrealtime"() : () -> i64
// AMD: scf.while
// AMD:   llvm.load %{{.+}} atomic acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// AMD: llvm.intr.trap
func.func @push(%x: memref<256xf16>, %buf: memref<4x256xf16> {tile.symmetric}, %bp: memref<?xi64>,
                %f: memref<4xi32> {tile.symmetric}, %fp: memref<?xi64>, %rank: index, %peer: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    %p = tile.peer %buf, %bp[%peer] : memref<4x256xf16>, memref<?xi64> -> memref<4x256xf16, strided<[256, 1], offset: ?>>
    tile.copy %x[%c0] [256] to %p[%rank, %c0] [1, 256] : memref<256xf16> to memref<4x256xf16, strided<[256, 1], offset: ?>>
    %pf = tile.peer %f, %fp[%peer] : memref<4xi32>, memref<?xi64> -> memref<4xi32, strided<[1], offset: ?>>
    tile.signal add %one -> %pf[%rank] : i32 -> memref<4xi32, strided<[1], offset: ?>>
    tile.wait ge %one -> %f[%peer] {timeout_ms = 5000} : i32 -> memref<4xi32>
  }
  return
}
