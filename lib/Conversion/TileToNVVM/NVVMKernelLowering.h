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

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace tile {

/// Orders generic-proxy writes to shared memory before async-proxy reads
/// (NVVMTargetInfo::emitAsyncProxyFence).
inline void emitSharedProxyFence(OpBuilder &b, Location loc) {
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

/// A barrier over the block (`id` 0) or `bar.sync id, threads` (a named
/// barrier; NVVMTargetInfo::emitBarrier).
inline void emitNamedBarrier(OpBuilder &b, Location loc, int64_t id,
                             int64_t threads) {
  if (id == 0) {
    gpu::BarrierOp::create(b, loc);
    return;
  }
  auto i32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  };
  NVVM::BarrierOp::create(b, loc, Type(), i32(id), i32(threads),
                          NVVM::BarrierReductionAttr(), Value());
}

class NVVMKernelLowering : public KernelLowering {
public:
  /// `producerRegs`: what a thread of a warp-specialized kernel's producer
  /// keeps (NVVMTargetInfo's option).
  NVVMKernelLowering(KernelOp kernel, func::FuncOp func,
                     const GPUTargetInfo &target, int64_t producerRegs)
      : KernelLowering(kernel, func, target), producerRegs(producerRegs) {}

  int64_t producerRegs;

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
  LogicalResult lowerBarrierWait(BarrierWaitOp op, OpBuilder &b,
                                 IRMapping &map);
  LogicalResult lowerBarrierArrive(BarrierArriveOp op, OpBuilder &b,
                                   IRMapping &map);
  /// Waits until the bulk groups issued by the role's first thread have
  /// read shared memory; then (`withBarrier`) the role's threads
  /// synchronize (NVVMTargetInfo::emitBulkReadWait).
  void waitBulkReads(OpBuilder &b, bool withBarrier = true);
  /// The role's first thread waits for its bulk groups' reads.
  void leaderWaitsBulkReads(OpBuilder &b);
  LogicalResult lowerWarpSpecialize(WarpSpecializeOp op, OpBuilder &b,
                                    IRMapping &map, Context &ctx);
  LogicalResult collectTensorMaps();
  void chooseTmaStores();
  LogicalResult lowerTmaStore(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerTmaCopy(CopyOp op, OpBuilder &b, IRMapping &map);
  LogicalResult lowerTmaReduce(AtomicAddOp op, OpBuilder &b, IRMapping &map);
  /// A copy into another block of the cluster (tile.cluster_copy).
  LogicalResult lowerClusterCopy(ClusterCopyOp op, OpBuilder &b,
                                 IRMapping &map);
  /// Whether other blocks of the cluster arrive on barrier allocation
  /// `barriers` (T.mbarrier_arrive(bar, cta_id), a cluster copy through
  /// it): its waits then acquire at cluster scope.
  bool arrivedFromCluster(Value barriers);
  void initBarriers(OpBuilder &b);
  void clusterSync(OpBuilder &b);
  void useTensorMap(Operation *op, const TensorMap &m);
};

/// The ops of warp specialization, mbarriers and TMA copies
/// (TmaBarriersRoles.cpp), and the wgmma wait (Wgmma.cpp): what
/// NVVMTargetInfo adds to the table.
void registerTmaBarrierRoleLowerings(LoweringTable &table);
void registerWgmmaLowerings(LoweringTable &table);

/// The lowering NVVMTargetInfo created (see NVVMTargetInfo::createLowering).
inline NVVMKernelLowering &nvvmLowering(KernelLowering &kl) {
  return static_cast<NVVMKernelLowering &>(kl);
}

} // namespace tile
} // namespace mlir

#endif // LIB_CONVERSION_TILETONVVM_NVVMKERNELLOWERING_H
