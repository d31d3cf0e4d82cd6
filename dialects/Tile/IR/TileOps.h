//===- TileOps.h - tile dialect operations ----------------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_IR_TILEOPS_H
#define TILE_IR_TILEOPS_H

#include "dialects/Tile/IR/TileDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace tile {

/// Limits the verifiers enforce so that every pass runs in bounded time and
/// memory: layout inference, the GPU lowerings and `tile-print-layouts` do
/// work proportional to the elements of a tile buffer or the iterations of a
/// `tile.parallel`. They are far above what any GPU holds on chip (an SM has
/// 2^16 32-bit registers and at most 228 KiB of shared memory), and the op
/// docs state them.
namespace limits {
/// Elements of one tile.alloc_shared buffer.
constexpr int64_t kSharedElements = int64_t(1) << 20;
/// Elements of one tile.alloc_fragment buffer (all threads together).
constexpr int64_t kFragmentElements = int64_t(1) << 17;
/// Elements of one tile.alloc_local buffer (per thread).
constexpr int64_t kLocalElements = int64_t(1) << 16;
/// Iterations of one tile.parallel loop nest: a loop over the largest
/// shared buffer (past a thread's register budget, each thread runs its
/// iterations as a loop).
constexpr int64_t kParallelIterations = kSharedElements;
/// `num_stages` of a tile.pipelined loop.
constexpr int64_t kPipelineStages = 32;
/// Elements of a fragment (iterations of a parallel loop) one thread holds
/// in the layout inference gives it (checked by tile-layout-inference: the
/// GPU lowerings emit code per register).
constexpr int64_t kRegistersPerThread = 1024;
/// Multiply-adds one thread does for a gemm that runs without tensor cores
/// (no `warp_partition`/`wgmma`/`mfma`): the lowering emits them one by one
/// and LLVM unrolls them (4096 take about 7 s to compile for sm_80).
constexpr int64_t kSimtGemmMacsPerThread = 4096;
/// `timeout_ms` of a tile.wait: its poll counts int64 nanoseconds (about
/// 292 years).
constexpr int64_t kWaitTimeoutMs = INT64_MAX / 1000000;
} // namespace limits

/// `shape` without its unit (extent 1) dimensions: the shape in which the
/// two regions of a tile.copy must agree, and the iteration space of the
/// copy's lowering.
SmallVector<int64_t> dropUnitDims(ArrayRef<int64_t> shape);

} // namespace tile
} // namespace mlir

#define GET_OP_CLASSES
#include "dialects/Tile/IR/TileOps.h.inc"

namespace mlir {
namespace tile {
/// The threads that run `op`'s tile operations: its tile.role's, or the
/// whole block's.
int64_t threadsOf(Operation *op);

/// The file and line lowerings report for `loc`: its first file position
/// ("<unknown>" and 0 without one).
std::pair<StringRef, unsigned> sourcePositionOf(Location loc);

/// The function-argument attribute that marks the local part of a
/// symmetric buffer (the operand `tile.peer` views on other ranks).
constexpr StringLiteral kSymmetricAttrName = "tile.symmetric";

/// The discardable attribute of an asynchronous tile.copy that the
/// software pipeliner made: its commit groups, waits and barriers order it,
/// so tile-insert-barriers leaves it alone (the program's own asynchronous
/// copies land at its waits and are ordered there).
constexpr StringLiteral kPipelineOrderedAttr = "tile.pipeline_ordered";

/// The discardable unit attribute of a tile.gemm written as T.wgmma_gemm:
/// on wgmma targets it must run on wgmma (tile-layout-inference refuses it
/// otherwise, as TileLang does, instead of falling back to mma.sync).
constexpr StringLiteral kRequireWgmmaAttr = "tile.require_wgmma";

/// The discardable unit attribute of a memref.load that reads the element a
/// store then rewrites in part (the byte of a 4-bit element): a write, for
/// tile-check-uninitialized.
constexpr StringLiteral kPartialWriteAttr = "tile.partial_write";

/// The buffer a flag or view is of: a `tile.peer`'s local buffer, else
/// `v` itself.
Value symmetricRoot(Value v);

/// Marks `kernel`: the automatic schedulers (warp specialization,
/// pipelining) stepped aside for its tile.role ops; the attribute says so
/// in the lower trace.
inline void markExplicitRoles(KernelOp kernel) {
  kernel->setAttr("tile.explicit_roles",
                  StringAttr::get(kernel.getContext(),
                                  "the program gives threads roles (tile.role): "
                                  "no automatic warp specialization; "
                                  "tile.pipelined loops run as plain loops"));
}
} // namespace tile
} // namespace mlir

#endif // TILE_IR_TILEOPS_H
