//===- TileToNVVM.h - lower tile programs to NVIDIA GPU kernels -*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETONVVM_TILETONVVM_H
#define TILE_CONVERSION_TILETONVVM_TILETONVVM_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace tile {

#define GEN_PASS_DECL_CONVERTTILETONVVM
#define GEN_PASS_DECL_TILEFINALIZEKERNELPARAMS
#include "dialects/Conversion/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETONVVM_TILETONVVM_H
