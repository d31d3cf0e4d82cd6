//===- Passes.h - tile dialect transformations ------------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_TRANSFORMS_PASSES_H
#define TILE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace tile {
class PipelinedOp;

#define GEN_PASS_DECL
#include "dialects/Tile/Transforms/Passes.h.inc"

/// Phase 1 of software pipelining: writes `stage` and `order` on `loop`.
LogicalResult schedulePipelinedLoop(PipelinedOp loop);

/// How phase 2 orders a step's copies (tile-pipeline-expand's options).
struct PipelineExpandOptions {
  /// A step issues its copies before its consumers.
  bool copiesFirst = false;
  /// `num_stages - 1` slots: a step's copies go into the slot its own
  /// consumers read, each after the last of them and a barrier.
  bool reuseSlots = false;
  /// Each copy commits a group of its own, and each consumer waits only for
  /// the groups of the buffers it reads, right before it (a consumer's
  /// later buffers keep landing while it computes).
  bool groupPerCopy = false;
  /// The producers' copies become asynchronous (cp.async); false keeps
  /// them synchronous (TileLang's tl.enable_async_copy=False).
  bool asyncCopies = true;
};

/// Phase 2: expands a scheduled loop into prologue, steady state, epilogue.
LogicalResult expandPipelinedLoop(PipelinedOp loop,
                                  PipelineExpandOptions options = {});

#define GEN_PASS_REGISTRATION
#include "dialects/Tile/Transforms/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_TRANSFORMS_PASSES_H
