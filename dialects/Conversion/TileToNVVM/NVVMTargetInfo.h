//===- NVVMTargetInfo.h - NVIDIA targets of the GPU lowering ----*- C++ -*-===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#ifndef TILE_CONVERSION_TILETONVVM_NVVMTARGETINFO_H
#define TILE_CONVERSION_TILETONVVM_NVVMTARGETINFO_H

#include "dialects/Conversion/TileToGPU/TargetInfo.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir {
namespace tile {

/// An NVIDIA GPU (`#nvvm.target`): warps of 32, cp.async, mma.sync and
/// wgmma, TMA, mbarriers and warp specialization, PTX approximate math.
class NVVMTargetInfo : public GPUTargetInfo {
public:
  /// `chip`: the row of `target`'s chip. `tmaStore`: write
  /// warp-specialized epilogues through TMA stores. `loopTid`: loop bodies
  /// see an unhoistable copy of the thread index (loopThreadIndex).
  /// `producerRegs`: what a warp-specialized producer thread keeps.
  /// `slots`: the scratch regions ops take turns over (scratchSlots).
  NVVMTargetInfo(NVVM::NVVMTargetAttr target, const ChipInfo &chip,
                 bool tmaStore, bool loopTid, int64_t producerRegs,
                 int64_t slots = 1)
      : GPUTargetInfo(chip), target(target), tmaStore(tmaStore),
        loopTid(loopTid), producerRegs(producerRegs), slots(slots) {}

  Attribute getTargetAttr() const override { return target; }
  StringRef getPlatformName() const override { return "CUDA"; }
  Attribute getPrivateMemorySpace(MLIRContext *ctx) const override {
    return {};
  }
  bool stagesOutsideSwizzle() const override { return true; }
  bool hasAsyncCopy() const override { return true; }
  bool hasNamedBarriers() const override { return true; }
  int64_t scratchSlots() const override { return slots; }
  bool hasPairedF32AtomicAdd() const override;
  StringRef getMathIntrinsic(MathIntrinsic fn) const override;
  Value emitRoundedArith(OpBuilder &b, Location loc, IEEEKind kind,
                         RoundingMode mode,
                         ValueRange operands) const override;
  Value emitLibraryExpf(OpBuilder &b, Location loc, Value x) const override;

  Value emitGridDim(OpBuilder &b, Location loc, int d,
                    int64_t blockSize) const override;
  void emitBarrier(OpBuilder &b, Location loc, int64_t id,
                   int64_t threads) const override;
  void emitDivergentBlockBarrier(OpBuilder &b, Location loc,
                                 int64_t threads) const override;
  void emitAsyncCopy(OpBuilder &b, Location loc, Value dst, Value dstIdx,
                     Value src, ValueRange srcIdx, int64_t width, Value count,
                     bool bypassL1) const override;
  void emitAsyncCommit(OpBuilder &b, Location loc) const override;
  void emitAsyncWait(OpBuilder &b, Location loc,
                     int64_t pending) const override;
  void emitAsyncProxyFence(OpBuilder &b, Location loc) const override;
  Value loopThreadIndex(OpBuilder &b, Location loc, Value tid) const override;
  void emitBulkReadWait(KernelLowering &kl, OpBuilder &b,
                        bool withBarrier = true) const override;
  void emitPairedAtomicAdd(OpBuilder &b, Location loc, Value ptr, Value lo,
                           Value hi) const override;
  void finalizeKernel(gpu::GPUFuncOp func) const override;

  std::unique_ptr<KernelLowering>
  createLowering(KernelOp kernel, func::FuncOp func) const override;
  LogicalResult prepareKernel(KernelLowering &kl) const override;
  void annotateKernel(KernelLowering &kl, OpBuilder &b) const override;
  void emitKernelPrologue(KernelLowering &kl, OpBuilder &b) const override;
  void emitKernelEpilogue(KernelLowering &kl, OpBuilder &b) const override;
  void registerLowerings(LoweringTable &table) const override;
  LogicalResult checkSupported(Operation *op) const override {
    return success();
  }
  std::optional<LogicalResult> lowerBulkAtomicAdd(KernelLowering &kl,
                                                  AtomicAddOp op, OpBuilder &b,
                                                  IRMapping &map) const override;
  LogicalResult lowerGemm(KernelLowering &kl, GemmOp op, OpBuilder &b,
                          const Buffer &a, const Buffer &bb, const Buffer &c,
                          ArrayRef<int64_t> aRegs) const override;
  LogicalResult lowerGemmSp(KernelLowering &kl, GemmSpOp op, OpBuilder &b,
                            const Buffer &a, const Buffer &e, const Buffer &bb,
                            const Buffer &c) const override;
  void emitAsyncDrain(KernelLowering &kl, OpBuilder &b) const override;
  void emitAssertFailure(KernelLowering &kl, Location at, StringRef msg,
                         OpBuilder &b, Value failed) const override;
  Value emitTimeNs(OpBuilder &b, Location loc) const override;
  void emitSignal(OpBuilder &b, Location loc, Value ptr, Value value,
                  SignalMode mode) const override;
  Value emitAcquireLoad(OpBuilder &b, Location loc, Value ptr,
                        Type type) const override;
  void emitAfterAcquire(OpBuilder &b, Location loc) const override;

  // Lanes and warps (ThreadOps.cpp of the target's folder).
  StringRef deviceSyncScope() const override;
  Value emitLaneId(OpBuilder &b, Location loc) const override;
  Value emitShuffle(OpBuilder &b, Location loc, ShuffleKind kind, Value v,
                    Value offset, Value width, Value mask) const override;
  Value emitBallot(OpBuilder &b, Location loc, Value pred,
                   Value mask) const override;
  Value emitVote(OpBuilder &b, Location loc, bool all, Value pred,
                 Value mask) const override;
  Value emitActiveMask(OpBuilder &b, Location loc) const override;
  Value emitMatch(OpBuilder &b, Location loc, MatchKind kind, Value v,
                  Value mask) const override;
  void emitSyncWarp(OpBuilder &b, Location loc, Value mask) const override;
  Value emitBlockVote(OpBuilder &b, Location loc, BlockVoteKind kind,
                      Value pred) const override;
  Value emitElectOne(OpBuilder &b, Location loc) const override;
  void emitThreadExit(OpBuilder &b, Location loc) const override;
  void emitPartialBarrier(OpBuilder &b, Location loc, Value id, Value threads,
                          bool arrive) const override;
  void emitPdl(OpBuilder &b, Location loc, bool trigger) const override;
  void emitGridSync(KernelLowering &kl, OpBuilder &b) const override;
  bool hasClusters() const override { return chip.tma; }
  void emitClusterBarrier(OpBuilder &b, Location loc,
                          ClusterStep step) const override;
  Value emitClusterRank(OpBuilder &b, Location loc) const override;
  void emitRemoteArrive(OpBuilder &b, Location loc, Value barrier,
                        Value rank) const override;

private:
  NVVM::NVVMTargetAttr target;
  bool tmaStore;
  bool loopTid;
  int64_t producerRegs;
  int64_t slots;
};

} // namespace tile
} // namespace mlir

#endif // TILE_CONVERSION_TILETONVVM_NVVMTARGETINFO_H
