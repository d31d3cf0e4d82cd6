// RUN: tile-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(tile-layout-inference))' | FileCheck %s

// A square policy splits 4 warps 2x2 over a 128x128 accumulator: each warp
// owns a 64x64 quarter of m16n8 mma tiles (lane = 4 * (row % 8) + (col / 2) % 4,
// warp = 2 * (row / 64) + col / 64). The row maximum is the projection: the 4
// lanes of a quad and the 2 warps along N hold each row (replicate = 8). The
// loop takes the accumulator's layout; shared buffers get the widest XOR
// swizzle their rows allow.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 64) * 64 + (d1 floordiv 2) mod 4 + (d1 floordiv 64) * 32, ((d0 floordiv 8) mod 2) * 2 + ((d0 floordiv 16) mod 4) * 32 + d1 mod 2 + ((d1 floordiv 8) mod 8) * 4)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 64) * 64 + s0 mod 4 + (s0 floordiv 4) * 32, (d0 floordiv 8) mod 8)>
// CHECK-LABEL: func.func @square
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<64>} : memref<128x32xf16
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<128>} : memref<32x128xf16
// CHECK: %[[C:.+]] = tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<128x128xf32
// CHECK: tile.gemm %{{.+}}, %{{.+}}, %[[C]] {warp_partition = array<i64: 2, 2>}
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ROW]], threads = 128, replicate = 8>} : memref<128xf32
// CHECK: tile.parallel (%{{.+}}, %{{.+}}) in (128, 128) attributes {layout = #tile.layout<#[[ACC]], threads = 128>}
func.func @square(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<128x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x128xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c : memref<128x32xf16, #tile.scope<shared>>, memref<32x128xf16, #tile.scope<shared>> -> memref<128x128xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<128xf32, #tile.scope<fragment>>
    tile.reduce %c -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<128x128xf32, #tile.scope<fragment>> -> memref<128xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (128, 128) {
      %x = memref.load %c[%i, %j] : memref<128x128xf32, #tile.scope<fragment>>
      %y = memref.load %m[%i] : memref<128xf32, #tile.scope<fragment>>
      %z = arith.subf %x, %y : f32
      memref.store %z, %c[%i, %j] : memref<128x128xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// FullCol with 8 warps (two warpgroups): warps stand side by side along N, so
// warp w owns columns [64 w, 64 w + 64): the first warpgroup (threads 0-127)
// holds columns 0-255, the second 256-511. This is the MLA decode split.
// CHECK: #[[MAP:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d1 floordiv 2) mod 4 + (d1 floordiv 64) * 32, ((d0 floordiv 8) mod 2) * 2 + (d0 floordiv 16) * 32 + d1 mod 2 + ((d1 floordiv 8) mod 8) * 4)>
// CHECK-LABEL: func.func @full_col_two_warpgroups
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[MAP]], threads = 256>} : memref<64x512xf32
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<full_col>, warp_partition = array<i64: 1, 8>}
func.func @full_col_two_warpgroups(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(256) {
    %a = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<64x512xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x512xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {policy = #tile.policy<full_col>} : memref<64x64xf16, #tile.scope<shared>>, memref<64x512xf16, #tile.scope<shared>> -> memref<64x512xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// FullRow stacks the warps along M.
// CHECK-LABEL: func.func @full_row
// CHECK: tile.gemm {{.+}} {policy = #tile.policy<full_row>, warp_partition = array<i64: 4, 1>}
func.func @full_row(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {policy = #tile.policy<full_row>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Two accumulators with different warp partitions meet in one loop: the loop
// takes the first one's layout, and the second is converted into a new
// fragment in that layout by an explicit copy before the loop.
// CHECK-LABEL: func.func @conversion
// CHECK: %[[CONV:.+]] = tile.alloc_fragment {layout = #tile.layout<#[[ROWS:.+]], threads = 128>}
// CHECK: %[[C:.+]] = tile.alloc_fragment {layout = #tile.layout<#[[ROWS]], threads = 128>}
// CHECK: %[[D:.+]] = tile.alloc_fragment {layout = #tile.layout<#[[COLS:.+]], threads = 128>}
// CHECK: tile.copy %[[D]][{{.+}}] [64, 64] to %[[CONV]][{{.+}}] [64, 64]
// CHECK: tile.parallel
// CHECK:   memref.load %[[C]]
// CHECK:   memref.load %[[CONV]]
func.func @conversion(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<64x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    %d = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {policy = #tile.policy<full_row>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %d {policy = #tile.policy<full_col>} : memref<64x32xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (64, 64) {
      %x = memref.load %c[%i, %j] : memref<64x64xf32, #tile.scope<fragment>>
      %y = memref.load %d[%i, %j] : memref<64x64xf32, #tile.scope<fragment>>
      %z = arith.addf %x, %y : f32
      memref.store %z, %c[%i, %j] : memref<64x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Nothing anchors an elementwise loop: it gets a blocked layout (4
// consecutive elements of a row per thread, 16 threads per row, 8 rows per
// pass of the block) and passes it to the fragment it fills.
// User annotations win over the choice of swizzle.
// CHECK: #[[BLOCKED:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 16 + d1 floordiv 4, (d0 floordiv 8) * 4 + d1 mod 4)>
// CHECK-LABEL: func.func @blocked_and_annotated
// CHECK: tile.alloc_shared {swizzle = #tile.swizzle<32>} : memref<64x64xf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[BLOCKED]], threads = 128>} : memref<32x64xf32
// CHECK-NOT: tile.annotate_layout
// CHECK: tile.parallel (%{{.+}}, %{{.+}}) in (32, 64) attributes {layout = #tile.layout<#[[BLOCKED]], threads = 128>}
func.func @blocked_and_annotated(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    tile.annotate_layout %s (#tile.swizzle<32>) : memref<64x64xf16, #tile.scope<shared>>
    %f = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (32, 64) {
      %v = arith.constant 1.0 : f32
      memref.store %v, %f[%i, %j] : memref<32x64xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// The two gemms of attention on mma.sync: S = Q K^T, P = S in 16 bits, O +=
// P V. A 16-bit fragment A with no layout yet gets the layout mma.sync
// reads A from registers in, which for the same 4x1 warp rows is the
// accumulator layout: S, P and O share one map, so the copy S -> P is a
// conversion in registers and P feeds the gemm directly.
// CHECK-DAG: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 2) mod 4, ((d0 floordiv 8) mod 2) * 2 + d1 mod 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @attention_tile
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x32xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x32xf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ACC]], threads = 128>} : memref<64x64xf32
// CHECK: tile.gemm {{.+}}warp_partition = array<i64: 4, 1>
// CHECK: tile.gemm {{.+}}warp_partition = array<i64: 4, 1>
func.func @attention_tile(%n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %q = tile.alloc_shared : memref<64x64xf16, #tile.scope<shared>>
    %k = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %v = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %s = tile.alloc_fragment : memref<64x32xf32, #tile.scope<fragment>>
    %p = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %q, %k, %s {transpose_b, policy = #tile.policy<full_row>} : memref<64x64xf16, #tile.scope<shared>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x32xf32, #tile.scope<fragment>>
    tile.copy %s[%c0, %c0] [64, 32] to %p[%c0, %c0] [64, 32] : memref<64x32xf32, #tile.scope<fragment>> to memref<64x32xf16, #tile.scope<fragment>>
    tile.gemm %p, %v, %o {policy = #tile.policy<full_row>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Warps side by side along N would each need all of A's rows (a replicated
// layout): A is left to the default blocked layout and the lowering stages
// it through shared memory.
// CHECK-DAG: #[[BLOCKED:.+]] = affine_map<(d0, d1) -> ((d0 mod 16) * 8 + d1 floordiv 4, (d0 floordiv 16) * 4 + d1 mod 4)>
// CHECK-LABEL: func.func @register_a_split_columns
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[BLOCKED]], threads = 128>} : memref<64x32xf16
// CHECK: tile.gemm {{.+}}warp_partition = array<i64: 1, 4>
func.func @register_a_split_columns(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %v = tile.alloc_shared : memref<32x64xf16, #tile.scope<shared>>
    %p = tile.alloc_fragment : memref<64x32xf16, #tile.scope<fragment>>
    %o = tile.alloc_fragment : memref<64x64xf32, #tile.scope<fragment>>
    tile.gemm %p, %v, %o {policy = #tile.policy<full_col>} : memref<64x32xf16, #tile.scope<fragment>>, memref<32x64xf16, #tile.scope<shared>> -> memref<64x64xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A loop that nothing constrains gets a blocked layout: by default 4
// consecutive elements per thread; `vector = 8` gives each thread 8 (16 bytes
// of f16, so the copy into the fragment becomes one 16-byte load per row).
// CHECK-DAG: #[[V4:.+]] = affine_map<(d0, d1) -> ((d1 floordiv 4) mod 32, d0 * 8 + d1 mod 4 + (d1 floordiv 128) * 4)>
// CHECK-DAG: #[[V8:.+]] = affine_map<(d0, d1) -> (d1 floordiv 8, d0 * 8 + d1 mod 8)>
// CHECK-LABEL: func.func @loop_vector
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[V4]], threads = 32>} : memref<2x256xf16
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[V8]], threads = 32>} : memref<2x256xf16
func.func @loop_vector(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %a = tile.alloc_fragment : memref<2x256xf16, #tile.scope<fragment>>
    %b = tile.alloc_fragment : memref<2x256xf16, #tile.scope<fragment>>
    %one = arith.constant 1.0 : f16
    tile.parallel (%i, %j) in (2, 256) {
      memref.store %one, %a[%i, %j] : memref<2x256xf16, #tile.scope<fragment>>
    }
    tile.parallel (%i, %j) in (2, 256) attributes {vector = 8} {
      memref.store %one, %b[%i, %j] : memref<2x256xf16, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A width the loop asks for spans its trailing dimensions: `vector = 16`
// over (8, 4, 4) gives each thread one whole 4x4 block, so the per-block sum
// `%part[i]` (indexed by the first variable only) stays in the thread: its
// layout holds one element per thread, not replicated.
// CHECK-DAG: #[[CHUNK:.+]] = affine_map<(d0, d1, d2) -> (d0, d1 * 4 + d2)>
// CHECK-DAG: #[[PART:.+]] = affine_map<(d0) -> (d0, 0)>
// CHECK-LABEL: func.func @vector_spans_dims
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[CHUNK]], threads = 8>} : memref<8x4x4xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[PART]], threads = 8>} : memref<8xf32
// CHECK: tile.parallel {{.*}} in (8, 4, 4) attributes {layout = #tile.layout<#[[CHUNK]], threads = 8>, vector = 16
func.func @vector_spans_dims(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(8) {
    %x = tile.alloc_fragment : memref<8x4x4xf32, #tile.scope<fragment>>
    %part = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j, %k) in (8, 4, 4) attributes {vector = 16} {
      %v = memref.load %x[%i, %j, %k] : memref<8x4x4xf32, #tile.scope<fragment>>
      %s = memref.load %part[%i] : memref<8xf32, #tile.scope<fragment>>
      %t = arith.addf %s, %v : f32
      memref.store %t, %part[%i] : memref<8xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// Indices that divide or wrap a loop variable by constants (j // 16, j % 16)
// induce layouts too: the digits of j below 16 (a thread's registers) drop
// out of %part, which gets one element a thread; %w, indexed by j % 16,
// gets the in-thread digits, replicated over every thread.
// CHECK-DAG: #[[LOOP:.+]] = affine_map<(d0, d1) -> (d0 * 4 + d1 floordiv 16, d1 mod 16)>
// CHECK-DAG: #[[PART:.+]] = affine_map<(d0, d1) -> (d0 * 4 + d1, 0)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0)[s0] -> (s0, d0)>
// CHECK-LABEL: func.func @divided_index
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[LOOP]], threads = 32>} : memref<8x64xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[PART]], threads = 32>} : memref<8x4xf32
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[W]], threads = 32, replicate = 32>} : memref<16xf32
// CHECK-NOT: tile.alloc_shared
func.func @divided_index(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %x = tile.alloc_fragment : memref<8x64xf32, #tile.scope<fragment>>
    %part = tile.alloc_fragment : memref<8x4xf32, #tile.scope<fragment>>
    %w = tile.alloc_fragment : memref<16xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 64) attributes {vector = 16} {
      %c16 = arith.constant 16 : index
      %q = arith.floordivsi %j, %c16 : index
      %r = arith.remsi %j, %c16 : index
      %v = memref.load %x[%i, %j] : memref<8x64xf32, #tile.scope<fragment>>
      %wv = memref.load %w[%r] : memref<16xf32, #tile.scope<fragment>>
      %s = memref.load %part[%i, %q] : memref<8x4xf32, #tile.scope<fragment>>
      %p = arith.mulf %v, %wv : f32
      %t = arith.addf %s, %p : f32
      memref.store %t, %part[%i, %q] : memref<8x4xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A sum of such terms, (j mod 4) * 4 + j floordiv 4 (written the way the
// canonicalizer leaves j mod 4 next to j floordiv 4: j - (j floordiv 4) * 4),
// permutes the elements of a thread's 4x4 block: %y stays on the threads
// of the loop, with no shared-memory conversion, its registers numbered
// in element order (the derived layout's innermost run first, for vector
// copies).
// CHECK-DAG: #[[PERM:.+]] = affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 16, d1 mod 16)>
// CHECK-LABEL: func.func @summed_index
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[PERM]], threads = 16>} : memref<8x32xf32
// CHECK-NOT: tile.alloc_shared
func.func @summed_index(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(16) {
    %x = tile.alloc_fragment : memref<8x32xf32, #tile.scope<fragment>>
    %y = tile.alloc_fragment : memref<8x32xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 32) attributes {vector = 16} {
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %blk = arith.floordivsi %j, %c16 : index
      %base = arith.muli %blk, %c16 : index
      %q = arith.floordivsi %j, %c4 : index
      %qm = arith.remsi %q, %c4 : index
      %p = arith.muli %q, %c4 : index
      %r = arith.subi %j, %p : index
      %r4 = arith.muli %r, %c4 : index
      %s = arith.addi %r4, %qm : index
      %k = arith.addi %base, %s : index
      %v = memref.load %x[%i, %j] : memref<8x32xf32, #tile.scope<fragment>>
      memref.store %v, %y[%i, %k] : memref<8x32xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// 96 threads (three warps) do not split a 16x16 gemm into mma tiles: the
// gemm stays SIMT and its accumulator gets a blocked layout over 32 of the
// threads, replicated over the odd factor 3 (the search once looked for a
// power of two in 3 forever, growing memory without bound).
// CHECK-LABEL: func.func @threads_not_power_of_two
// CHECK: tile.alloc_fragment {layout = #tile.layout<#{{.+}}, threads = 96, replicate = 3>} : memref<16x16xf32
func.func @threads_not_power_of_two(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(96) {
    %a = tile.alloc_shared : memref<16x16xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xf32, #tile.scope<fragment>>
    tile.gemm %a, %a, %c : memref<16x16xf16, #tile.scope<shared>>, memref<16x16xf16, #tile.scope<shared>> -> memref<16x16xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Three threads: every thread holds the whole (replicated) tile.
// CHECK-LABEL: func.func @three_threads
// CHECK: tile.alloc_fragment {layout = #tile.layout<#{{.+}}, threads = 3, replicate = 3>} : memref<8x4xf32
func.func @three_threads(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(3) {
    %f = tile.alloc_fragment : memref<8x4xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (8, 4) {
      %v = arith.constant 1.0 : f32
      memref.store %v, %f[%i, %j] : memref<8x4xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A loop that writes only local buffers (per-thread arrays) and touches no
// fragment is per-thread code, as TileLang has it: every thread runs every
// iteration on its own copy, so the loop layout replicates the whole loop
// over the block's 160 threads (shared out, each thread would compute a
// quarter of its own %o and a copy of %o out would store the rest unset).
// Reading global memory changes nothing; also writing it (or a var) makes
// the loop shared out among the threads (blocked).
// CHECK-DAG: #[[ALL:.+]] = affine_map<(d0)[s0] -> (s0, d0)>
// CHECK-LABEL: func.func @per_thread_loop
// CHECK: tile.parallel (%{{.+}}) in (16) attributes {layout = #tile.layout<#[[ALL]], threads = 160, replicate = 160>}
// CHECK: tile.parallel (%{{.+}}) in (16) attributes {layout = #tile.layout<#[[ALL]], threads = 160, replicate = 160>}
// CHECK: tile.parallel (%{{.+}}) in (16) attributes {layout = #tile.layout<#{{.+}}, threads = 160, replicate = 40>}
// CHECK: tile.parallel (%{{.+}}) in (16) attributes {layout = #tile.layout<#{{.+}}, threads = 160, replicate = 40>}
func.func @per_thread_loop(%x: memref<48xf16>, %out: memref<48xf16>) {
  %c3 = arith.constant 3 : index
  tile.kernel blocks(%bx) in (%c3) threads(160) {
    %a = tile.alloc_local : memref<16xf16, #tile.scope<local>>
    %o = tile.alloc_local : memref<16xf16, #tile.scope<local>>
    %v = tile.alloc_var : memref<f16, #tile.scope<var>>
    tile.parallel (%i) in (16) {
      %e = memref.load %a[%i] : memref<16xf16, #tile.scope<local>>
      memref.store %e, %o[%i] : memref<16xf16, #tile.scope<local>>
    }
    tile.parallel (%i) in (16) {
      %e = memref.load %x[%i] : memref<48xf16>
      memref.store %e, %o[%i] : memref<16xf16, #tile.scope<local>>
    }
    tile.parallel (%i) in (16) {
      %e = memref.load %a[%i] : memref<16xf16, #tile.scope<local>>
      memref.store %e, %o[%i] : memref<16xf16, #tile.scope<local>>
      memref.store %e, %out[%i] : memref<48xf16>
    }
    tile.parallel (%i) in (16) {
      %e = memref.load %a[%i] : memref<16xf16, #tile.scope<local>>
      memref.store %e, %v[] : memref<f16, #tile.scope<var>>
    }
  }
  return
}

// -----

// A loop over part of a fragment (T.clear(C_local[:, :32]) of TileLang's
// alias test) whose accesses are not local: the loop's layout covers only
// that part, so the whole fragment is converted through shared memory (a
// fragment in the loop's layout would place elements past column 32 on
// threads that do not exist).
// CHECK-LABEL: func.func @partial_loop_over_fragment
// CHECK: %[[CONV:.*]] = tile.alloc_shared {{.*}}: memref<128x128xf32, #tile.scope<shared>>
// CHECK: %[[FRAG:.*]] = tile.alloc_fragment {layout = {{.*}}} : memref<128x128xf32
// CHECK: tile.copy %[[FRAG]]{{.*}} to %[[CONV]]
// CHECK: tile.parallel
// CHECK: memref.store %{{.*}}, %[[CONV]]
// CHECK: tile.copy %[[CONV]]{{.*}} to %[[FRAG]]
func.func @partial_loop_over_fragment(%out: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %cst = arith.constant 0.000000e+00 : f32
  tile.kernel blocks(%bx, %by) in (%c2, %c2) threads(128) {
    %f = tile.alloc_fragment : memref<128x128xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (128, 32) {
      memref.store %cst, %f[%i, %j] : memref<128x128xf32, #tile.scope<fragment>>
    }
    tile.copy %f[%c0, %c0] [128, 128] to %out[%c0, %c0] [128, 128] : memref<128x128xf32, #tile.scope<fragment>> to memref<256x256xf32>
  }
  return
}

// -----

// A read through a shifted row, `acc[i + s * 16, j]` under `if i < 16` in a
// loop over s (DeepSeek's sparse MLA backward stores dKV in two halves):
// with FullCol the thread that holds row r of the m16n8 accumulator also
// holds rows r + 16 (the warp's second m-tile), so the loop takes the
// accumulator's layout and reads it in registers, with no shared-memory
// copy. `acc[i + 1, j]` is on another thread (lane / 4 picks the row): it
// still goes through shared memory.
// CHECK: #[[ACC:.+]] = affine_map<(d0, d1) -> ((d0 mod 8) * 4 + (d1 floordiv 2) mod 4 + (d1 floordiv 8) * 32, (d0 floordiv 8) * 2 + d1 mod 2)>
// CHECK-LABEL: func.func @shifted_rows
// CHECK: %[[STAGED:.+]] = tile.alloc_shared {{.+}} : memref<32x32xf32
// CHECK-COUNT-2: tile.alloc_shared {{.+}} : memref<32x32xf16
// CHECK: tile.alloc_fragment
// CHECK: tile.alloc_shared {{.+}} : memref<16x32xf32
// CHECK-NOT: tile.alloc_shared
// CHECK: scf.for
// CHECK-NEXT: tile.parallel (%{{.+}}, %{{.+}}) in (32, 32) attributes {layout = #tile.layout<#[[ACC]], threads = 128>}
// CHECK-NOT: tile.copy
// CHECK: tile.copy %{{.+}} to %[[STAGED]][
// CHECK: tile.parallel
// CHECK: memref.load %[[STAGED]]
func.func @shifted_rows(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<32x32xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x32xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<32x32xf32, #tile.scope<fragment>>
    %o = tile.alloc_shared : memref<16x32xf32, #tile.scope<shared>>
    tile.gemm %a, %b, %c {policy = #tile.policy<full_col>} : memref<32x32xf16, #tile.scope<shared>>, memref<32x32xf16, #tile.scope<shared>> -> memref<32x32xf32, #tile.scope<fragment>>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    scf.for %s = %c0 to %c2 step %c1 {
      tile.parallel (%i, %j) in (32, 32) {
        %lt = arith.cmpi slt, %i, %c16 : index
        scf.if %lt {
          %sh = arith.muli %s, %c16 : index
          %r = arith.addi %i, %sh : index
          %x = memref.load %c[%r, %j] : memref<32x32xf32, #tile.scope<fragment>>
          memref.store %x, %o[%i, %j] : memref<16x32xf32, #tile.scope<shared>>
        }
      }
    }
    tile.parallel (%i, %j) in (16, 32) {
      %r = arith.addi %i, %c1 : index
      %x = memref.load %c[%r, %j] : memref<32x32xf32, #tile.scope<fragment>>
      memref.store %x, %o[%i, %j] : memref<16x32xf32, #tile.scope<shared>>
    }
  }
  return
}

// -----

// User layouts given as any affine function (TileLang's T.Fragment) are
// fitted digit by digit from their values: the constant thread offset (the
// elements live on threads [32, 96)) is dropped, and a layout that uses 64
// of the 128 threads gets the other 64 as replicas. The row-major flattened
// form of %h reads as the same digits.
// CHECK-DAG: #[[F:.*]] = affine_map<(d0, d1)[s0] -> (d1 floordiv 8 + s0 * 64, d0 * 8 + d1 mod 8)>
// CHECK-DAG: #[[G:.*]] = affine_map<(d0)[s0] -> (s0, d0)>
// CHECK-DAG: #[[H:.*]] = affine_map<(d0, d1) -> ((d1 floordiv 4) mod 128, d1 mod 4 + (d1 floordiv 512) * 4)>
// CHECK-LABEL: func.func @fitted_user_layouts
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[F]], threads = 128, replicate = 2>}
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[G]], threads = 128, replicate = 128>}
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[H]], threads = 128>}
func.func @fitted_user_layouts(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> (j floordiv 8 + 32, i * 8 + j mod 8)>, threads = 128>} : memref<2x512xf32, #tile.scope<fragment>>
    %g = tile.alloc_fragment {layout = #tile.layout<affine_map<(i)[s0] -> (s0 + 32, i)>, threads = 128, replicate = 64>} : memref<2xf32, #tile.scope<fragment>>
    %h = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> (((i * 2560 + j) floordiv 4) mod 128, ((i * 2560 + j) floordiv 512) * 4 + (i * 2560 + j) mod 4)>, threads = 128>} : memref<1x2560xf32, #tile.scope<fragment>>
    tile.reduce %f -> %g {kind = #tile.reduce<sum>, dim = 1, clear} : memref<2x512xf32, #tile.scope<fragment>> -> memref<2xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A fragment written row by row: the row index is a serial loop's variable
// around the T.Parallel, the same in all its iterations. The reduction
// gives the fragment a layout that keeps every row of a column in the
// thread that holds the column, so the loop's accesses are local: no
// shared-memory conversion is inserted (the lowering indexes the registers
// by the row at run time).
// CHECK-LABEL: func.func @rows
// CHECK-NOT: tile.alloc_shared
// CHECK: scf.for %[[I:.+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: tile.parallel (%[[J:.+]]) in (256) attributes {layout = #tile.layout<
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[I]], %[[J]]] : memref<4x256xf32, #tile.scope<fragment>>
// CHECK-NOT: tile.copy
// CHECK: tile.reduce
func.func @rows(%arg0: memref<4x256xf32>, %arg1: memref<4xf32>) {
  %cst = arith.constant 2.000000e+00 : f32
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%arg2) in (%c1) threads(64) {
    %0 = tile.alloc_fragment : memref<4x256xf32, #tile.scope<fragment>>
    %1 = tile.alloc_fragment : memref<4xf32, #tile.scope<fragment>>
    scf.for %arg3 = %c0 to %c4 step %c1 {
      tile.parallel (%arg4) in (256) {
        %2 = memref.load %arg0[%arg3, %arg4] {tile.guarded} : memref<4x256xf32>
        %3 = arith.mulf %2, %cst : f32
        memref.store %3, %0[%arg3, %arg4] : memref<4x256xf32, #tile.scope<fragment>>
      }
    }
    tile.reduce %0 -> %1 {clear, dim = 1 : i64, kind = #tile.reduce<sum>} : memref<4x256xf32, #tile.scope<fragment>> -> memref<4xf32, #tile.scope<fragment>>
    tile.copy %1[%c0] [4] to %arg1[%c0] [4] : memref<4xf32, #tile.scope<fragment>> to memref<4xf32>
  }
  return
}

// -----

// A fragment nothing else places, written and read only through a row index
// uniform over the T.Parallel (a serial loop's variable; `3 - i` computed in
// the loop's body): it takes the loop's layout over the columns with its 4
// rows in registers (register = row * 4 + column % 4), and no access needs a
// conversion.
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1) -> (d1 floordiv 4, d0 * 4 + d1 mod 4)>
// CHECK-LABEL: func.func @mirrored
// CHECK-NOT: tile.alloc_shared
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[ROWS]], threads = 64>} : memref<4x256xf32, #tile.scope<fragment>>
// CHECK-NOT: tile.copy
func.func @mirrored(%arg0: memref<4x256xf32>, %arg1: memref<4x256xf32>) {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%arg2) in (%c1) threads(64) {
    %0 = tile.alloc_fragment : memref<4x256xf32, #tile.scope<fragment>>
    scf.for %arg3 = %c0 to %c4 step %c1 {
      tile.parallel (%arg4) in (256) {
        %1 = memref.load %arg0[%arg3, %arg4] {tile.guarded} : memref<4x256xf32>
        memref.store %1, %0[%arg3, %arg4] : memref<4x256xf32, #tile.scope<fragment>>
      }
    }
    scf.for %arg3 = %c0 to %c4 step %c1 {
      tile.parallel (%arg4) in (256) {
        %1 = arith.subi %c3, %arg3 : index
        %2 = memref.load %0[%1, %arg4] : memref<4x256xf32, #tile.scope<fragment>>
        memref.store %2, %arg1[%arg3, %arg4] {tile.guarded} : memref<4x256xf32>
      }
    }
  }
  return
}

// -----

// A packed 4-bit store (tile.packed_store: variable 2 steps the nibble, 2 a
// byte) from a loop that takes its layout from a fragment holding runs of 2
// consecutive elements per thread: each byte is one thread's; the loop keeps
// that layout and the store its mark.
// CHECK-DAG: #[[PAIRS:.+]] = affine_map<(d0, d1) -> ((d0 mod 2) * 16 + d1 floordiv 2, (d0 floordiv 2) * 2 + d1 mod 2)>
// CHECK-LABEL: func.func @packed_store_whole_bytes
// CHECK: tile.parallel {{.*}} attributes {layout = #tile.layout<#[[PAIRS]], threads = 32>}
// CHECK: memref.store {{.*}} {tile.packed_store = array<i64: 1, 2>}
func.func @packed_store_whole_bytes(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %s = tile.alloc_shared : memref<4x16xi8, #tile.scope<shared>>
    %x = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> ((i * 32 + j) floordiv 2 mod 32, (i * 32 + j) floordiv 64 * 2 + j mod 2)>, threads = 32>} : memref<4x32xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (4, 32) {
      %v = memref.load %x[%i, %j] : memref<4x32xf32, #tile.scope<fragment>>
      %c2 = arith.constant 2 : index
      %b = arith.divui %j, %c2 : index
      %byte = arith.constant 1 : i8
      memref.store %byte, %s[%i, %b] {tile.packed_store = array<i64: 1, 2>} : memref<4x16xi8, #tile.scope<shared>>
    }
  }
  return
}

// -----

// T.Parallel(..., loop_layout=...): the loop keeps the program's layout
// (here each thread one column, the rows in registers) and the fragment it
// writes follows it, where the default would give each thread runs of 4.
// CHECK-DAG: #[[COLS:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @loop_layout
// CHECK: tile.alloc_fragment {layout = #tile.layout<#[[COLS]], threads = 32>} : memref<4x32xf32, #tile.scope<fragment>>
// CHECK: tile.parallel {{.*}} attributes {layout = #tile.layout<#[[COLS]], threads = 32>
func.func @loop_layout(%arg0: memref<4x32xf32>) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %f = tile.alloc_fragment : memref<4x32xf32, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (4, 32) attributes {loop_layout = #tile.layout<affine_map<(i, j) -> (j, i)>, threads = 32>} {
      %v = memref.load %arg0[%i, %j] : memref<4x32xf32>
      memref.store %v, %f[%i, %j] : memref<4x32xf32, #tile.scope<fragment>>
    }
  }
  return
}

// -----

// A loop that writes a fragment at a matched index (local) and at one the
// inference cannot match ((2 j + 1) floordiv 2, not folded): every access of
// that fragment in the loop goes through the conversion buffer, so the two
// writes of one element meet in one copy (split, the copy back after the
// loop dropped the register write).
// CHECK-LABEL: func.func @mixed_local_and_converted_writes
// CHECK-DAG: %[[CONV:.+]] = tile.alloc_shared
// CHECK-DAG: %[[FRAG:.+]] = tile.alloc_fragment {layout
// CHECK: tile.copy %[[FRAG]]{{.*}} to %[[CONV]]
// CHECK: tile.parallel
// CHECK-NOT: memref.store {{.*}}, %[[FRAG]]
// CHECK: memref.store {{.*}}, %[[CONV]]
// CHECK-NOT: memref.store {{.*}}, %[[FRAG]]
// CHECK: memref.store {{.*}}, %[[CONV]]
// CHECK: tile.copy %[[CONV]]{{.*}} to %[[FRAG]]
func.func @mixed_local_and_converted_writes(%arg0: memref<4x32xi8>) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    %f = tile.alloc_fragment {layout = #tile.layout<affine_map<(i, j) -> (j, i)>, threads = 32>} : memref<4x32xi8, #tile.scope<fragment>>
    tile.parallel (%i, %j) in (4, 32) {
      %v = memref.load %arg0[%i, %j] : memref<4x32xi8>
      memref.store %v, %f[%i, %j] : memref<4x32xi8, #tile.scope<fragment>>
      %c2 = arith.constant 2 : index
      %two = arith.muli %j, %c2 : index
      %odd = arith.addi %two, %c1 : index
      %b = arith.floordivsi %odd, %c2 : index
      %w = memref.load %f[%i, %b] : memref<4x32xi8, #tile.scope<fragment>>
      %x = arith.addi %w, %v : i8
      memref.store %x, %f[%i, %b] : memref<4x32xi8, #tile.scope<fragment>>
    }
  }
  return
}
