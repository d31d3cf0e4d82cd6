// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx950})' | FileCheck %s --check-prefix=GFX950
// RUN: not tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-rocdl{chip=gfx90a})' 2>&1 | FileCheck %s --check-prefix=GFX90A

// The LDS budget is the chip's: 96 KB of shared buffers (plus 1 KB to align
// their swizzle) fit the 160 KB of a gfx950 workgroup, but not the 64 KB of
// gfx90a (nor gfx942: convert-tile-to-rocdl-error.mlir). The buffers are
// consecutive in the dynamic LDS.
// GFX950: gpu.launch_func @lds_kernel::@lds_kernel {{.+}} dynamic_shared_memory_size %c99328_i32
// GFX950: gpu.module @lds_kernel [#rocdl.target<O = 3, chip = "gfx950">]
// GFX950: memref.view %{{.+}}[%[[BASE:.+]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<24576xf16, #gpu.address_space<workgroup>>
// GFX950: %[[SECOND:.+]] = arith.addi %[[BASE]], %c49152 : index
// GFX950: memref.view %{{.+}}[%[[SECOND]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<24576xf16, #gpu.address_space<workgroup>>
// GFX90A: error: 'tile.kernel' op needs 99328 bytes of shared memory (98304 for its shared buffers, 0 of scratch, 1024 to align swizzled buffers), more than the 64 KB a block can have on gfx90a
func.func @lds(%X: memref<192x128xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(256) {
    %a = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x128xf16, #tile.scope<shared>>
    %b = tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<192x128xf16, #tile.scope<shared>>
    tile.copy %X[%c0, %c0] [192, 128] to %a[%c0, %c0] [192, 128] : memref<192x128xf16> to memref<192x128xf16, #tile.scope<shared>>
    tile.copy %a[%c0, %c0] [192, 128] to %b[%c0, %c0] [192, 128] : memref<192x128xf16, #tile.scope<shared>> to memref<192x128xf16, #tile.scope<shared>>
    tile.copy %b[%c0, %c0] [192, 128] to %X[%c0, %c0] [192, 128] : memref<192x128xf16, #tile.scope<shared>> to memref<192x128xf16>
  }
  return
}
