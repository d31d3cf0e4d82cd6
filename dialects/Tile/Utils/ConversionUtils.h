//===- ConversionUtils.h - element type conversions -------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// One set of rules for converting elements between types, used by every
// lowering (TileToSCF for the CPU, TileToNVVM/ROCDL for GPUs) and by the
// `tile-legalize-conversions` pass that gives the frontend's casts the same
// meaning:
//
//   float  -> float   round to nearest even (f16 <-> bf16 and fp8 <-> fp8
//                     through f32)
//   int    -> float   round to nearest even; unsigned and bool sources are
//                     read as unsigned
//   float  -> int     truncate toward zero, then saturate: values beyond the
//                     range clamp to the type's minimum or maximum, NaN
//                     becomes 0 (PTX's cvt.rzi rule; LLVM's fptosi alone
//                     would give poison, which x86 turns into wrap-around)
//   int    -> int     widening sign-extends (zero-extends unsigned and bool
//                     sources), narrowing keeps the low bits (two's
//                     complement wrap, as in C and NumPy)
//   any    -> bool    x != 0 (NaN is true)
//
// Signless MLIR integers are signed. The logical element type of unsigned
// and boolean buffers, and the type that stores it (`storageTypeOf`,
// `isLogicalTypeOf`), are the dialect's rules: dialects/Tile/IR/TileTypes.h.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_CONVERSIONUTILS_H
#define TILE_UTILS_CONVERSIONUTILS_H

#include "dialects/Tile/IR/TileTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace mlir {
namespace tile {

/// Converts `v` (a scalar or a vector; its elements hold values of the
/// logical type `from`, stored as `storageTypeOf(from)` or, for i1, as i1 or
/// i8) to the logical type `to` by the rules above. The result's elements
/// have type `toStorage` (default `storageTypeOf(to)`); a bool result stored
/// in i8 is 0 or 1.
Value convertElements(OpBuilder &b, Location loc, Value v, Type from, Type to,
                      Type toStorage = {});

/// Converts with signless (signed) integer semantics: `from` is v's element
/// type and `to` the result's.
Value convertElements(OpBuilder &b, Location loc, Value v, Type to);

/// The saturating float-to-integer conversion of the rules above for a
/// float (or vector of float) `v` into the signless integer type `to` (its
/// element type for vectors), reading `to` as unsigned when `isUnsigned`.
Value saturatingFloatToInt(OpBuilder &b, Location loc, Value v, Type to,
                           bool isUnsigned);

/// Marks an fptosi/fptoui whose operand is already in range (the core of a
/// saturating conversion), so that `tile-legalize-conversions` leaves it.
constexpr const char *kSaturatedAttrName = "tile.saturated";

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_CONVERSIONUTILS_H
