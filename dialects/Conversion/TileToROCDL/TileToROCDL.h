//===- TileToROCDL.h - lower tile programs to AMD GPU kernels ---*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOROCDL_TILETOROCDL_H
#define TILE_CONVERSION_TILETOROCDL_TILETOROCDL_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace tile {

#define GEN_PASS_DECL_CONVERTTILETOROCDL
#include "dialects/Conversion/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETOROCDL_TILETOROCDL_H
