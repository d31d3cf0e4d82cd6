//===- TileToNVVM.cpp - lower tile programs to NVIDIA GPU kernels ---------===//
//
// Part of tilelang-mlir.
//
// The pass `convert-tile-to-nvvm`: the target-neutral lowering
// (lib/Conversion/TileToGPU) over an NVVMTargetInfo.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToNVVM/TileToNVVM.h"
#include "dialects/Conversion/TileToNVVM/NVVMTargetInfo.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_CONVERTTILETONVVM
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

/// `features` with its PTX version (`+ptxNN`) raised to at least `version`.
static std::string withPtxAtLeast(StringRef features, int64_t version) {
  SmallVector<StringRef> parts;
  features.split(parts, ',', -1, /*KeepEmpty=*/false);
  std::string out;
  bool found = false;
  for (StringRef part : parts) {
    std::string p = part.str();
    int64_t v;
    if (part.consume_front("+ptx") && !part.getAsInteger(10, v)) {
      found = true;
      p = "+ptx" + std::to_string(std::max(v, version));
    }
    out += (out.empty() ? "" : ",") + p;
  }
  if (!found)
    out += (out.empty() ? "+ptx" : ",+ptx") + std::to_string(version);
  return out;
}

namespace {
struct ConvertTileToNVVMPass
    : public tile::impl::ConvertTileToNVVMBase<ConvertTileToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The chip's facts come from the chip table; LLVM's NVPTX backend aborts
    // on chips it does not know, so a chip missing from it is refused here.
    const ChipInfo *info = lookupChip(chip);
    if (!info || info->vendor != ChipVendor::NVIDIA) {
      module.emitError("convert-tile-to-nvvm supports the NVIDIA chips ")
          << knownChips(ChipVendor::NVIDIA) << ", got " << chip;
      return signalPassFailure();
    }
    // Sparse wgmma on floating-point types needs PTX ISA 8.2.
    std::string ptx = features;
    module.walk([&](GemmSpOp g) {
      if (g->hasAttr("wgmma"))
        ptx = withPtxAtLeast(ptx, 82);
    });
    std::string text = "#nvvm.target<O = 3, chip = \"" + chip +
                       "\", features = \"" + ptx + "\">";
    auto target = dyn_cast_or_null<NVVM::NVVMTargetAttr>(
        parseAttribute(text, &getContext()));
    if (!target) {
      module.emitError("invalid NVVM target ") << text;
      return signalPassFailure();
    }
    // setmaxnreg takes multiples of 8 from 24 to 256.
    if (producerRegisters < 24 || producerRegisters > 256 ||
        producerRegisters % 8) {
      module.emitError("convert-tile-to-nvvm: producer-registers must be a "
                       "multiple of 8 from 24 to 256, got ")
          << static_cast<int64_t>(producerRegisters);
      return signalPassFailure();
    }
    if (scratchSlots < 1 || scratchSlots > 4) {
      module.emitError("convert-tile-to-nvvm: scratch-slots must be 1 to 4, "
                       "got ")
          << static_cast<int64_t>(scratchSlots);
      return signalPassFailure();
    }
    if (failed(lowerTileKernels(
            module, NVVMTargetInfo(target, *info, tmaStore, loopThreadIndex,
                                   producerRegisters, scratchSlots))))
      signalPassFailure();
  }
};
} // namespace
