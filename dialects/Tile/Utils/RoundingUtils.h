//===- RoundingUtils.h - arithmetic in a chosen rounding --------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// tile.ieee without instructions that round in a chosen direction (the CPU,
// AMD GPUs): the round-to-nearest result of the operation, the sign of its
// exact residual (TwoSum, an fma remainder; f32 operations through f64,
// where products and remainders are exact), and one ulp's step where the
// direction asks. Overflow steps back from infinity to the largest finite
// value where the direction rounds toward zero; an exact zero sum is -0
// when rounding toward -inf (IEEE 754's rule).
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_ROUNDINGUTILS_H
#define TILE_UTILS_ROUNDINGUTILS_H

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"

namespace mlir {
namespace tile {

/// Marks the float adds, subtracts and multiplies of these computations:
/// a target that lets products and sums contract into fma (NVVM's
/// finalizeKernel) leaves them alone, as CUDA never fuses __fmul_rn.
constexpr const char *kExactAttrName = "tile.exact";

/// The result of tile.ieee `kind` in direction `mode` on `operands`, with
/// arith and math operations only.
Value emitRoundedArith(OpBuilder &b, Location loc, IEEEKind kind,
                       RoundingMode mode, ValueRange operands);

/// The next float after `x` toward +inf (`up`) or -inf; NaN and the
/// infinity in that direction are left alone.
Value nextFloat(OpBuilder &b, Location loc, Value x, bool up);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_ROUNDINGUTILS_H
