//===- BufferUtils.cpp - tile buffers seen through their views ------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/BufferUtils.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::tile;

Value mlir::tile::viewSource(Value v) {
  while (true) {
    if (auto sub = v.getDefiningOp<memref::SubViewOp>())
      v = sub.getSource();
    else if (auto cast = v.getDefiningOp<memref::CastOp>())
      v = cast.getSource();
    else
      return v;
  }
}

Value mlir::tile::sharedRoot(Value v) {
  Value root = viewSource(v);
  return isInScope(root.getType(), MemoryScope::shared) ? root : Value();
}

AllocSharedOp mlir::tile::sharedAllocOf(Value v) {
  return viewSource(v).getDefiningOp<AllocSharedOp>();
}
