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
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <mutex>

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Tile, tile, mlir::tile::TileDialect)

void tileRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::tile::registerAllDialects(*unwrap(registry));
}

void tileRegisterAllPasses(void) {
  static std::once_flag once;
  std::call_once(once, []() { mlir::tile::registerAllPasses(); });
}

bool tileTranslateToLLVMIR(MlirOperation module, MlirStringCallback callback,
                           void *userData) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(unwrap(module), context);
  if (!llvmModule)
    return false;
  mlir::detail::CallbackOstream stream(callback, userData);
  llvmModule->print(stream, nullptr);
  stream.flush();
  return true;
}

int tileOptMain(int argc, char **argv) {
  tileRegisterAllPasses(); // once per process (Python may have done it)
  mlir::DialectRegistry registry;
  mlir::tile::registerAllDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "tilelang-mlir optimizer driver\n", registry));
}
