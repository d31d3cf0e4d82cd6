//===- PipelineUtils.h - helpers of the software pipeliner ------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TRANSFORMS_PIPELINEUTILS_H
#define TILE_TRANSFORMS_PIPELINEUTILS_H

#include "dialects/Tile/IR/TileOps.h"

namespace mlir {
namespace tile {

/// True if `op` is a copy from global to shared memory into a buffer used
/// only inside `loop`: a statement the pipeliner can issue ahead and
/// multi-buffer.
bool isPipelineProducer(PipelinedOp loop, Operation *op);

/// Calls `callback(user, def)` for every pair of statements of `loop` where
/// statement `user` uses (directly or through pure ops of the body) a
/// result of statement `def`.
void statementDependencies(PipelinedOp loop, ArrayRef<Operation *> statements,
                           function_ref<void(size_t user, size_t def)> callback);

/// Slot `slot` of `ring` (`type`'s buffers one after the other along a
/// leading dimension: a multi-buffered allocation) as a buffer of `type`'s
/// shape (a rank-reduced memref.subview).
Value ringSlotView(OpBuilder &b, Location loc, Value ring, Value slot,
                   MemRefType type);

} // namespace tile
} // namespace mlir

#endif // TILE_TRANSFORMS_PIPELINEUTILS_H
