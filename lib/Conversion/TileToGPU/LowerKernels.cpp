//===- LowerKernels.cpp - the GPU lowering of a module --------------------===//
//
// Part of tilelang-mlir.
//
// lowerTileKernels: builds the table of op lowerings (each family's
// entries, then the target's) and lowers the one tile.kernel of every
// function with it. See LoweringTable.h and KernelLowering.h.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Conversion/TileToGPU/LoweringTable.h"

using namespace mlir;
using namespace mlir::tile;

/// Every family's lowerings, then the target's (which may replace some).
static LoweringTable buildLoweringTable(const GPUTargetInfo &target) {
  LoweringTable table;
  registerKernelLowerings(table);
  registerBufferAccessLowerings(table);
  registerMathLowerings(table);
  registerThreadOpLowerings(table);
  registerAtomicAndPrintLowerings(table);
  registerParallelLowerings(table);
  registerCopyLowerings(table);
  registerGemmLowerings(table);
  registerReductionLowerings(table);
  registerSymmetricLowerings(table);
  target.registerLowerings(table);
  return table;
}

LogicalResult mlir::tile::lowerTileKernels(ModuleOp module,
                                           const GPUTargetInfo &target) {
  StringRef platform = target.getPlatformName();
  LoweringTable table = buildLoweringTable(target);
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  for (func::FuncOp func : funcs) {
    SmallVector<KernelOp> kernels;
    func.walk([&](KernelOp k) { kernels.push_back(k); });
    if (kernels.empty())
      continue;
    if (kernels.size() > 1)
      return kernels[1].emitOpError("a tile program for ")
             << platform << " targets may contain one T.Kernel";
    if (kernels[0]->getParentOp() != func.getOperation())
      return kernels[0].emitOpError(
                 "must be at the top level of its function on ")
             << platform << " targets";
    std::unique_ptr<KernelLowering> lowering =
        target.createLowering(kernels[0], func);
    lowering->lowerings = &table;
    if (failed(lowering->run()))
      return failure();
  }
  return success();
}
