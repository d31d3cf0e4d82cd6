// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference))' -verify-diagnostics

// Two gemms that want different accumulator layouts for the same buffer:
// nothing fits both, and the error names the buffer and both ops (and,
// where the two layouts read the same in words, both placements).
func.func @accumulator_conflict(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-note @+1 {{layout required here}}
    tile.gemm %a, %b, %c {policy = #tile.policy<full_row>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+2 {{needs fragment}}
    // expected-note @+1 {{the two layouts place elements differently}}
    tile.gemm %a, %b, %c {policy = #tile.policy<full_col>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A user layout that is not a sum of digit terms cannot be used.
func.func @non_digit_layout(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{has a layout that is not a digit structure: layout term is not of the form ((d floordiv a) mod b) * c}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> ((i mod 4) floordiv 2, 0)>, threads = 32>} : memref<32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Digits whose thread strides overlap do not give every thread one index.
func.func @overlapping_digits(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{has a layout that is not a digit structure: thread digits do not cover [0, 32) exactly once}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (i floordiv 2 + i floordiv 4, 0)>, threads = 32>} : memref<32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @nested_parallel(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    tile.parallel (%i) in (4) {
      // expected-error @+1 {{nested T.Parallel loops are not supported on GPU targets}}
      tile.parallel (%j) in (4) {
      }
    }
  }
  return
}

// -----

// The sparse tensor cores read the metadata from registers filled from
// shared memory: E in a fragment is refused.
func.func @gemm_sp_fragment_metadata(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %e = tile.alloc_fragment : memref<64x4xi16, #tile.scope<fragment>>
    %b = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op on GPU targets A_sparse, E and B must be shared buffers (T.alloc_shared)}}
    tile.gemm_sp %a, %e, %b, %c : memref<64x32xf16, #tile.scope<shared>>, memref<64x4xi16, #tile.scope<fragment>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// mma.sp and wgmma.sp accumulate 16-bit inputs in float32 here.
func.func @gemm_sp_f16_accumulator(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf16, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op on GPU targets the accumulator must be float32}}
    tile.gemm_sp %a, %e, %b, %c : memref<64x32xf16, #tile.scope<shared>>, memref<64x4xi16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf16, #tile.scope<fragment>>
  }
  return
}

// -----

// K = 16 is half an instruction step of the sparse tensor cores.
func.func @gemm_sp_short_k(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x8xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<64x1xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op needs the sparse tensor cores (sm_80 or newer) and K a multiple of 32, got K = 16}}
    tile.gemm_sp %a, %e, %b, %c : memref<64x8xf16, #tile.scope<shared>>, memref<64x1xi16, #tile.scope<shared>>, memref<16x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// An accumulation over a loop variable the layout spreads over threads:
// each thread would keep its own partial sum. Refused, naming the variable.
func.func @cross_thread_accumulation(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %x = tile.alloc_fragment : memref<8x16xf32, #tile.scope<fragment>>
    %part = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 16) {
      %v = memref.load %x[%i, %j] : memref<8x16xf32, #tile.scope<fragment>>
      %s = memref.load %part[%i] : memref<8xf32, #tile.scope<fragment>>
      %t = arith.addf %s, %v : f32
      // expected-error @+1 {{writes a fragment element from iterations on different threads: the index leaves out (or divides) the T.Parallel's variable 2 (of 2), which its layout spreads over threads}}
      memref.store %t, %part[%i] : memref<8xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// The same store of a value that does not depend on the dropped variable is
// fine (every thread writes the same value).
func.func @cross_thread_same_value(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %part = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 16) {
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      memref.store %f, %part[%i] : memref<8xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// The same through a divided index (j // 16) when the loop's layout puts
// 4 consecutive j on a thread: the 16 j of one element span 4 threads.
func.func @cross_thread_divided(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %x = tile.alloc_fragment : memref<8x64xf32, #tile.scope<fragment>>
    %part = tile.alloc_fragment : memref<8x4xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 64) attributes {vector = 4} {
      %c16 = arith.constant 16 : index
      %q = arith.floordivsi %j, %c16 : index
      %v = memref.load %x[%i, %j] : memref<8x64xf32, #tile.scope<fragment>>
      %s = memref.load %part[%i, %q] : memref<8x4xf32, #tile.scope<fragment>>
      %t = arith.addf %s, %v : f32
      // expected-error @+1 {{writes a fragment element from iterations on different threads: the index leaves out (or divides) the T.Parallel's variable 2 (of 2), which its layout spreads over threads}}
      memref.store %t, %part[%i, %q] : memref<8x4xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// 15 threads cannot split a 64x64 tile (15 has no factor of two): every
// thread would hold all 4096 elements, and the lowering would unroll code
// for each (megabytes of IR, then minutes in LLVM). An error instead.
func.func @too_many_registers(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(15) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.alloc_fragment' op its layout gives each of the 15 threads 4096 elements, more than the 1024 a thread may hold; use more threads (whole warps) or a smaller tile}}
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Three warps fit no mma grid of a 128x128 tile, so the gemm runs on the
// CUDA cores: 512 accumulator registers per thread times K = 64 would be
// 32768 unrolled multiply-adds per thread (minutes in LLVM). An error that
// says what to change instead.
func.func @simt_gemm_too_big(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(96) {
    %a = tile.alloc_shared : memref<128x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op runs without tensor cores here (its 128x128 tile, element types and 96 threads fit no mma/wgmma/mfma grid), and each thread would do 32768 multiply-adds of it (more than 4096)}}
    tile.gemm %a, %b, %c : memref<128x64xf16, #tile.scope<shared>>, memref<64x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A layout on 48 of 64 threads: the other threads cannot all be replicas.
func.func @threads_not_dividing(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    // expected-error @+1 {{as a function of the indices: the layout places elements on 48 threads, which does not divide the block's 64}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (i floordiv 8, i mod 8)>, threads = 64>} : memref<384xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A layout whose dimensions interact (the thread wraps around i * 16 + 2 j).
func.func @mixed_dimensions(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{do not add up (the layout mixes dimensions)}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> ((i * 16 + j * 2) mod 32, 0)>, threads = 32>} : memref<2x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A packed 4-bit store (the frontend's tile.packed_store: variable 2 steps
// the nibble, 2 a byte) from a loop whose layout gives each thread one
// element of a row: the two halves of a byte are written by two threads.
func.func @packed_store_split_bytes(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %s = tile.alloc_shared : memref<4x16xi8, #tile.scope<shared>>
    %x = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> (j, i)>, threads = 32>} : memref<4x32xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (4, 32) {
      %v = memref.load %x[%i, %j] : memref<4x32xf32, #tile.scope<fragment>>
      %c2 = arith.constant 2 : index
      %b = arith.divui %j, %c2 : index
      %byte = arith.constant 1 : i8
      // expected-error @+1 {{stores packed 4-bit elements (2 a byte) from a T.Parallel whose layout puts iterations (0, 0) and (0, 1), which write the halves of one byte, on threads 0 and 1: they race}}
      memref.store %byte, %s[%i, %b] {tile.packed_store = array<i64: 1, 2>} : memref<4x16xi8, #tile.scope<shared>>
    }
  }
  return
}

// -----

// A loop_layout over another thread count than the loop runs on.
func.func @loop_layout_threads(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(64) {
    // expected-error @+1 {{loop_layout is over 32 threads, the loop runs on 64}}
    tile.parallel (%i, %j) in (4, 32) attributes {loop_layout = #tile.layout<affine_map<(i, j) -> (j, i)>, threads = 32>} {
    }
  }
  return
}
