//===- ReduceUtils.h - the arithmetic of tile.reduce ------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// One meaning for each reduction kind, shared by every lowering of
// tile.reduce (the CPU loops, the GPU's registers, shuffles and scratch) and
// of the scans (tile.cumsum, tile.cummax).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_REDUCEUTILS_H
#define TILE_UTILS_REDUCEUTILS_H

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// What a reduction computes: its kind, and the facts of the element type
/// that the signless MLIR type cannot say.
struct ReduceSpec {
  ReduceKind kind;
  /// max / min / absmax of f16 / bf16 elements return NaN when an operand
  /// is NaN (TileLang's nan_propagate); otherwise NaN operands are ignored.
  bool nanPropagate = false;
  /// Integer accumulators hold unsigned values (max / min compare unsigned,
  /// the identities are 0 and all ones, absolute values are the values).
  bool isUnsigned = false;
  /// The accumulator holds booleans (0 or 1): bitand's identity is 1.
  bool isBool = false;

  /// The spec of a tile.reduce.
  static ReduceSpec of(ReduceOp op);
  /// A spec from the kind and the logical accumulator type (ui32, i1, ...).
  static ReduceSpec of(ReduceKind kind, Type logicalAcc,
                       bool nanPropagate = false);
};

/// The identity of the reduction on `type` (the storage type of the
/// accumulator): 0 for sums, absmax, bitor and bitxor; -inf (the smallest
/// integer) for max, +inf (the largest integer) for min; all ones (true)
/// for bitand.
Value reduceIdentity(OpBuilder &b, Location loc, const ReduceSpec &spec,
                     Type type);

/// Combines an accumulated value with an element that went through
/// reduceInput already.
Value reduceCombine(OpBuilder &b, Location loc, const ReduceSpec &spec,
                    Value acc, Value x);

/// The type a reduction accumulates in before its result is stored in
/// `dstElement`: float32 for a float16 / bfloat16 sum or abssum (every
/// partial, on the CPU and on GPUs, is float32 and the result is rounded
/// once), `dstElement` itself otherwise (max / min are exact in any type).
Type reduceAccumulatorType(const ReduceSpec &spec, Type dstElement);

/// An element as it enters the reduction: its absolute value for `abssum`
/// and `absmax` (of signed and float elements), itself otherwise.
Value reduceInput(OpBuilder &b, Location loc, const ReduceSpec &spec,
                  Value x);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_REDUCEUTILS_H
