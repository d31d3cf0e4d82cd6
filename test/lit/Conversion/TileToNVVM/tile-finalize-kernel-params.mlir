// RUN: tile-opt %s --pass-pipeline='builtin.module(gpu.module(tile-finalize-kernel-params))' | FileCheck %s

// The first `tile.tensormap_args` parameters of a lowered kernel become
// 128-byte by-value grid constants (how CUtensorMaps are passed); the
// marker goes away; other functions are left alone.
// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg1: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg2: !llvm.ptr)
// CHECK-NOT: tile.tensormap_args
// CHECK-LABEL: llvm.func @other(%arg0: !llvm.ptr)
module attributes {gpu.container_module} {
  gpu.module @m {
    llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) attributes {nvvm.kernel, tile.tensormap_args = 2 : i64} {
      llvm.return
    }
    llvm.func @other(%a: !llvm.ptr) attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
