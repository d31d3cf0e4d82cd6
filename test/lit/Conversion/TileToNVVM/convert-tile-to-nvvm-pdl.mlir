// RUN: tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_90a},canonicalize,cse)' | FileCheck %s
// RUN: not tile-opt %s --pass-pipeline='builtin.module(convert-tile-to-nvvm{chip=sm_80})' 2>&1 | FileCheck %s --check-prefix=SM80

// Programmatic dependent launch: griddepcontrol on sm_90; the kernel that
// waits is launched with programmatic stream serialization. TileLang
// refuses it before sm_90, and so do we.
// CHECK-LABEL: func.func @pdl
// CHECK: gpu.launch_func @pdl_kernel::@pdl_kernel
// CHECK-SAME: tile.launch = {pdl}
// CHECK-LABEL: gpu.func @pdl_kernel
// CHECK: nvvm.griddepcontrol wait
// CHECK: nvvm.griddepcontrol launch_dependents
// SM80: error: 'tile.pdl_wait' op is programmatic dependent launch (T.pdl_trigger / T.pdl_sync; TileLang refuses it there too), which needs sm_90 or newer; the kernel is compiled for sm_80
func.func @pdl() {
  %c4 = arith.constant 4 : index
  tile.kernel blocks(%bx) in (%c4) threads(128) {
    tile.pdl_wait
    tile.pdl_trigger
  }
  return
}
