//===- ROCDLTargetInfo.cpp - AMD targets of the GPU lowering --------------===//
//
// Part of tilelang-mlir.
//
// What the target-neutral lowering asks of an AMD CDNA GPU; the MFMA gemm
// it hands over is in Mfma.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToROCDL/ROCDLTargetInfo.h"
#include "ROCDLKernelLowering.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// Facts
//===----------------------------------------------------------------------===//

/// Per-thread storage goes to the private address space.
Attribute ROCDLTargetInfo::getPrivateMemorySpace(MLIRContext *ctx) const {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Private);
}

/// AMDGPU's intrinsics, and LLVM intrinsics the AMDGPU backend lowers
/// natively (MLIR's ROCDL conversion would send the math dialect's versions
/// to device-library calls, which this build cannot link).
StringRef ROCDLTargetInfo::getMathIntrinsic(MathIntrinsic fn) const {
  switch (fn) {
  case MathIntrinsic::exp2:
    return "llvm.amdgcn.exp2.f32";
  case MathIntrinsic::log2:
    return "llvm.amdgcn.log.f32";
  case MathIntrinsic::rsqrt:
    return "llvm.amdgcn.rsq.f32";
  case MathIntrinsic::sin:
    return "llvm.sin.f32";
  case MathIntrinsic::cos:
    return "llvm.cos.f32";
  case MathIntrinsic::floor:
    return "llvm.floor.f32";
  case MathIntrinsic::ceil:
    return "llvm.ceil.f32";
  case MathIntrinsic::rcp:
    return "llvm.amdgcn.rcp.f32";
  }
  llvm_unreachable("math intrinsic");
}

//===----------------------------------------------------------------------===//
// Emitters
//===----------------------------------------------------------------------===//

/// MLIR's ROCDL lowering of gpu.grid_dim calls the device library
/// (__ockl_get_num_groups), which is not linked: the HSA dispatch packet
/// holds the grid in work-items (u32 grid_size_x/y/z at bytes 12/16/20), a
/// multiple of the block size, which is static here.
Value ROCDLTargetInfo::emitGridDim(OpBuilder &b, Location loc, int d,
                                   int64_t blockSize) const {
  auto constant = LLVM::LLVMPointerType::get(b.getContext(), 4);
  Value packet = LLVM::CallIntrinsicOp::create(
                     b, loc, constant,
                     b.getStringAttr("llvm.amdgcn.dispatch.ptr"), ValueRange{})
                     .getResult(0);
  Value field = LLVM::GEPOp::create(b, loc, constant, b.getI8Type(), packet,
                                    ArrayRef<LLVM::GEPArg>{12 + 4 * d});
  Value items = LLVM::LoadOp::create(b, loc, b.getI32Type(), field,
                                     /*alignment=*/4, /*isVolatile=*/false,
                                     /*isNonTemporal=*/false,
                                     /*isInvariant=*/true);
  Value n = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), items);
  return blockSize == 1
             ? n
             : arith::DivUIOp::create(b, loc, n, cIdx(b, loc, blockSize))
                   .getResult();
}

/// Waves have no named barriers (no warp specialization): the block's.
void ROCDLTargetInfo::emitBarrier(OpBuilder &b, Location loc, int64_t id,
                                  int64_t threads) const {
  assert(id == 0 && "named barriers on an AMD target");
  gpu::BarrierOp::create(b, loc);
}

void ROCDLTargetInfo::emitAsyncCopy(OpBuilder &b, Location loc, Value dst,
                                    Value dstIdx, Value src, ValueRange srcIdx,
                                    int64_t width, Value count,
                                    bool bypassL1) const {
  llvm_unreachable("AMD targets have no asynchronous copies");
}

void ROCDLTargetInfo::emitPairedAtomicAdd(OpBuilder &b, Location loc, Value ptr,
                                          Value lo, Value hi) const {
  llvm_unreachable("AMD targets have no paired atomic adds");
}

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

std::unique_ptr<KernelLowering>
ROCDLTargetInfo::createLowering(KernelOp kernel, func::FuncOp func) const {
  return std::make_unique<ROCDLKernelLowering>(kernel, func, *this);
}

LogicalResult ROCDLTargetInfo::checkSupported(Operation *op) const {
  if (isa<WarpSpecializeOp>(op))
    return op->emitOpError("is warp-specialized through TMA and "
                           "transaction barriers (NVIDIA sm_90a), which ROCm "
                           "targets do not have");
  if (isa<BarrierWaitOp, BarrierArriveOp>(op))
    return op->emitOpError("uses a transaction barrier (T.alloc_barrier, an "
                           "NVIDIA mbarrier), which ROCm targets do not have");
  if (isa<PrintOp>(op))
    return op->emitError("T.print is not supported on ROCm targets yet "
                         "(device printf needs the ROCm device libraries)");
  if (auto gemm = dyn_cast<GemmSpOp>(op))
    return gemm.emitOpError("T.gemm_sp is not supported on ROCm targets");
  if (isa<WarpMatchOp>(op))
    return op->emitOpError("matches values across lanes (CUDA's "
                           "__match_any_sync / __match_all_sync), which AMD "
                           "GPUs have no instruction for (TileLang's HIP "
                           "backend refuses it too)");
  if (isa<ClusterBarrierOp, ClusterRankOp, BarrierArriveRankOp>(op))
    return op->emitOpError("is an operation of thread block clusters, an "
                           "NVIDIA sm_90 feature that ROCm targets do not "
                           "have");
  if (isa<PdlTriggerOp, PdlWaitOp>(op))
    return op->emitOpError("is programmatic dependent launch (T.pdl_trigger "
                           "/ T.pdl_sync), an NVIDIA sm_90 feature that ROCm "
                           "targets do not have (TileLang refuses it too)");
  if (isa<GridSyncOp>(op))
    return op->emitOpError("(T.sync_grid) needs a cooperative launch, which "
                           "the ROCm runtime here does not make: split the "
                           "work into two kernels");
  if (isa<PartialBarrierOp>(op))
    return op->emitOpError("(T.sync_threads(id, threads), "
                           "T.named_barrier_arrive) synchronizes part of the "
                           "block on a named barrier, which ROCm targets do "
                           "not have here");
  if (isa<BlockVoteOp>(op))
    return op->emitOpError("(T.syncthreads_count / _and / _or) is not "
                           "supported on ROCm targets yet: count with a "
                           "shared-memory atomic between two T.sync_threads()");
  return success();
}

/// The transaction barriers and warp specialization of NVIDIA chips are
/// refused; gemms are synchronous here: a gemm wait has nothing to wait for.
void ROCDLTargetInfo::registerLowerings(LoweringTable &table) const {
  table.add<WarpSpecializeOp, BarrierWaitOp, BarrierArriveOp>(
      [](KernelLowering &kl, Operation *op, OpBuilder &, IRMapping &,
         Context &) { return kl.target.checkSupported(op); },
      InParallel::lowered);
  // Nothing reads shared memory through an asynchronous proxy here (no TMA,
  // no wgmma): the fence has nothing to order, as on NVIDIA chips before
  // sm_90.
  table.addNothing<GemmWaitOp, FenceProxyAsyncOp>(InParallel::lowered);
}

LogicalResult ROCDLTargetInfo::lowerGemm(KernelLowering &kl, GemmOp op,
                                         OpBuilder &b, const Buffer &a,
                                         const Buffer &bb, const Buffer &c,
                                         ArrayRef<int64_t> aRegs) const {
  if (!op->hasAttr("mfma") || !aRegs.empty())
    return op.emitOpError("mma.sync and wgmma gemms need an NVIDIA target");
  return rocdlLowering(kl).gemmMfma(op, b, a, bb, c);
}

LogicalResult ROCDLTargetInfo::lowerGemmSp(KernelLowering &kl, GemmSpOp op,
                                           OpBuilder &b, const Buffer &a,
                                           const Buffer &e, const Buffer &bb,
                                           const Buffer &c) const {
  return checkSupported(op);
}

/// Gemms and copies are synchronous here: nothing is left in flight.
void ROCDLTargetInfo::emitAsyncDrain(KernelLowering &kl, OpBuilder &b) const {}

/// A trap (printing needs the device libraries, which are not linked),
/// which aborts the dispatch.
void ROCDLTargetInfo::emitAssertFailure(KernelLowering &kl, Location at,
                                        StringRef msg, OpBuilder &b,
                                        Value failed) const {
  Location loc = kl.loc;
  guarded(b, loc, failed, [&](OpBuilder &gb) { LLVM::Trap::create(gb, loc); });
}

/// s_memrealtime counts at a constant 100 MHz.
Value ROCDLTargetInfo::emitTimeNs(OpBuilder &b, Location loc) const {
  Type i64 = b.getI64Type();
  Value ticks = LLVM::CallIntrinsicOp::create(
                    b, loc, i64, b.getStringAttr("llvm.amdgcn.s.memrealtime"),
                    ValueRange{})
                    .getResult(0);
  return LLVM::MulOp::create(b, loc, ticks,
                             LLVM::ConstantOp::create(b, loc, i64, 10));
}
