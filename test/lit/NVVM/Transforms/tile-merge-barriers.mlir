// RUN: tile-opt %s -split-input-file -tile-merge-barriers | FileCheck %s

// A row max then a row sum across warps, each through its own scratch
// region: the barrier before the sum's stores (after the max's loads and
// only register work) and the one before the max's stores (after reads of
// other shared bytes) order nothing; the barriers between a region's
// stores and loads stay, and so do the first and the last of the block.
// CHECK-LABEL: gpu.func @two_reductions
// CHECK: gpu.barrier
// CHECK-NEXT: nvgpu.ldmatrix
// CHECK-NEXT: memref.store %{{.*}}, %[[A:.+]][
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NEXT: gpu.shuffle
// CHECK-NEXT: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NEXT: memref.store %{{.*}}, %alloca
// CHECK-NEXT: memref.store %{{.*}}, %[[B:.+]][
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load %[[B]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.return
gpu.module @m {
  gpu.func @two_reductions(%i: index, %x: f32) kernel {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : i32
    %c32 = arith.constant 32 : i32
    %off_k = arith.constant 0 : index
    %off_a = arith.constant 4096 : index
    %off_b = arith.constant 4352 : index
    %k = memref.view %smem[%off_k][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2048xf16, #gpu.address_space<workgroup>>
    %a = memref.view %smem[%off_a][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %b = memref.view %smem[%off_b][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %alloca = memref.alloca() : memref<2xf32>
    gpu.barrier
    %frag = nvgpu.ldmatrix %k[%i] {numTiles = 4 : i32, transpose = false} : memref<2048xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    gpu.barrier
    memref.store %x, %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %m = memref.load %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %s, %ok = gpu.shuffle xor %m, %c1, %c32 : f32
    %e = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%s) : (f32) -> f32
    memref.store %e, %alloca[%c0] : memref<2xf32>
    gpu.barrier
    memref.store %e, %b[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %t = memref.load %b[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    gpu.return
  }
}

// -----

// One scratch region for both: the barrier between the max's loads and
// the sum's stores keeps them apart (a write after a read of the same
// bytes); so does any access the pass does not understand, a global write
// read after the barrier, and a barrier of an unknown op.
// CHECK-LABEL: gpu.func @kept
// CHECK-COUNT-3: gpu.barrier
// CHECK: nvvm.cp.async.wait.group
// CHECK-NEXT: gpu.barrier
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load %arg2
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads
gpu.module @m {
  gpu.func @kept(%i: index, %x: f32, %g: memref<64xf32>) kernel {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %off_a = arith.constant 4096 : index
    %a = memref.view %smem[%off_a][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %x, %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %m = memref.load %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    memref.store %m, %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    nvvm.cp.async.wait.group 0
    gpu.barrier
    %n = memref.load %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    memref.store %n, %g[%i] : memref<64xf32>
    gpu.barrier
    %r = memref.load %g[%i] : memref<64xf32>
    %id = arith.constant 1 : i32
    %cnt = arith.constant 128 : i32
    nvvm.barrier id = %id number_of_threads = %cnt
    nvvm.barrier id = %id number_of_threads = %cnt
    memref.store %r, %a[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Views at run-time offsets from one aligned base compare by their
// constant parts; views from different bases may overlap.
// CHECK-LABEL: gpu.func @bases
// CHECK: memref.load %[[P:.+]][
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[Q:.+]][
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.store %{{.*}}, %[[R:.+]][
gpu.module @m {
  gpu.func @bases(%i: index, %x: f32, %base: index, %other: index) kernel {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %o0 = arith.addi %base, %c0 : index
    %o1 = arith.addi %base, %c256 : index
    %p = memref.view %smem[%base][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %q = memref.view %smem[%o1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    %r = memref.view %smem[%other][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %v = memref.load %p[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    memref.store %v, %q[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    memref.store %v, %r[%i] : memref<64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    gpu.return
  }
}
