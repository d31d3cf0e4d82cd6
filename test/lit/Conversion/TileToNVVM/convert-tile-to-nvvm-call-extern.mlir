// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s

// A T.call_extern of a program's device function (T.import_source) passes a
// thread's local buffer as a generic pointer to the element. NVVM's private
// allocas live in the generic address space, so the aligned pointer of the
// alloca is already a generic address: it becomes the pointer as it is. A
// round trip through the local address space (inttoptr to !llvm.ptr<5>, then
// addrspacecast: cvta.local) would apply cvta.local to a generic address,
// which the callee then dereferences out of bounds. The alloca is 16-byte
// aligned: a callee may read an int8[4] buffer as one uint32 or write a
// half[8] one as a uint4 (TileLang's lop3 decoders do).
// CHECK-LABEL: gpu.func @ext_kernel
// CHECK: %[[SLOT:.+]] = memref.alloca() {alignment = 16 : i64} : memref<2xf32>
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[SLOT]]
// CHECK: %[[ADDR:.+]] = arith.addi %[[BASE]], %{{.+}} : index
// CHECK: %[[I64:.+]] = arith.index_castui %[[ADDR]] : index to i64
// CHECK: %[[PTR:.+]] = llvm.inttoptr %[[I64]] : i64 to !llvm.ptr{{$}}
// CHECK-NOT: llvm.addrspacecast
// CHECK: llvm.call @__tl_extern_0(%[[PTR]]) : (!llvm.ptr) -> ()
module attributes {tile.extern_sources = ["__device__ void bump(float *p) { *p += 1.0f; }", "extern \22C\22 __device__ void __tl_extern_0(float *a0) {\0A  (void)bump(a0);\0A}\0A"]} {
  func.func @ext(%arg0: memref<128xf32>) {
    %c1 = arith.constant 1 : index
    tile.kernel blocks(%arg1) in (%c1) threads(128) {
      %0 = tile.thread_id : index
      %1 = tile.alloc_local : memref<2xf32, #tile.scope<local>>
      %2 = memref.load %arg0[%0] : memref<128xf32>
      memref.store %2, %1[%c1] : memref<2xf32, #tile.scope<local>>
      tile.call_extern "__tl_extern_0"(%1) [%c1] {access = array<i64: 3>, index_counts = array<i64: 1>, tile.function = "bump"} : memref<2xf32, #tile.scope<local>>
      %3 = memref.load %1[%c1] : memref<2xf32, #tile.scope<local>>
      memref.store %3, %arg0[%0] : memref<128xf32>
    }
    return
  }
}
