//===- ControlFlowUtils.h - building conditional code -----------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_CONTROLFLOWUTILS_H
#define TILE_UTILS_CONTROLFLOWUTILS_H

#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// Runs `fn` with a builder inside `scf.if %cond` (no else), or with `b`
/// itself when `cond` is null (always).
void guarded(OpBuilder &b, Location loc, Value cond,
             function_ref<void(OpBuilder &)> fn);

/// Whether `v` has the same value in every iteration of `loop`, as LLVM's
/// LICM would find: defined outside it, or computed inside it by pure
/// operations without regions from such values, at most `maxDepth`
/// operations deep.
bool isLoopInvariant(Value v, Operation *loop, int maxDepth);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_CONTROLFLOWUTILS_H
