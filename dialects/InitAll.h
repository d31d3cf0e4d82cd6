//===- InitAll.h - register every dialect and pass --------------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// The one place that says which dialects, extensions, translations and passes
// tilelang-mlir uses. Shared by `tile-opt`, the Python module and any later
// tool, so that all of them accept the same IR.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_INITALL_H
#define TILE_INITALL_H

namespace mlir {
class DialectRegistry;

namespace tile {

/// Registers the tile dialect and the upstream dialects it lowers to (func,
/// arith, math, scf, cf, memref, vector, index, affine, gpu, nvgpu, nvvm,
/// rocdl, llvm, ub), with the dialect extensions and LLVM IR translations
/// that the lowering pipelines need.
void registerAllDialects(DialectRegistry &registry);

/// Registers the tile passes and the upstream passes that our pipelines use,
/// so that they can be named in textual pass pipelines.
void registerAllPasses();

} // namespace tile
} // namespace mlir

#endif // TILE_INITALL_H
