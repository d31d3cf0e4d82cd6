// RUN: tile-opt %s --pass-pipeline='builtin.module(gpu.module(tile-finalize-kernel-params))' | FileCheck %s

// The dynamic shared memory that convert-gpu-to-nvvm leaves (a zero-size
// internal global, one byte of static shared memory in PTX) becomes an
// external declaration (`.extern .shared ... []`); other shared globals
// keep their linkage.
// CHECK: gpu.module @m
// CHECK-DAG: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-DAG: llvm.mlir.global internal @static_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>

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
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.mlir.global internal @static_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x i8>
    llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) attributes {nvvm.kernel, tile.tensormap_args = 2 : i64} {
      llvm.return
    }
    llvm.func @other(%a: !llvm.ptr) attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
