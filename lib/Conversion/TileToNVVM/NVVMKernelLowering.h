//===- NVVMKernelLowering.h - NVIDIA op families of the lowering -*- C++
//-*-===//
//
// Part of tilelang-mlir.
//
// The kernel lowering for NVIDIA targets: the target-neutral KernelLowering
// plus the op families only NVIDIA GPUs have. NVVMTargetInfo creates it and
// hands it the ops of those families.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_TILETONVVM_NVVMKERNELLOWERING_H
#define LIB_CONVERSION_TILETONVVM_NVVMKERNELLOWERING_H

#include "dialects/Conversion/TileToGPU/KernelLowering.h"

namespace mlir {
namespace tile {

class NVVMKernelLowering : public KernelLowering {
public:
  using KernelLowering::KernelLowering;

  // mma.sync and mma.sp (MmaSync.cpp).
  LogicalResult gemmMma(GemmOp op, OpBuilder &b, const Buffer &a,
                        const Buffer &bb, const Buffer &c,
                        ArrayRef<int64_t> aRegs = {});
  Value ldmatrixA16(OpBuilder &b, const Buffer &a, Value m0, Value k0);
  Value ldmatrixB16(OpBuilder &b, const Buffer &bb, bool tb, Value k0, Value n0,
                    int64_t kRows, bool pair = false);
  Value gemmSpMetadata(OpBuilder &b, const Buffer &e, Value row0, int64_t k0,
                       bool pair);
  LogicalResult gemmSpMma(GemmSpOp op, OpBuilder &b, const Buffer &a,
                          const Buffer &e, const Buffer &bb, const Buffer &c);

  // wgmma, dense and sparse (Wgmma.cpp).
  LogicalResult gemmWgmma(GemmOp op, OpBuilder &b, const Buffer &a,
                          const Buffer &bb, const Buffer &c,
                          ArrayRef<int64_t> aRegs = {});
  LogicalResult gemmSpWgmma(GemmSpOp op, OpBuilder &b, const Buffer &a,
                            const Buffer &e, const Buffer &bb, const Buffer &c);
  Value wgmmaRegisterA(OpBuilder &b, Value acc, ArrayRef<Value> aRegs,
                       Value descB, int64_t n, Type elem, bool transB,
                       bool zeroAcc);
  SmallVector<Value> wgmmaAccumulators(OpBuilder &b, const Buffer &c,
                                       int64_t mTiles, int64_t regsPerTile,
                                       Type acc, bool clear);
  void storeWgmmaAccumulators(OpBuilder &b, const Buffer &c,
                              ArrayRef<Value> accs, int64_t regsPerTile);
  /// A descriptor, and the element offset it starts at (see
  /// wgmmaDescriptor).
  struct WgmmaDesc {
    Value desc, elems;
  };
  WgmmaDesc wgmmaDescriptor(OpBuilder &b, const Buffer &buf, bool kMajor,
                            Value row, Value col,
                            const WgmmaDesc *from = nullptr);
  bool takesTurns(GemmOp op);
  /// Named barrier `kTurnBarrier + w` orders the gemms of consumer
  /// warpgroup w after those of warpgroup w - 1 (ids 1 and 2 are the roles').
  static constexpr int64_t kTurnBarrier = 3;
  void turnBarrier(OpBuilder &b, int64_t shift, bool arrive);

  // TMA, mbarriers and warp specialization (TmaBarriersRoles.cpp).
  std::optional<LogicalResult> lowerNVVMSyncOp(Operation *op, OpBuilder &b,
                                               IRMapping &map, Context &ctx);
  LogicalResult lowerWarpSpecialize(WarpSpecializeOp op, OpBuilder &b,
                                    IRMapping &map, Context &ctx);
  LogicalResult collectTensorMaps();
  void chooseTmaStores();
  LogicalResult lowerTmaStore(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerTmaCopy(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerTmaReduce(AtomicAddOp op, OpBuilder &b, IRMapping &map);
  void initBarriers(OpBuilder &b);
  void clusterSync(OpBuilder &b);
  void useTensorMap(Operation *op, const TensorMap &m);
};

/// The lowering NVVMTargetInfo created (see NVVMTargetInfo::createLowering).
inline NVVMKernelLowering &nvvmLowering(KernelLowering &kl) {
  return static_cast<NVVMKernelLowering &>(kl);
}

} // namespace tile
} // namespace mlir

#endif // LIB_CONVERSION_TILETONVVM_NVVMKERNELLOWERING_H
