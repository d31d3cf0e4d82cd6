//===- TileTypes.h - the dialect's element type rules -----------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// Buffers cannot say "unsigned" or "boolean stored as a byte" with their
// element type (signless MLIR integers are signed), so the tile ops that
// convert (tile.copy) carry the *logical* element type when it differs from
// the storage type: `ui8` over i8 storage, `i1` over i8 storage. These are
// the dialect's rules for that pair; the op verifiers check them, and the
// conversions (dialects/Tile/Utils/ConversionUtils.h) apply them.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_IR_TILETYPES_H
#define TILE_IR_TILETYPES_H

#include "mlir/IR/BuiltinTypes.h"

namespace mlir {
namespace tile {

/// The type that holds values of the logical element type `logical` in
/// registers: signless integers for unsigned ones (ui8 -> i8), the type
/// itself otherwise.
inline Type storageTypeOf(Type logical) {
  if (auto it = dyn_cast<IntegerType>(logical); it && !it.isSignless())
    return IntegerType::get(it.getContext(), it.getWidth());
  return logical;
}

/// Whether `logical` may be recorded as the logical type of buffer elements
/// of type `storage`: itself, an unsigned integer of the same width, or i1
/// over i8 (booleans stored as bytes).
inline bool isLogicalTypeOf(Type logical, Type storage) {
  if (logical == storage || (logical.isInteger(1) && storage.isInteger(8)))
    return true;
  auto it = dyn_cast<IntegerType>(logical);
  return it && it.isUnsigned() && storageTypeOf(logical) == storage;
}

} // namespace tile
} // namespace mlir

#endif // TILE_IR_TILETYPES_H
