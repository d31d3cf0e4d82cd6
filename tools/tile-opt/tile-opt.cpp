//===- tile-opt.cpp - tile dialect optimizer driver -----------------------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::tile::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::tile::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tilelang-mlir optimizer driver\n", registry));
}
