//===- Passes.h - peepholes on lowered NVIDIA code --------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_NVVM_TRANSFORMS_PASSES_H
#define TILE_NVVM_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace tile {

#define GEN_PASS_DECL
#include "dialects/NVVM/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/NVVM/Transforms/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // TILE_NVVM_TRANSFORMS_PASSES_H
