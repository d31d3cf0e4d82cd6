//===- TileToSCF.h - lower tile programs to serial loops --------*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETOSCF_TILETOSCF_H
#define TILE_CONVERSION_TILETOSCF_TILETOSCF_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;

namespace tile {

#define GEN_PASS_DECL_CONVERTTILETOSCF
#define GEN_PASS_DECL_TILESOFTWAREMATH
#define GEN_PASS_DECL_TILEPRECISEMATH
#include "dialects/Conversion/Passes.h.inc"

/// Converts memref types in a `#tile.scope` memory space to plain memrefs
/// (the CPU has one memory).
void populateTileToSCFTypeConversion(TypeConverter &converter);

/// Patterns that lower every tile op to scf loops and memref accesses.
void populateTileToSCFPatterns(TypeConverter &converter,
                               RewritePatternSet &patterns);

/// Lowers the per-thread and atomic ops (TileThreadOps.td) in place, for a
/// block run as one thread of control; fails on the warp-level ops, which
/// need a GPU.
LogicalResult expandThreadOpsForCPU(ModuleOp module);

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETOSCF_TILETOSCF_H
