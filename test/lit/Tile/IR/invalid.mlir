// RUN: tile-opt %s -split-input-file -verify-diagnostics

// A kernel needs 1 to 3 grid dimensions.
func.func @kernel_grid_rank(%n: index) {
  // expected-error @+1 {{'tile.kernel' op expects 1 to 3 grid dimensions, got 4}}
  tile.kernel blocks(%a, %b, %c, %d) in (%n, %n, %n, %n) threads(128) {
  }
  return
}

// -----

// The custom syntax pairs each block index with a grid extent.
func.func @kernel_index_count(%n: index) {
  // expected-error @+1 {{expected one block index per grid extent, got 2 indices and 1 extents}}
  tile.kernel blocks(%a, %b) in (%n) threads(128) {
  }
  return
}

// -----

// The generic form can disagree: one block argument per grid dimension.
func.func @kernel_block_args(%n: index) {
  // expected-error @+1 {{'tile.kernel' op expects 1 block indices of type index (one per grid dimension), got 2 block arguments}}
  "tile.kernel"(%n) <{threads = array<i64: 128>}> ({
  ^bb0(%a: index, %b: index):
    "tile.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @kernel_thread_rank(%n: index) {
  // expected-error @+1 {{'tile.kernel' op expects 1 to 3 thread extents, got 4}}
  tile.kernel blocks(%a) in (%n) threads(2, 2, 2, 2) {
  }
  return
}

// -----

func.func @kernel_thread_positive(%n: index) {
  // expected-error @+1 {{'tile.kernel' op thread extents must be in [1, 1024], got 0}}
  tile.kernel blocks(%a) in (%n) threads(0) {
  }
  return
}

// -----

// Each thread extent is checked before their product, which must not wrap.
func.func @kernel_thread_huge(%n: index) {
  // expected-error @+1 {{'tile.kernel' op thread extents must be in [1, 1024], got 4294967296}}
  tile.kernel blocks(%a) in (%n) threads(4294967296, 4294967296) {
  }
  return
}

// -----

func.func @kernel_thread_limit(%n: index) {
  // expected-error @+1 {{'tile.kernel' op expects at most 1024 threads per block, got 2048}}
  tile.kernel blocks(%a) in (%n) threads(64, 32) {
  }
  return
}

// -----

func.func @kernel_nested(%n: index) {
  tile.kernel blocks(%a) in (%n) threads(128) {
    // expected-error @+1 {{'tile.kernel' op cannot be nested in another tile.kernel}}
    tile.kernel blocks(%b) in (%n) threads(128) {
    }
  }
  return
}

// -----

// Tile ops only make sense inside a kernel.
func.func @outside_kernel() {
  // expected-error @+1 {{'tile.alloc_shared' op failed to verify that is nested in a tile.kernel}}
  %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
  return
}

// -----

// Buffers must be in global memory or a tile scope.
func.func @foreign_memory_space(%a: memref<16xf32, 3>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op operand #0 must be memref of integer, float or index values in global memory or a #tile.scope memory space, but got 'memref<16xf32, 3>'}}
    tile.copy %a[%c0] [16] to %s[%c0] [16] : memref<16xf32, 3> to memref<16xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @alloc_wrong_scope(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_shared' op result must be in #tile.scope<shared> memory, got 'memref<16xf32, #tile.scope<fragment>>'}}
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @alloc_dynamic(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_fragment' op result must have a static shape, got 'memref<?xf32, #tile.scope<fragment>>'}}
    %s = tile.alloc_fragment : memref<?xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @alloc_strided(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_shared' op result must have the identity layout}}
    %s = tile.alloc_shared : memref<16x16xf32, strided<[32, 1]>, #tile.scope<shared>>
  }
  return
}

// -----

func.func @alloc_var_rank(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_var' op result must be a rank-0 memref (a scalar), got rank 1}}
    %v = tile.alloc_var : memref<1xf32, #tile.scope<var>>
  }
  return
}

// -----

func.func @alloc_local_rank(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_local' op result must have rank at least 1; use tile.alloc_var for scalars}}
    %v = tile.alloc_local : memref<f32, #tile.scope<local>>
  }
  return
}

// -----

// A layout must cover the fragment's rank.
func.func @layout_rank(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.alloc_fragment' op layout has 1 dimension(s) but the fragment has rank 2}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>} : memref<4x4xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Every element must go to a thread of the block.
func.func @layout_thread_range(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.alloc_fragment' op layout maps element (32) to thread 32, outside [0, 32)}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>} : memref<64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @layout_negative_register(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.alloc_fragment' op layout maps element (1) to negative register -1}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (0, 0 - i)>, threads = 32>} : memref<4xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @layout_divides_by_zero(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32)  {
    // expected-error @+1 {{'tile.alloc_fragment' op layout divides by zero at element (0)}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i)[s] -> (i mod s, 0)>, threads = 32, replicate = 2>} : memref<4xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @layout_threads_mismatch(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_fragment' op layout is for 32 threads but the kernel has 128}}
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>} : memref<32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// expected-error @+1 {{layout map must have 2 results (thread, register), got 1}}
func.func @layout_results() attributes {l = #tile.layout<affine_map<(i) -> (i)>, threads = 32>} {
  return
}

// -----

// expected-error @+1 {{layout map must have at least one dimension}}
func.func @layout_no_dims() attributes {l = #tile.layout<affine_map<() -> (0, 0)>, threads = 32>} {
  return
}

// -----

// expected-error @+1 {{layout threads must be positive, got 0}}
func.func @layout_threads() attributes {l = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 0>} {
  return
}

// -----

// expected-error @+1 {{layout replicate must be positive, got 0}}
func.func @layout_replicate() attributes {l = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 32, replicate = 0>} {
  return
}

// -----

// A replicated layout takes the replica index as its symbol.
// expected-error @+1 {{layout map must have 1 symbol(s) (the replica index) with replicate = 2, got 0}}
func.func @layout_symbols() attributes {l = #tile.layout<affine_map<(i) -> (i, 0)>, threads = 32, replicate = 2>} {
  return
}

// -----

// expected-error @+1 {{swizzle span must be 0, 32, 64 or 128 bytes, got 16}}
func.func @swizzle_span() attributes {s = #tile.swizzle<16>} {
  return
}

// -----

// expected-error @+1 {{a swizzled buffer cannot also be padded (swizzle 128 bytes, pad 8)}}
func.func @swizzle_and_pad() attributes {s = #tile.swizzle<128, pad = 8>} {
  return
}

// -----

func.func @copy_offsets(%a: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op expects 2 source offsets (the source rank), got 1}}
    tile.copy %a[%c0] [16, 16] to %s[%c0, %c0] [16, 16] : memref<64x64xf16> to memref<16x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @copy_sizes(%a: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op expects 2 destination sizes (the destination rank), got 1}}
    tile.copy %a[%c0, %c0] [16, 16] to %s[%c0, %c0] [256] : memref<64x64xf16> to memref<16x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @copy_positive_sizes(%a: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op source sizes must be positive, got [0x16]}}
    tile.copy %a[%c0, %c0] [0, 16] to %s[%c0, %c0] [16, 16] : memref<64x64xf16> to memref<16x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

// A region larger than a tile buffer is a bug (global tensors may be ragged).
func.func @copy_exceeds_tile(%a: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op destination region 32x16 exceeds the shared buffer of shape 16x16}}
    tile.copy %a[%c0, %c0] [32, 16] to %s[%c0, %c0] [32, 16] : memref<64x64xf16> to memref<16x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @copy_shape_mismatch(%a: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op source region 16x8 and destination region 16x16 have different shapes (unit dimensions dropped)}}
    tile.copy %a[%c0, %c0] [16, 8] to %s[%c0, %c0] [16, 16] : memref<64x64xf16> to memref<16x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

// A row of a 2-D tensor does not fill a column tile of the same rank: 1x8
// and 8x1 agree only once unit dimensions are dropped, and the 1 of the 8x1
// tile is a dimension of the tile, not a pick of one index (the frontend
// once emitted exactly this for `T.copy(X[0, 2], x)` with x of shape (8, 1)).
func.func @copy_row_into_column(%x: memref<16x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<8x1xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.copy' op source region 1x8 and destination region 8x1 have different shapes: dimension 1 of the destination has extent 1 in a buffer of extent 1 (a dimension of the tile, which regions of one rank must match)}}
    tile.copy %x[%c0, %c2] [1, 8] to %f[%c0, %c0] [8, 1] : memref<16x16xf32> to memref<8x1xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A logical element type must fit the storage: ui8 over i8, i1 over i8.
func.func @copy_logical_element(%x: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<16xi16, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.copy' op dst_element 'ui8' cannot be the logical type of elements stored as 'i16' (expected an unsigned integer of the same width, or i1 over i8)}}
    tile.copy %x[%c0] [16] to %f[%c0] [16] {dst_element = ui8} : memref<16xf32> to memref<16xi16, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @fill_type(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    %v = arith.constant 0.0 : f16
    // expected-error @+1 {{'tile.fill' op fill value type 'f16' does not match the element type 'f32' of the buffer}}
    tile.fill %f, %v : memref<16xf32, #tile.scope<fragment>>, f16
  }
  return
}

// -----

func.func @atomic_scope(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    %v = arith.constant 1.0 : f32
    // expected-error @+1 {{'tile.atomic_add' op destination must be in global or shared memory, got fragment}}
    tile.atomic_add %v -> %f[%c0] : f32 -> memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @atomic_offsets(%out: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %v = arith.constant 1.0 : f32
    // expected-error @+1 {{'tile.atomic_add' op expects 1 offsets (the destination rank), got 2}}
    tile.atomic_add %v -> %out[%c0, %c0] : f32 -> memref<16xf32>
  }
  return
}

// -----

func.func @atomic_dynamic_value(%out: memref<16xf32>, %in: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.atomic_add' op value tile must have a static shape, got 'memref<?xf32>'}}
    tile.atomic_add %in -> %out[%c0] : memref<?xf32> -> memref<16xf32>
  }
  return
}

// -----

func.func @atomic_rank(%out: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<4x4xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.atomic_add' op value tile of rank 2 cannot be added into a destination of rank 1}}
    tile.atomic_add %f -> %out[%c0] : memref<4x4xf32, #tile.scope<fragment>> -> memref<16xf32>
  }
  return
}

// -----

func.func @atomic_value_kind(%out: memref<16xf32>, %n: index, %v: vector<4xf32>) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.atomic_add' op value must be a scalar or a tile buffer, got 'vector<4xf32>'}}
    tile.atomic_add %v -> %out[%c0] : vector<4xf32> -> memref<16xf32>
  }
  return
}

// -----

func.func @atomic_value_type(%out: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %v = arith.constant 1.0 : f16
    // expected-error @+1 {{'tile.atomic_add' op value type 'f16' does not match the destination element type 'f32'}}
    tile.atomic_add %v -> %out[%c0] : f16 -> memref<16xf32>
  }
  return
}

// -----

func.func @gemm_rank(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<2x16x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op operand A must be a 2-D tile, got rank 3}}
    tile.gemm %a, %b, %c : memref<2x16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_accumulator_scope(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_shared : memref<16x16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.gemm' op accumulator C must be a fragment, got shared}}
    tile.gemm %a, %a, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @gemm_operand_scope(%g: memref<16x16xf16>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %b = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op operand A must be in shared memory or a fragment, got global}}
    tile.gemm %g, %b, %c : memref<16x16xf16>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_k_mismatch(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op A is 64x32 (MxK) and B is 64x64 (KxN): the K dimensions 32 and 64 differ}}
    tile.gemm %a, %b, %c : memref<64x32xf16, #tile.scope<shared>>, memref<64x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// With transpose_b, B is NxK.
func.func @gemm_c_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op C must be 64x128 (MxN), got 64x64}}
    tile.gemm %a, %b, %c {transpose_b} : memref<64x32xf16, #tile.scope<shared>>, memref<128x32xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_types(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<16x16xbf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op unsupported element types: A 'f16', B 'bf16', C 'f32' (supported: f16 -> f16/f32, bf16 -> f32, f32 -> f32, f64 -> f64, i8 -> i32, f8E4M3FN/f8E5M2 -> f16/f32)}}
    tile.gemm %a, %b, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xbf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_k_pack(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op k_pack must be positive, got 0}}
    tile.gemm %a, %a, %c {k_pack = 0} : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_a_type(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf32, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xf32, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op sparse A must be f16 or bf16, got 'f32'}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xf32, #tile.scope<shared>>, memref<16x2xi16, #tile.scope<shared>>, memref<32x16xf32, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_b_type(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xbf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op B element type 'bf16' must match A's 'f16'}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x2xi16, #tile.scope<shared>>, memref<32x16xbf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_acc_type(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xbf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xbf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf16, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op unsupported accumulator type 'f16' for 'bf16' inputs}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xbf16, #tile.scope<shared>>, memref<16x2xi16, #tile.scope<shared>>, memref<32x16xbf16, #tile.scope<shared>> -> memref<16x16xf16, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_meta_type(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op metadata E must have i8, i16 or i32 elements, got 'f16'}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x2xf16, #tile.scope<shared>>, memref<32x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_a_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x32xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op sparse A must be MxK/2 = 16x16 for B with K = 32, got 16x32}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x32xf16, #tile.scope<shared>>, memref<16x2xi16, #tile.scope<shared>>, memref<32x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_meta_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x4xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op metadata E must be MxK/16 = 16x2 for 16-bit metadata, got 16x4}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x4xi16, #tile.scope<shared>>, memref<32x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_sp_c_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %e = tile.alloc_shared : memref<16x2xi16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x32xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm_sp' op C must be 16x16 (MxN), got 16x32}}
    tile.gemm_sp %a, %e, %b, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x2xi16, #tile.scope<shared>>, memref<32x16xf16, #tile.scope<shared>> -> memref<16x32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @reduce_global(%g: memref<16x16xf32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %m = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op source must be a fragment, shared or local buffer, got global}}
    tile.reduce %g -> %m {kind = #tile.reduce<sum>, dim = 1} : memref<16x16xf32> -> memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @reduce_dim(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op reduce dim 2 is out of range for a rank-2 source}}
    tile.reduce %s -> %m {kind = #tile.reduce<sum>, dim = 2} : memref<16x16xf32, #tile.scope<fragment>> -> memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @reduce_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<64x16xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op destination shape must be 64 (source shape with dim 1 removed) or 64x1, got 16}}
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1} : memref<64x16xf32, #tile.scope<fragment>> -> memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @cumsum_dim(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cumsum' op cumsum dim 1 is out of range for a rank-1 source}}
    tile.cumsum %s -> %s {dim = 1} : memref<16xf32, #tile.scope<shared>> -> memref<16xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cumsum_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    %t = tile.alloc_shared : memref<8xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cumsum' op source shape 16 and destination shape 8 differ}}
    tile.cumsum %s -> %t {dim = 0} : memref<16xf32, #tile.scope<shared>> -> memref<8xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @parallel_extents(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op extents must be positive, got 0}}
    tile.parallel (%i) in (0) {
    }
  }
  return
}

// -----

// A loop's vector width (elements per thread in its invented layout) must be
// a power of two.
func.func @parallel_vector(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op expects `vector` to be a positive power of two, got 6}}
    tile.parallel (%i) in (64) attributes {vector = 6} {
    }
  }
  return
}

// -----

func.func @parallel_no_extent(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op expects at least one extent}}
    "tile.parallel"() <{extents = array<i64>}> ({
      "tile.yield"() : () -> ()
    }) : () -> ()
  }
  return
}

// -----

func.func @parallel_ivs(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op expects 2 induction variables of type index, got 1 block arguments}}
    "tile.parallel"() <{extents = array<i64: 4, 4>}> ({
    ^bb0(%i: index):
      "tile.yield"() : () -> ()
    }) : () -> ()
  }
  return
}

// -----

func.func @parallel_parse(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{expected one induction variable per extent, got 1 variables and 2 extents}}
    tile.parallel (%i) in (4, 4) {
    }
  }
  return
}

// -----

func.func @pipelined_stages(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.pipelined' op num_stages must be in [0, 32], got -1}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = -1 {
    }
  }
  return
}

// -----

// Stage counts are bounded: each stage is a copy of the loop's buffers.
func.func @pipelined_stages_huge(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.pipelined' op num_stages must be in [0, 32], got 65536}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 65536 {
    }
  }
  return
}

// -----

func.func @pipelined_iv(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.pipelined' op expects one induction variable of type index}}
    "tile.pipelined"(%c0, %n, %c1) <{num_stages = 2 : i64}> ({
    ^bb0(%k: i32):
      "tile.yield"() : () -> ()
    }) : (index, index, index) -> ()
  }
  return
}

// -----

// Index arithmetic is not a statement: this body has 2 statements.
func.func @pipelined_stage_length(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    %t = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op stage has 1 entries but the loop body has 2 statements (ops with memory effects)}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 stage = [0] {
      %off = arith.muli %k, %c1 : index
      tile.copy %a[%off] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
      tile.copy %s[%c0] [16] to %t[%c0] [16] : memref<16xf32, #tile.scope<shared>> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @pipelined_order_length(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op order has 2 entries but the loop body has 1 statements (ops with memory effects)}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 order = [0, 1] {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @pipelined_stage_range(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op stage entries must be in [0, 2], got 3}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 stage = [3] {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @pipelined_order_permutation(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op order must be a permutation of 0..1}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 order = [0, 0] {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @pipelined_group_kind(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.pipelined' op group entries must be arrays of statement indices}}
    "tile.pipelined"(%c0, %n, %c1) <{num_stages = 2 : i64, group = [1 : i64]}> ({
    ^bb0(%k: index):
      "tile.yield"() : () -> ()
    }) : (index, index, index) -> ()
  }
  return
}

// -----

func.func @pipelined_group_range(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op group refers to statement 5 but the loop body has 1 statements}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 group = [[5]] {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @pipelined_group_overlap(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.pipelined' op statement 0 appears in more than one group}}
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 2 group = [[0], [0]] {
      tile.copy %a[%k] [16] to %s[%c0] [16] : memref<?xf32> to memref<16xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

func.func @annotate_fragment_kind(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.annotate_layout' op a fragment takes a #tile.layout, got #tile.swizzle<128>}}
    tile.annotate_layout %f (#tile.swizzle<128>) : memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @annotate_fragment_threads(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.annotate_layout' op layout is for 32 threads but the kernel has 128}}
    tile.annotate_layout %f (#tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>) : memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @annotate_fragment_shape(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %f = tile.alloc_fragment : memref<16x2xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.annotate_layout' op layout has 1 dimension(s) but the fragment has rank 2}}
    tile.annotate_layout %f (#tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>) : memref<16x2xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @annotate_shared_kind(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.annotate_layout' op a shared buffer takes a #tile.swizzle, got #tile.layout}}
    tile.annotate_layout %s (#tile.layout<affine_map<(i) -> (i, 0)>, threads = 32>) : memref<16xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @annotate_global(%g: memref<16xf32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.annotate_layout' op applies to fragments and shared buffers, got a global buffer}}
    tile.annotate_layout %g (#tile.swizzle<128>) : memref<16xf32>
  }
  return
}

// -----

func.func @swizzle_panel(%n: index) {
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(128) {
    // expected-error @+1 {{'tile.use_swizzle' op panel_size must be positive, got 0}}
    tile.use_swizzle 0
  }
  return
}

// -----

func.func @swizzle_grid(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.use_swizzle' op needs a kernel grid of at least 2 dimensions, got 1}}
    tile.use_swizzle 4
  }
  return
}

// -----

func.func @print_kind(%v: vector<4xf32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.print' op takes a scalar or a tile buffer, got 'vector<4xf32>'}}
    tile.print %v : vector<4xf32>
  }
  return
}

// -----

// A failing assert reports its message: it may not be empty.
func.func @assert_empty_message(%ok: i1, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.device_assert' op needs a message: it is what a failing kernel reports}}
    tile.device_assert %ok, ""
  }
  return
}

// -----

// The message becomes a C string.
func.func @assert_nul(%ok: i1, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.device_assert' op message must not contain NUL characters (it becomes a C string), got one at offset 3}}
    tile.device_assert %ok, "bad\00message"
  }
  return
}

// -----

// Asserts run on the device, inside a kernel.
func.func @assert_outside_kernel(%ok: i1) {
  // expected-error @+1 {{'tile.device_assert' op failed to verify that is nested in a tile.kernel}}
  tile.device_assert %ok, "outside"
  return
}

// -----

func.func @yield_parent() {
  // expected-error @+1 {{'tile.yield' op expects parent op to be one of 'tile.kernel, tile.parallel, tile.pipelined, tile.warp_specialize, tile.role'}}
  tile.yield
}

// -----

// Tile buffers have no empty dimension (layouts and lowerings divide by them).
func.func @alloc_zero_dim(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_fragment' op result dimensions must be positive, got 'memref<0x0xf32, #tile.scope<fragment>>'}}
    %c = tile.alloc_fragment : memref<0x0xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Tile buffers are bounded (limits::k*Elements in TileOps.h): a fragment
// of 100000 x 100000 would make layout inference enumerate 10^10 elements.
func.func @alloc_fragment_huge(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_fragment' op result has 10000000000 elements, more than the 131072 a #tile.scope<fragment> buffer may hold}}
    %c = tile.alloc_fragment : memref<100000x100000xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Element counts saturate instead of wrapping around to a small number.
func.func @alloc_shared_wrapping(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_shared' op result has 4611686018427387904 elements, more than the 1048576 a #tile.scope<shared> buffer may hold}}
    %c = tile.alloc_shared : memref<4294967296x4294967296x16xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @alloc_local_huge(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_local' op result has 131072 elements, more than the 65536 a #tile.scope<local> buffer may hold}}
    %c = tile.alloc_local : memref<131072xf32, #tile.scope<local>>
  }
  return
}

// -----

// A parallel loop covers a tile: 2^31 iterations would take minutes to
// give layouts to.
func.func @parallel_huge(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op iteration space (2147483648x64) has more than 1048576 iterations}}
    tile.parallel (%i, %j) in (2147483648, 64) {
    }
  }
  return
}

// -----

// The product is bounded too, not only each extent.
func.func @parallel_product(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.parallel' op iteration space (1024x2048) has more than 1048576 iterations}}
    tile.parallel (%i, %j) in (1024, 2048) {
    }
  }
  return
}

// -----

// The grid layout inference writes on a gemm is checked: the GPU lowerings
// index registers by it (a bogus one crashed them).
func.func @gemm_grid_negative(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op `wgmma` must be two positive counts, got array<i64: -9223372036854775808, 1>}}
    tile.gemm %a, %b, %c {wgmma = array<i64: -9223372036854775808, 1>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_grid_split(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op `warp_partition` = [3, 1] does not split the 64x64 tile into 16x8 instruction tiles}}
    tile.gemm %a, %b, %c {warp_partition = array<i64: 3, 1>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @gemm_grid_threads(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.gemm' op `warp_partition` = [4, 2] needs 256 threads, the kernel has 128}}
    tile.gemm %a, %b, %c {warp_partition = array<i64: 4, 2>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Booleans are bytes in buffers: an i1 buffer reached the LLVM memref
// lowering, which asserts on sub-byte elements.
func.func @bool_buffer(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.alloc_shared' op makes a buffer of i1 'memref<16xi1, #tile.scope<shared>>'; booleans are stored as bytes (i8) in buffers}}
    %s = tile.alloc_shared : memref<16xi1, #tile.scope<shared>>
  }
  return
}

// -----

func.func @bool_tensor(%m: memref<16xi1>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'memref.load' op uses a buffer of i1 'memref<16xi1>'; booleans are stored as bytes (i8) in buffers}}
    %v = memref.load %m[%c0] : memref<16xi1>
  }
  return
}

// -----

// Float8 values are copied, converted and read by gemms; nothing computes
// on them (the cumsum lowering once emitted fp8 arith.addf for LLVM to fail
// on, or left it in tile-opt's output).
func.func @float8_cumsum(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64xf8E5M2, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<64xf8E5M2, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cumsum' op computes on float8 values; they can be copied and converted but not computed on}}
    tile.cumsum %s -> %d {dim = 0} : memref<64xf8E5M2, #tile.scope<shared>> -> memref<64xf8E5M2, #tile.scope<shared>>
  }
  return
}

// -----

func.func @float8_arith(%n: index, %x: f8E4M3FN) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'arith.addf' op computes on float8 values}}
    %y = arith.addf %x, %x : f8E4M3FN
  }
  return
}

// -----

// A block's buffer inside a parallel loop (whose body runs once per element
// on any thread) has no meaning; layout inference built IR that did not
// verify around one.
func.func @alloc_in_parallel(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    tile.parallel (%i) in (32) {
      // expected-error @+1 {{'tile.alloc_fragment' op cannot be inside a tile.parallel; allocate the buffer in the kernel, outside the loop}}
      %f = tile.alloc_fragment : memref<32xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A role is a range of the kernel's threads.
func.func @role_outside_block(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.role' op needs threads [begin, end) with 0 <= begin < end <= 256 (the kernel's threads), got [128, 384)}}
    tile.role threads(128 to 384) {
    }
  }
  return
}

// -----

func.func @role_nested(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(0 to 128) {
      // expected-error @+1 {{'tile.role' op roles do not nest: this role is inside another}}
      tile.role threads(0 to 64) {
      }
    }
  }
  return
}

// -----

func.func @set_max_nreg_outside_role(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.set_max_nreg' op sets the register budget of a role's warpgroups: it belongs in a tile.role}}
    tile.set_max_nreg 240 increase
  }
  return
}

// -----

func.func @set_max_nreg_count(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(0 to 128) {
      // expected-error @+1 {{'tile.set_max_nreg' op count must be a multiple of 8 in [24, 256], got 100}}
      tile.set_max_nreg 100 increase
    }
  }
  return
}

// -----

func.func @set_max_nreg_partial_warpgroup(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    tile.role threads(64 to 192) {
      // expected-error @+1 {{'tile.set_max_nreg' op needs a role of whole warpgroups (threads [128k, 128m)), got [64, 192)}}
      tile.set_max_nreg 40
    }
  }
  return
}

// -----

func.func @named_barrier_zero(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.named_barrier' op id must be in [1, 15] (barrier 0 is the whole block's), got 0}}
    tile.named_barrier 0, 128
  }
  return
}

// -----

func.func @named_barrier_threads(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.named_barrier' op threads must be a multiple of 32 in [32, 256] (the kernel's threads), got 100}}
    tile.named_barrier 2, 100
  }
  return
}

// -----

func.func @barrier_counts(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    // expected-error @+1 {{'tile.alloc_barrier' op needs one arrival count, or one per barrier (3), got 2}}
    %b = tile.alloc_barrier arrivals(128, 128) : memref<3xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @after_copies_expect_tx(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %b = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.barrier_arrive' op after_copies arrivals cannot announce bytes}}
    tile.barrier_arrive %b[%c0] expect_tx(128) per_thread after_copies : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @expect_tx_without_barrier(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op expect_tx announces the copy's bytes on its barrier: it needs `via` a barrier}}
    tile.copy %A[%c0, %c0] [64, 32] to %as[%c0, %c0] [64, 32] {expect_tx} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @multicast_mask_without_barrier(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op a multicast mask or an eviction priority is a TMA copy's: it needs `via` a barrier}}
    tile.copy %A[%c0, %c0] [64, 32] to %as[%c0, %c0] [64, 32] {multicast_mask = 3 : i64} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @multicast_mask_range(%A: memref<?x?xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %as = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_barrier arrivals(1) : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.copy' op the multicast mask must name block ranks 0 to 15 (a non-zero 16-bit mask), got 65536}}
    tile.copy %A[%c0, %c0] [64, 32] to %as[%c0, %c0] [64, 32] via %b[%c0] {multicast_mask = 65536 : i64} : memref<?x?xf16> to memref<64x32xf16, #tile.scope<shared>>, memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cluster_copy_without_clusters(%n: index) {
  %c0 = arith.constant 0 : index
  %r = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<64xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cluster_copy' op copies into another block of the cluster, but the kernel runs without clusters}}
    tile.cluster_copy %s[%c0] [64] to %d[%c0] [64] rank(%r) : memref<64xf32, #tile.scope<shared>> to memref<64xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cluster_copy_element_types(%n: index) {
  %c0 = arith.constant 0 : index
  %r = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %s = tile.alloc_shared : memref<64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<64xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cluster_copy' op copies elements as they are: the element types differ, 'f32' and 'f16'}}
    tile.cluster_copy %s[%c0] [64] to %d[%c0] [64] rank(%r) : memref<64xf32, #tile.scope<shared>> to memref<64xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cluster_copy_global(%A: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %r = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %d = tile.alloc_shared : memref<64xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cluster_copy' op copies between shared buffers, got global to shared}}
    tile.cluster_copy %A[%c0] [64] to %d[%c0] [64] rank(%r) : memref<64xf32> to memref<64xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cluster_copy_shapes(%n: index) {
  %c0 = arith.constant 0 : index
  %r = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%n) threads(128) attributes {tile.cluster = array<i64: 2, 1, 1>} {
    %s = tile.alloc_shared : memref<8x64xf32, #tile.scope<shared>>
    %d = tile.alloc_shared : memref<8x64xf32, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cluster_copy' op source region 4x64 and destination region 8x32 have different shapes (unit dimensions dropped)}}
    tile.cluster_copy %s[%c0, %c0] [4, 64] to %d[%c0, %c0] [8, 32] rank(%r) : memref<8x64xf32, #tile.scope<shared>> to memref<8x64xf32, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cp_async_size(%A: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cp_async' op copies 4, 8 or 16 bytes, got 3 elements of 'f16'}}
    tile.cp_async %A[%c0, %c0] to %s[%c0, %c0] elements(3) : memref<64x64xf16> to memref<64x64xf16, #tile.scope<shared>>
  }
  return
}

// -----

func.func @cp_async_direction(%A: memref<64x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    // expected-error @+1 {{'tile.cp_async' op copies from global to shared memory, got shared to global}}
    tile.cp_async %s[%c0, %c0] to %A[%c0, %c0] elements(8) : memref<64x64xf16, #tile.scope<shared>> to memref<64x64xf16>
  }
  return
}

// -----

func.func @after_copies_not_per_thread(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %b = tile.alloc_barrier arrivals(128) : memref<1xi64, #tile.scope<shared>>
    // expected-error @+1 {{'tile.barrier_arrive' op after_copies arrivals are per-thread (per_thread)}}
    tile.barrier_arrive %b[%c0] after_copies : memref<1xi64, #tile.scope<shared>>
  }
  return
}

// -----

// A peer view needs a symmetric buffer (a kernel argument marked so).
func.func @peer_not_symmetric(%buf: memref<256xf16>, %bp: memref<?xi64>, %r: index) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    // expected-error @+1 {{'tile.peer' op views a rank's part of a symmetric buffer, but its operand is not one: it must be a kernel argument marked `tile.symmetric`}}
    %p = tile.peer %buf, %bp[%r] : memref<256xf16>, memref<?xi64> -> memref<256xf16, strided<[1], offset: ?>>
  }
  return
}

// -----

func.func @peer_result_type(%buf: memref<256xf16> {tile.symmetric}, %bp: memref<?xi64>, %r: index) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    // expected-error @+1 {{'tile.peer' op result type must be 'memref<256xf16, strided<[1], offset: ?>>'}}
    %p = tile.peer %buf, %bp[%r] : memref<256xf16>, memref<?xi64> -> memref<256xf16>
  }
  return
}

// -----

// A wait on flags nothing in the kernel signals could only time out.
func.func @wait_without_signal(%f: memref<4xi32>, %r: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    // expected-error @+1 {{'tile.wait' op waits on a flag buffer that nothing in the kernel signals}}
    tile.wait eq %one -> %f[%r] : i32 -> memref<4xi32>
  }
  return
}

// -----

func.func @signal_flag_type(%f: memref<4xi64>, %r: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    // expected-error @+1 {{'tile.signal' op value type 'i32' does not match the flag type 'i64'}}
    tile.signal set %one -> %f[%r] : i32 -> memref<4xi64>
  }
  return
}

// -----

func.func @signal_in_parallel(%f: memref<4xi32>) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    tile.parallel (%i) in (4) {
      // expected-error @+1 {{'tile.signal' op synchronizes the whole block: it cannot be nested in a T.Parallel loop or a role}}
      tile.signal set %one -> %f[%i] : i32 -> memref<4xi32>
    }
  }
  return
}

// -----

func.func @wait_timeout(%f: memref<4xi32>, %r: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    tile.signal set %one -> %f[%r] : i32 -> memref<4xi32>
    // expected-error @+1 {{'tile.wait' op timeout must be positive and at most 9223372036854 ms (the poll counts int64 nanoseconds: 292 years), got 0 ms}}
    tile.wait eq %one -> %f[%r] {timeout_ms = 0} : i32 -> memref<4xi32>
  }
  return
}

// -----

// Nanoseconds of a longer timeout overflow int64 (it timed out at once).
func.func @wait_timeout_overflow(%f: memref<4xi32>, %r: index) {
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  tile.kernel blocks(%bx) in (%c1) threads(128) {
    tile.signal set %one -> %f[%r] : i32 -> memref<4xi32>
    // expected-error @+1 {{'tile.wait' op timeout must be positive and at most 9223372036854 ms (the poll counts int64 nanoseconds: 292 years), got 9223372036855 ms}}
    tile.wait eq %one -> %f[%r] {timeout_ms = 9223372036855} : i32 -> memref<4xi32>
  }
  return
}

// -----

func.func @atomic_bulk_fragment(%out: memref<4x4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<4x4xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.atomic_add' op a bulk (TMA) add needs a shared tile of the destination's element type and a global destination, got 'memref<4x4xf32, #tile.scope<fragment>>' into 'memref<4x4xf32>'}}
    tile.atomic_add %f -> %out[%c0, %c0] {tma} : memref<4x4xf32, #tile.scope<fragment>> -> memref<4x4xf32>
  }
  return
}

// -----

func.func @atomic_bulk_scalar(%out: memref<16xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    // expected-error @+1 {{'tile.atomic_add' op a bulk (TMA) add needs a shared tile value, got 'f32'}}
    tile.atomic_add %v -> %out[%c0] {tma} : f32 -> memref<16xf32>
  }
  return
}

// -----

func.func @reduce_bitwise_float(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op reduce bitand needs integer or boolean source elements, got 'f32'}}
    tile.reduce %s -> %m {kind = #tile.reduce<bitand>, dim = 1} : memref<16x16xf32, #tile.scope<fragment>> -> memref<16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @reduce_nan_propagate_sum(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<16x16xf16, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<16xf16, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op nan_propagate applies to max, min and absmax reductions, not sum}}
    tile.reduce %s -> %m {kind = #tile.reduce<sum>, dim = 1, nan_propagate} : memref<16x16xf16, #tile.scope<fragment>> -> memref<16xf16, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @reduce_logical_element(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<16x16xi32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<16xi32, #tile.scope<fragment>>
    // expected-error @+1 {{'tile.reduce' op dst_element 'ui16' cannot be the logical type of elements stored as 'i32'}}
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1, dst_element = ui16} : memref<16x16xi32, #tile.scope<fragment>> -> memref<16xi32, #tile.scope<fragment>>
  }
  return
}

// -----

func.func @ieee_arity(%n: index, %a: f32) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.ieee' op fma takes 3 operands, got 2}}
    %x = tile.ieee fma, rn %a, %a : f32, f32 -> f32
  }
  return
}

// -----

func.func @ieee_half_directed(%n: index, %a: bf16) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.ieee' op IEEE mul with rounding mode 'ru' is not supported for 'bf16': Only rounding mode 'rn' is available for half precision}}
    %x = tile.ieee mul, ru %a, %a : bf16, bf16 -> bf16
  }
  return
}

// -----

func.func @ieee_rsqrt_f64(%n: index, %a: f64) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    // expected-error @+1 {{'tile.ieee' op IEEE frsqrt is not supported for float64}}
    %x = tile.ieee rsqrt, rn %a : f64 -> f64
  }
  return
}
