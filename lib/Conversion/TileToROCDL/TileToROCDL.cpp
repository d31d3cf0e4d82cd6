//===- TileToROCDL.cpp - lower tile programs to AMD GPU kernels -----------===//
//
// Part of tilelang-mlir.
//
// The pass `convert-tile-to-rocdl`: the target-neutral lowering
// (lib/Conversion/TileToGPU) over a ROCDLTargetInfo.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToROCDL/TileToROCDL.h"
#include "dialects/Conversion/TileToROCDL/ROCDLTargetInfo.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_CONVERTTILETOROCDL
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {
struct ConvertTileToROCDLPass
    : public tile::impl::ConvertTileToROCDLBase<ConvertTileToROCDLPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Wave64 and MFMA 32x32x8 (bf16_1k) are what the lowering assumes: the
    // AMD chips of the chip table have both.
    const ChipInfo *info = lookupChip(chip);
    if (!info || info->vendor != ChipVendor::AMD || info->warpSize != 64 ||
        !info->mfma) {
      module.emitError("convert-tile-to-rocdl supports the CDNA chips ")
          << knownChips(ChipVendor::AMD) << " (wave64 with MFMA), got "
          << chip;
      return signalPassFailure();
    }
    std::string text = "#rocdl.target<O = 3, chip = \"" + chip + "\">";
    auto target = dyn_cast_or_null<ROCDL::ROCDLTargetAttr>(
        parseAttribute(text, &getContext()));
    if (!target) {
      module.emitError("invalid ROCDL target ") << text;
      return signalPassFailure();
    }
    if (failed(lowerTileKernels(module, ROCDLTargetInfo(target, *info))))
      signalPassFailure();
  }
};
} // namespace
