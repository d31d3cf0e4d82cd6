//===- ROCDLKernelLowering.h - AMD op families of the lowering --*- C++ -*-===//
//
// Part of tilelang-mlir.
//
// The kernel lowering for AMD targets: the target-neutral KernelLowering
// plus the MFMA gemm. ROCDLTargetInfo creates it and hands it the gemms.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_TILETOROCDL_ROCDLKERNELLOWERING_H
#define LIB_CONVERSION_TILETOROCDL_ROCDLKERNELLOWERING_H

#include "dialects/Conversion/TileToGPU/KernelLowering.h"

namespace mlir {
namespace tile {

class ROCDLKernelLowering : public KernelLowering {
public:
  using KernelLowering::KernelLowering;

  // MFMA (Mfma.cpp).
  LogicalResult gemmMfma(GemmOp op, OpBuilder &b, const Buffer &a,
                         const Buffer &bb, const Buffer &c);
};

/// The lowering ROCDLTargetInfo created (see ROCDLTargetInfo::createLowering).
inline ROCDLKernelLowering &rocdlLowering(KernelLowering &kl) {
  return static_cast<ROCDLKernelLowering &>(kl);
}

} // namespace tile
} // namespace mlir

#endif // LIB_CONVERSION_TILETOROCDL_ROCDLKERNELLOWERING_H
