//===- Tile.h - C API of tilelang-mlir ----------------------------*- C -*-===//
//
// Part of tilelang-mlir.
//
// The C entry points the Python module uses: registration of the tile dialect
// with everything our pipelines need.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CAPI_TILE_H
#define TILE_CAPI_TILE_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Tile, tile);

/// Registers the tile dialect, the upstream dialects it lowers to, their
/// extensions and LLVM IR translations into `registry`.
MLIR_CAPI_EXPORTED void tileRegisterAllDialects(MlirDialectRegistry registry);

/// Registers the tile passes and the upstream passes our pipelines name.
/// Idempotent.
MLIR_CAPI_EXPORTED void tileRegisterAllPasses(void);

/// Translates `module` (in the LLVM dialect, with translations registered)
/// to LLVM IR and calls `callback` with its text. Returns false, with the
/// reason emitted as a diagnostic on the module, on failure.
MLIR_CAPI_EXPORTED bool tileTranslateToLLVMIR(MlirOperation module,
                                              MlirStringCallback callback,
                                              void *userData);

/// The `tile-opt` driver: parses `argv` as mlir-opt does, with every
/// dialect and pass of tilelang-mlir registered; returns the exit code.
MLIR_CAPI_EXPORTED int tileOptMain(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif // TILE_CAPI_TILE_H
