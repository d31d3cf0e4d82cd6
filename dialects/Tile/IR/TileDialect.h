//===- TileDialect.h - tile dialect and attributes --------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_IR_TILEDIALECT_H
#define TILE_IR_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Tile/IR/TileDialect.h.inc"
#include "dialects/Tile/IR/TileEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Tile/IR/TileAttrs.h.inc"

namespace mlir {
namespace tile {

/// Returns the scope of a buffer type: std::nullopt for global memory (no
/// memory space), the scope for `#tile.scope<...>`. Fails on other memory
/// spaces, which the tile dialect does not know.
FailureOr<std::optional<MemoryScope>> getMemoryScope(MemRefType type);

/// Convenience: true if `type` is a memref in `scope`.
bool isInScope(Type type, MemoryScope scope);

/// True if `type` is a memref in global memory (no memory space).
bool isGlobal(Type type);

/// A printable name for the scope of `type` ("global", "shared", ...).
StringRef getScopeName(Type type);

/// True for the float8 element types tile programs store and convert
/// (f8E4M3FN, f8E5M2, f8E8M0FNU) but do not compute on: the element type
/// of `type`, or of a memref.
bool isStoredFloat8(Type type);

} // namespace tile
} // namespace mlir

#endif // TILE_IR_TILEDIALECT_H
