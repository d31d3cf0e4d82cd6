// RUN: tile-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(tile-finalize-kernel-params))'

// A tensor-map count beyond the kernel's parameters is an error, not an
// out-of-range argument lookup.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error @+1 {{tile.tensormap_args = 4294967296 must be in [0, 3] (the leading pointer arguments that hold tensor maps)}}
    llvm.func @k(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr) attributes {nvvm.kernel, tile.tensormap_args = 4294967296 : i64} {
      llvm.return
    }
  }
}

// -----

// Tensor maps are passed by pointer to a 128-byte grid constant.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-error @+1 {{tile.tensormap_args: argument 0 holds a tensor map and must be an !llvm.ptr, got 'i32'}}
    llvm.func @k(%a: i32) attributes {nvvm.kernel, tile.tensormap_args = 1 : i64} {
      llvm.return
    }
  }
}
