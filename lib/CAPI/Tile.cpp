//===- Tile.cpp - C API of tilelang-mlir ----------------------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/CAPI/Tile.h"

#include "dialects/InitAll.h"
#include "dialects/Tile/IR/TileDialect.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/IR/DialectRegistry.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Tile, tile, mlir::tile::TileDialect)

void tileRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::tile::registerAllDialects(*unwrap(registry));
}

void tileRegisterAllPasses(void) {
  static std::once_flag once;
  std::call_once(once, []() { mlir::tile::registerAllPasses(); });
}
