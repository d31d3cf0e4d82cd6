// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(tile-legalize-safe-access))'

// A safe value must be a constant of the loaded element type.
func.func @wrong_type(%x: memref<16xf32>, %idx: memref<8xi32>) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    tile.parallel (%i) in (8) {
      %raw = memref.load %idx[%i] : memref<8xi32>
      %j = arith.index_cast %raw : i32 to index
      // expected-error @+1 {{has a safe value 3 : i32 that is not a constant of the element type 'f32'}}
      %v = memref.load %x[%j] {tile.safe_value = 3 : i32} : memref<16xf32>
    }
  }
  return
}
