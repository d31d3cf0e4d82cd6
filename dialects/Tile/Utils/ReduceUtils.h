//===- ReduceUtils.h - the arithmetic of tile.reduce ------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// One meaning for each reduction kind, shared by every lowering of
// tile.reduce (the CPU loops, the GPU's registers, shuffles and scratch).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_REDUCEUTILS_H
#define TILE_UTILS_REDUCEUTILS_H

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// The identity of `kind` on `type`: 0 for sums, -inf (the smallest
/// integer) for max, +inf (the largest integer) for min.
Value reduceIdentity(OpBuilder &b, Location loc, ReduceKind kind, Type type);

/// Combines an accumulated value with an element that went through
/// reduceInput already (sum, max or min; signed for integers).
Value reduceCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                    Value x);

/// An element as it enters the reduction: its absolute value for `abssum`
/// and `absmax`, itself otherwise.
Value reduceInput(OpBuilder &b, Location loc, ReduceKind kind, Value x);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_REDUCEUTILS_H
