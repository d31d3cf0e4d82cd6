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

/// Phase 2: expands a scheduled loop into prologue, steady state, epilogue.
/// `copiesFirst`: a step issues its copies before its consumers.
LogicalResult expandPipelinedLoop(PipelinedOp loop, bool copiesFirst = false);

#define GEN_PASS_REGISTRATION
#include "dialects/Tile/Transforms/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_TRANSFORMS_PASSES_H
