//===- TileModule.cpp - the _tile Python extension ------------------------===//
//
// Part of tilelang-mlir.
//
// Registers the tile dialect (and everything our pipelines need) into the
// contexts of the embedded MLIR Python bindings; see
// tilelang_mlir/_mlir_libs/_site_initialize_0.py.
//
//===----------------------------------------------------------------------===//

#include "dialects/CAPI/Tile.h"

#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"

#include <string>

namespace nb = nanobind;

NB_MODULE(_tile, m) {
  m.doc() = "tilelang-mlir native module: dialect and pass registration";

  m.def(
      "register_dialects",
      [](MlirDialectRegistry registry) { tileRegisterAllDialects(registry); },
      nb::arg("registry"),
      "Registers the tile dialect and every dialect, extension and "
      "translation its pipelines use.");

  m.def(
      "translate_to_llvmir",
      [](MlirOperation module) {
        std::string text;
        auto append = [](MlirStringRef part, void *data) {
          static_cast<std::string *>(data)->append(part.data, part.length);
        };
        if (!tileTranslateToLLVMIR(module, append, &text))
          throw nb::value_error("translation to LLVM IR failed (see the "
                                "diagnostics emitted on the module)");
        return text;
      },
      nb::arg("module"),
      "Translates an LLVM-dialect module to LLVM IR text.");

  m.def(
      "register_passes", []() { tileRegisterAllPasses(); },
      "Registers the tile passes and the upstream passes our pipelines use.");
}
