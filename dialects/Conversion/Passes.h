//===- Passes.h - tile conversion passes ------------------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_PASSES_H
#define TILE_CONVERSION_PASSES_H

#include "dialects/Conversion/TileToNVVM/TileToNVVM.h"
#include "dialects/Conversion/TileToROCDL/TileToROCDL.h"
#include "dialects/Conversion/TileToSCF/TileToSCF.h"

namespace mlir {
namespace tile {

#define GEN_PASS_REGISTRATION
#include "dialects/Conversion/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_PASSES_H
