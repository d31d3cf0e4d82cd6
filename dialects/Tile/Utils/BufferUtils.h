//===- BufferUtils.h - tile buffers seen through their views ----*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// A tile program reaches a buffer through views: memref.subview (a tile of
// a stage, a slice of a shared buffer) and memref.cast. The passes that
// reason about buffers (barrier insertion, layout inference) and the GPU
// lowering (TMA copies) look through them to the allocation.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_UTILS_BUFFERUTILS_H
#define TILE_UTILS_BUFFERUTILS_H

#include "dialects/Tile/IR/TileOps.h"

#include "mlir/IR/Value.h"

namespace mlir {
namespace tile {

/// The value `v` views, through memref.subview and memref.cast: the
/// allocation or kernel argument underneath.
Value viewSource(Value v);

/// The shared buffer `v` views (a value in the shared scope), or null.
Value sharedRoot(Value v);

/// The tile.alloc_shared `v` views, or null.
AllocSharedOp sharedAllocOf(Value v);

} // namespace tile
} // namespace mlir

#endif // TILE_UTILS_BUFFERUTILS_H
