//===- FinalizeKernelParams.cpp - tensor maps as grid constants -----------===//
//
// Part of tilelang-mlir.
//
// The pass `tile-finalize-kernel-params`, run after convert-gpu-to-nvvm:
// the tensor-map parameters that convert-tile-to-nvvm put first become
// 128-byte by-value `__grid_constant__` parameters.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToNVVM/TileToNVVM.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEFINALIZEKERNELPARAMS
#include "dialects/Conversion/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {
struct TileFinalizeKernelParamsPass
    : public tile::impl::TileFinalizeKernelParamsBase<
          TileFinalizeKernelParamsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    getOperation().walk([&](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() == 3 && array && array.getNumElements() == 0 &&
          global.getSymName().starts_with("__dynamic_shmem__") &&
          !global.getValueOrNull() && global.getInitializerRegion().empty())
        global.setLinkage(LLVM::Linkage::External);
    });
    WalkResult result = getOperation().walk([&](LLVM::LLVMFuncOp fn) {
      auto count = fn->getAttrOfType<IntegerAttr>("tile.tensormap_args");
      if (!count)
        return WalkResult::advance();
      int64_t n = count.getInt();
      if (n < 0 || n > static_cast<int64_t>(fn.getNumArguments())) {
        fn.emitError("tile.tensormap_args = ")
            << n << " must be in [0, " << fn.getNumArguments()
            << "] (the leading pointer arguments that hold tensor maps)";
        return WalkResult::interrupt();
      }
      for (int64_t i = 0; i < n; ++i) {
        if (!isa<LLVM::LLVMPointerType>(fn.getArgumentTypes()[i])) {
          fn.emitError("tile.tensormap_args: argument ")
              << i << " holds a tensor map and must be an !llvm.ptr, got "
              << fn.getArgumentTypes()[i];
          return WalkResult::interrupt();
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(LLVM::LLVMArrayType::get(
                          IntegerType::get(ctx, 8), 128)));
        fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      IntegerAttr::get(IntegerType::get(ctx, 64), 64));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      UnitAttr::get(ctx));
      }
      fn->removeAttr("tile.tensormap_args");
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
