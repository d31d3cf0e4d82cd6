// RUN: tile-opt %s -split-input-file --convert-tile-to-scf --canonicalize --cse | FileCheck %s

// A kernel becomes a grid loop; buffers are allocated once before it, lose
// their tile scope and are freed after it. A copy from a global tensor checks
// the dynamic dimension (reads outside give zero) but not the static one it
// provably stays inside; elements are converted to the destination type.
// CHECK-LABEL: func.func @copy_in
// CHECK-SAME: (%[[A:.+]]: memref<?x64xf16>, %[[N:.+]]: index)
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f16
// CHECK: %[[S:.+]] = memref.alloc() {alignment = 64 : i64} : memref<32x64xf32>
// CHECK: scf.for %[[BX:.+]] = %{{.+}} to %[[N]]
// CHECK:   scf.for %[[I:.+]] = %{{.+}} to %c32
// CHECK:     scf.for %[[J:.+]] = %{{.+}} to %c64
// CHECK:       %[[ROW:.+]] = arith.addi %[[BX]], %[[I]] : index
// CHECK:       %[[DIM:.+]] = memref.dim %[[A]], %{{.+}} : memref<?x64xf16>
// CHECK:       %[[OK:.+]] = arith.cmpi ult, %[[ROW]], %[[DIM]] : index
// CHECK:       %[[V:.+]] = scf.if %[[OK]] -> (f16) {
// CHECK:         memref.load %[[A]][%[[ROW]], %[[J]]]
// CHECK:       } else {
// CHECK:         scf.yield %[[ZERO]] : f16
// CHECK:       %[[W:.+]] = arith.extf %[[V]] : f16 to f32
// CHECK:       memref.store %[[W]], %[[S]][%[[I]], %[[J]]] : memref<32x64xf32>
// CHECK: memref.dealloc %[[S]] : memref<32x64xf32>
// CHECK-NOT: tile.
func.func @copy_in(%A: memref<?x64xf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<32x64xf32, #tile.scope<shared>>
    tile.copy %A[%bx, %c0] [32, 64] to %s[%c0, %c0] [32, 64] : memref<?x64xf16> to memref<32x64xf32, #tile.scope<shared>>
    tile.print %s : memref<32x64xf32, #tile.scope<shared>>
  }
  return
}

// -----

// Writes outside the destination are dropped: the store is guarded. A 1xN
// region of a 2-D tensor is filled from a 1-D tile (unit dims dropped).
// CHECK-LABEL: func.func @copy_out
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %c64
// CHECK:   %[[COL:.+]] = arith.addi %{{.+}}, %[[J]] : index
// CHECK:   %[[V:.+]] = memref.load %{{.+}}[%[[J]]] : memref<64xf32>
// CHECK:   %[[T:.+]] = arith.truncf %[[V]] : f32 to bf16
// CHECK:   %[[OK:.+]] = arith.andi
// CHECK:   scf.if %[[OK]] {
// CHECK:     memref.store %[[T]], %{{.+}}[%{{.+}}, %[[COL]]] : memref<?x?xbf16>
func.func @copy_out(%C: memref<?x?xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<64xf32, #tile.scope<fragment>>
    %col = arith.muli %bx, %bx : index
    tile.copy %f[%c0] [64] to %C[%bx, %col] [1, 64] : memref<64xf32, #tile.scope<fragment>> to memref<?x?xbf16>
  }
  return
}

// -----

// A gemm runs m, k, n loops and accumulates in the accumulator's type;
// clear_accum zeroes it first. With transpose_b, B is read as B[n, k].
// CHECK-LABEL: func.func @gemm
// CHECK-DAG: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[A:.+]] = memref.alloc() {{.+}} : memref<16x8xf16>
// CHECK-DAG: %[[B:.+]] = memref.alloc() {{.+}} : memref<32x8xf16>
// CHECK-DAG: %[[C:.+]] = memref.alloc() {{.+}} : memref<16x32xf32>
// CHECK: memref.store %[[Z]], %[[C]]
// CHECK: scf.for %[[M:.+]] = %{{.+}} to %c16
// CHECK:   scf.for %[[K:.+]] = %{{.+}} to %c8
// CHECK:     %[[AV:.+]] = memref.load %[[A]][%[[M]], %[[K]]]
// CHECK:     %[[AW:.+]] = arith.extf %[[AV]] : f16 to f32
// CHECK:     scf.for %[[N:.+]] = %{{.+}} to %c32
// CHECK:       %[[BV:.+]] = memref.load %[[B]][%[[N]], %[[K]]]
// CHECK:       %[[BW:.+]] = arith.extf %[[BV]] : f16 to f32
// CHECK:       %[[CV:.+]] = memref.load %[[C]][%[[M]], %[[N]]]
// CHECK:       %[[P:.+]] = arith.mulf %[[AW]], %[[BW]] : f32
// CHECK:       %[[S:.+]] = arith.addf %[[CV]], %[[P]] : f32
// CHECK:       memref.store %[[S]], %[[C]][%[[M]], %[[N]]]
func.func @gemm(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x8xf16, #tile.scope<shared>>
    %b = tile.alloc_shared : memref<32x8xf16, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x32xf32, #tile.scope<fragment>>
    tile.gemm %a, %b, %c {transpose_b, clear_accum} : memref<16x8xf16, #tile.scope<shared>>, memref<32x8xf16, #tile.scope<shared>> -> memref<16x32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// Integer gemms widen with sign extension and accumulate with integer ops.
// CHECK-LABEL: func.func @gemm_i8
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK: arith.extsi %{{.+}} : i8 to i32
// CHECK: arith.muli
// CHECK: arith.addi
func.func @gemm_i8(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %a = tile.alloc_shared : memref<16x16xi8, #tile.scope<shared>>
    %c = tile.alloc_fragment : memref<16x16xi32, #tile.scope<fragment>>
    tile.gemm %a, %a, %c : memref<16x16xi8, #tile.scope<shared>>, memref<16x16xi8, #tile.scope<shared>> -> memref<16x16xi32, #tile.scope<fragment>>
  }
  return
}

// -----

// A max reduction starts from -inf with clear, from the destination without;
// it ignores NaN like the GPU's max instruction (maxnum).
// CHECK-LABEL: func.func @reduce
// CHECK-DAG: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %c32
// CHECK:   %[[R:.+]] = scf.for %{{.+}} = %{{.+}} to %c64 step %{{.+}} iter_args(%[[ACC:.+]] = %[[NEGINF]]) -> (f32)
// CHECK:     arith.maxnumf %[[ACC]], %{{.+}} : f32
// CHECK:   memref.store %[[R]], %{{.+}}[%[[I]]] : memref<32xf32>
// CHECK: scf.for %[[I2:.+]] = %{{.+}} to %c32
// CHECK:   %[[INIT:.+]] = memref.load %{{.+}}[%[[I2]]] : memref<32xf32>
// CHECK:   scf.for %{{.+}} = %{{.+}} to %c64 step %{{.+}} iter_args(%[[ACC2:.+]] = %[[INIT]]) -> (f32)
// CHECK:     %[[ABS:.+]] = math.absf
// CHECK:     arith.addf %[[ACC2]], %[[ABS]] : f32
func.func @reduce(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<32x64xf32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<32xf32, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1, clear} : memref<32x64xf32, #tile.scope<fragment>> -> memref<32xf32, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<abssum>, dim = 1} : memref<32x64xf32, #tile.scope<fragment>> -> memref<32xf32, #tile.scope<fragment>>
  }
  return
}

// -----

// A bfloat16 sum runs in f32 and is rounded once at the store; a bfloat16
// max stays in bfloat16.
// CHECK-LABEL: func.func @reduce_16bit_sum
// CHECK:   %[[INIT:.+]] = memref.load %{{.+}} : memref<8xbf16>
// CHECK:   %[[WIDE:.+]] = arith.extf %[[INIT]] : bf16 to f32
// CHECK:   %[[R:.+]] = scf.for %{{.+}} iter_args(%[[ACC:.+]] = %[[WIDE]]) -> (f32)
// CHECK:     arith.extf %{{.+}} : bf16 to f32
// CHECK:     arith.addf %[[ACC]], %{{.+}} : f32
// CHECK:   %[[NARROW:.+]] = arith.truncf %[[R]] : f32 to bf16
// CHECK:   memref.store %[[NARROW]]
// CHECK:   scf.for %{{.+}} -> (bf16)
// CHECK:     arith.maxnumf %{{.+}} : bf16
func.func @reduce_16bit_sum(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<8x64xbf16, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<8xbf16, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<sum>, dim = 1} : memref<8x64xbf16, #tile.scope<fragment>> -> memref<8xbf16, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1} : memref<8x64xbf16, #tile.scope<fragment>> -> memref<8xbf16, #tile.scope<fragment>>
  }
  return
}

// -----

// Unsigned elements (ui32 over i32) compare unsigned and start from 0 for
// max; bitand starts from all ones; a NaN-propagating f16 max is maximumf.
// CHECK-LABEL: func.func @reduce_kinds
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[ONES:.+]] = arith.constant -1 : i32
// CHECK: scf.for %{{.+}} iter_args(%[[A:.+]] = %[[ZERO]]) -> (i32)
// CHECK:   arith.maxui %[[A]], %{{.+}} : i32
// CHECK: scf.for %{{.+}} iter_args(%[[B:.+]] = %[[ONES]]) -> (i32)
// CHECK:   arith.andi %[[B]], %{{.+}} : i32
// CHECK: arith.maximumf %{{.+}}, %{{.+}} : f16
func.func @reduce_kinds(%n: index, %o: memref<4xi32>, %p: memref<4xi32>, %q: memref<4xf16>) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_fragment : memref<4x8xi32, #tile.scope<fragment>>
    %m = tile.alloc_fragment : memref<4xi32, #tile.scope<fragment>>
    tile.reduce %s -> %m {kind = #tile.reduce<max>, dim = 1, clear, src_element = ui32, dst_element = ui32} : memref<4x8xi32, #tile.scope<fragment>> -> memref<4xi32, #tile.scope<fragment>>
    tile.copy %m[%c0] [4] to %o[%c0] [4] : memref<4xi32, #tile.scope<fragment>> to memref<4xi32>
    tile.reduce %s -> %m {kind = #tile.reduce<bitand>, dim = 1, clear} : memref<4x8xi32, #tile.scope<fragment>> -> memref<4xi32, #tile.scope<fragment>>
    tile.copy %m[%c0] [4] to %p[%c0] [4] : memref<4xi32, #tile.scope<fragment>> to memref<4xi32>
    %h = tile.alloc_fragment : memref<4x8xf16, #tile.scope<fragment>>
    %hm = tile.alloc_fragment : memref<4xf16, #tile.scope<fragment>>
    tile.reduce %h -> %hm {kind = #tile.reduce<max>, dim = 1, clear, nan_propagate} : memref<4x8xf16, #tile.scope<fragment>> -> memref<4xf16, #tile.scope<fragment>>
    tile.copy %hm[%c0] [4] to %q[%c0] [4] : memref<4xf16, #tile.scope<fragment>> to memref<4xf16>
  }
  return
}

// -----

// A reverse cumsum walks the dimension from its end and carries the sum.
// CHECK-LABEL: func.func @cumsum
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %c16 step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32)
// CHECK:   %[[POS:.+]] = arith.subi %c15, %[[I]] : index
// CHECK:   %[[X:.+]] = memref.load %[[BUF:.+]][%[[POS]]]
// CHECK:   %[[SUM:.+]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK:   memref.store %[[SUM]], %[[BUF]][%[[POS]]]
// CHECK:   scf.yield %[[SUM]] : f32
func.func @cumsum(%n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    tile.cumsum %s -> %s {dim = 0, reverse} : memref<16xf32, #tile.scope<shared>> -> memref<16xf32, #tile.scope<shared>>
  }
  return
}

// -----

// Atomic adds become guarded atomic read-modify-writes.
// CHECK-LABEL: func.func @atomic
// CHECK: %[[OK:.+]] = arith.cmpi ult, %[[I:.+]], %{{.+}} : index
// CHECK: scf.if %[[OK]] {
// CHECK:   memref.atomic_rmw addf %{{.+}}, %{{.+}}[%[[I]]] : (f32, memref<?xf32>) -> f32
func.func @atomic(%out: memref<?xf32>, %n: index) {
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %v = arith.constant 1.0 : f32
    tile.atomic_add %v -> %out[%bx] : f32 -> memref<?xf32>
  }
  return
}

// -----

// Parallel and pipelined loops become scf.for; their bodies move inside and
// their tile-scoped loads and stores lose the scope.
// CHECK-LABEL: func.func @loops
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK:   scf.for %[[I:.+]] = %{{.+}} to %c8
// CHECK:     %[[X:.+]] = memref.load %[[F:.+]][%[[I]]] : memref<8xf32>
// CHECK:     %[[Y:.+]] = math.exp %[[X]] : f32
// CHECK:     memref.store %[[Y]], %[[F]][%[[I]]] : memref<8xf32>
func.func @loops(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%n) threads(128) {
    %f = tile.alloc_fragment : memref<8xf32, #tile.scope<fragment>>
    tile.pipelined %k = %c0 to %n step %c1 num_stages = 3 {
      tile.parallel (%i) in (8) {
        %x = memref.load %f[%i] : memref<8xf32, #tile.scope<fragment>>
        %y = math.exp %x : f32
        memref.store %y, %f[%i] : memref<8xf32, #tile.scope<fragment>>
      }
    }
  }
  return
}

// -----

// Prints go through printf with the block index; raster swizzles and layout
// annotations have no effect on the CPU.
// CHECK-LABEL: llvm.mlir.global internal constant @__tile_print_fmt_0("block (%lld, %lld, %lld) thread 0: x = 100%% %g\0A\00")
// CHECK: llvm.func @printf(!llvm.ptr, ...) -> i32
// CHECK-LABEL: func.func @print
// CHECK-NOT: tile.use_swizzle
// CHECK-NOT: tile.annotate_layout
// CHECK: scf.for %[[BY:.+]] =
// CHECK:   scf.for %[[BX:.+]] =
// CHECK:     %[[X:.+]] = arith.index_cast %[[BX]] : index to i64
// CHECK:     %[[Y:.+]] = arith.index_cast %[[BY]] : index to i64
// CHECK:     llvm.call @printf(%{{.+}}, %[[X]], %[[Y]], %{{.+}}, %{{.+}}) vararg
func.func @print(%n: index) {
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(128) {
    tile.use_swizzle 4
    %s = tile.alloc_shared : memref<16xf32, #tile.scope<shared>>
    tile.annotate_layout %s (#tile.swizzle<64>) : memref<16xf32, #tile.scope<shared>>
    %v = arith.constant 2.0 : f32
    tile.print %v {msg = "x = 100%"} : f32
  }
  return
}

// -----

// Device asserts call the runtime's __tile_assert_fail with the message,
// the file and line of their location (the innermost file position: the
// macro's line, not its caller's), the function and the block (padded to 3
// dimensions); equal strings share one global. Per element inside a
// parallel loop, once per block outside.
// CHECK-DAG: llvm.mlir.global internal constant @[[FUNC:.+]]("check\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[FILE:.+]]("kernel.py\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[MSG:.+]]("X must be non-negative\00")
// CHECK-DAG: llvm.func @__tile_assert_fail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64, i64, i64)
// CHECK-LABEL: func.func @check
// CHECK-DAG: %[[Z:.+]] = arith.constant 0 : i64
// CHECK-DAG: %[[F:.+]] = llvm.mlir.addressof @[[FUNC]] : !llvm.ptr
// CHECK-DAG: %[[P:.+]] = llvm.mlir.addressof @[[FILE]] : !llvm.ptr
// CHECK-DAG: %[[M:.+]] = llvm.mlir.addressof @[[MSG]] : !llvm.ptr
// CHECK-DAG: %[[L12:.+]] = arith.constant 12 : i32
// CHECK-DAG: %[[L20:.+]] = arith.constant 20 : i32
// CHECK: scf.for %[[BY:.+]] =
// CHECK:   scf.for %[[BX:.+]] =
// CHECK:     scf.for %[[I:.+]] =
// CHECK:       %[[V:.+]] = memref.load %{{.+}}[%[[I]]]
// CHECK:       %[[OK:.+]] = arith.cmpf oge, %[[V]]
// CHECK:       %[[BAD:.+]] = arith.xori %[[OK]], %true : i1
// CHECK:       scf.if %[[BAD]] {
// CHECK:         %[[X:.+]] = arith.index_cast %[[BX]] : index to i64
// CHECK:         %[[Y:.+]] = arith.index_cast %[[BY]] : index to i64
// CHECK:         llvm.call @__tile_assert_fail(%[[M]], %[[P]], %[[L12]], %[[F]], %[[X]], %[[Y]], %[[Z]])
// CHECK:     %[[OUT:.+]] = arith.cmpi uge, %[[BX]], %{{.+}} : index
// CHECK:     scf.if %[[OUT]] {
// CHECK:       llvm.call @__tile_assert_fail(%[[M]], %[[P]], %[[L20]], %[[F]], %{{.+}}, %{{.+}}, %[[Z]])
// CHECK-NOT: tile.
func.func @check(%X: memref<64xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  tile.kernel blocks(%bx, %by) in (%n, %n) threads(64) {
    tile.parallel (%i) in (64) {
      %v = memref.load %X[%i] : memref<64xf32>
      %ok = arith.cmpf oge, %v, %zero : f32
      tile.device_assert %ok, "X must be non-negative" loc(callsite("kernel.py":12:9 at "caller.py":3:1))
    }
    %in = arith.cmpi ult, %bx, %n : index
    tile.device_assert %in, "X must be non-negative" loc("kernel.py":20:5)
  }
  return
}

// -----

// The program's own element accesses are bounds-checked: a load at a
// computed index into a dynamic tensor compares the index (unsigned, so
// negative ones fail too) with the tensor's extent and calls the runtime's
// assertion handler when it is outside, before the load. The store at the
// parallel loop's own variable into a buffer of the loop's extent needs no
// check.
// CHECK-LABEL: func.func @checked_load
// CHECK: %[[DIM:.+]] = memref.dim %{{.+}}, %{{.+}} : memref<?xf32>
// CHECK: %[[BAD:.+]] = arith.cmpi uge, %{{.+}}, %[[DIM]] : index
// CHECK: scf.if %[[BAD]] {
// CHECK: llvm.call @__tile_assert_fail
// CHECK: memref.load
// CHECK-NOT: llvm.call @__tile_assert_fail
// CHECK: memref.store
func.func @checked_load(%A: memref<?xf32>, %B: memref<64xf32>, %k: index) {
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(32) {
    tile.parallel (%i) in (64) {
      %j = arith.addi %i, %k : index
      %v = memref.load %A[%j] : memref<?xf32>
      memref.store %v, %B[%i] : memref<64xf32>
    }
  }
  return
}

// -----

// Rounding toward zero on the CPU: the nearest sum, its exact residual
// (TwoSum in f64 for f32), and a step down the magnitude bits when the sum
// was rounded away from zero. The parts are marked exact (not contracted).
// CHECK-LABEL: func.func @ieee_rz
// CHECK: %[[R:.+]] = arith.addf %[[A:.+]], %[[B:.+]] {tile.exact} : f32
// CHECK: arith.extf %[[R]] : f32 to f64
// CHECK: arith.addf %{{.+}}, %{{.+}} {tile.exact} : f64
// CHECK: arith.bitcast %[[R]] : f32 to i32
// CHECK: arith.select
func.func @ieee_rz(%n: index, %o: memref<1xf32>, %a: f32, %b: f32) {
  %c0 = arith.constant 0 : index
  tile.kernel blocks(%bx) in (%n) threads(32) {
    %x = tile.ieee add, rz %a, %b : f32, f32 -> f32
    memref.store %x, %o[%c0] : memref<1xf32>
  }
  return
}

// -----

// In a block of one thread, the thread index is 0.
// CHECK-LABEL: func.func @one_thread
// CHECK-NOT: tile.thread_id
// CHECK: memref.store %c0{{.*}}[%c0]
func.func @one_thread(%o: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tile.kernel blocks(%bx) in (%c1) threads(1) {
    %t = tile.thread_id : index
    memref.store %t, %o[%c0] : memref<1xindex>
  }
  return
}

// -----

// No asynchronous proxy reads shared memory on the CPU: the fence orders
// nothing and goes away.
// CHECK-LABEL: func.func @fence_proxy_async
// CHECK-NOT: tile.fence_proxy_async
// CHECK: memref.store
func.func @fence_proxy_async(%X: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  tile.kernel blocks(%bx) in (%c1) threads(64) {
    tile.fence_proxy_async
    memref.store %one, %X[%c0] : memref<64xf32>
  }
  return
}
