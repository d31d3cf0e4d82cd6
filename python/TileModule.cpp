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
      "register_passes", []() { tileRegisterAllPasses(); },
      "Registers the tile passes and the upstream passes our pipelines use.");
}
