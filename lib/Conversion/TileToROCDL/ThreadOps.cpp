//===- ThreadOps.cpp - lanes and waves on AMD GPUs ------------------------===//
//
// Part of tilelang-mlir.
//
// The ROCDL instructions behind the warp-level ops (GPUTargetInfo's lanes
// and warps emitters). A wave runs converged, so masks are ignored, as
// TileLang's HIP backend does: shuffles read the source lane CUDA's
// semantics give (segments of `width` lanes) through ds_bpermute, votes are
// ballots.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToROCDL/ROCDLTargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

using namespace mlir;
using namespace mlir::tile;

static Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

StringRef ROCDLTargetInfo::deviceSyncScope() const { return "agent"; }

Value ROCDLTargetInfo::emitLaneId(OpBuilder &b, Location loc) const {
  Type i32 = b.getI32Type();
  Value all = i32Const(b, loc, -1);
  Value lo = ROCDL::MbcntLoOp::create(b, loc, i32, all, i32Const(b, loc, 0),
                                      ArrayAttr(), ArrayAttr());
  return ROCDL::MbcntHiOp::create(b, loc, i32, all, lo, ArrayAttr(),
                                  ArrayAttr());
}

Value ROCDLTargetInfo::emitShuffle(OpBuilder &b, Location loc, ShuffleKind kind,
                                   Value v, Value offset, Value width,
                                   Value mask) const {
  using P = arith::CmpIPredicate;
  Value lane = emitLaneId(b, loc);
  Value start = arith::AndIOp::create(
      b, loc, lane,
      arith::SubIOp::create(b, loc, i32Const(b, loc, 0), width)); // ~(w-1)
  Value end = arith::AddIOp::create(b, loc, start, width);
  Value src;
  switch (kind) {
  case ShuffleKind::idx:
    src = arith::AddIOp::create(
        b, loc, start,
        arith::AndIOp::create(
            b, loc, offset,
            arith::SubIOp::create(b, loc, width, i32Const(b, loc, 1))));
    break;
  case ShuffleKind::Xor:
  case ShuffleKind::down: {
    Value j = kind == ShuffleKind::Xor
                  ? arith::XOrIOp::create(b, loc, lane, offset).getResult()
                  : arith::AddIOp::create(b, loc, lane, offset).getResult();
    Value inside = arith::CmpIOp::create(b, loc, P::slt, j, end);
    src = arith::SelectOp::create(b, loc, inside, j, lane);
    break;
  }
  case ShuffleKind::up: {
    Value j = arith::SubIOp::create(b, loc, lane, offset);
    Value inside = arith::CmpIOp::create(b, loc, P::sge, j, start);
    src = arith::SelectOp::create(b, loc, inside, j, lane);
    break;
  }
  }
  Value bytes = arith::ShLIOp::create(b, loc, src, i32Const(b, loc, 2));
  return ROCDL::DsBpermuteOp::create(b, loc, b.getI32Type(), bytes, v);
}

Value ROCDLTargetInfo::emitBallot(OpBuilder &b, Location loc, Value pred,
                                  Value mask) const {
  return ROCDL::BallotOp::create(b, loc, b.getI64Type(), pred);
}

Value ROCDLTargetInfo::emitVote(OpBuilder &b, Location loc, bool all,
                                Value pred, Value mask) const {
  Value votes = emitBallot(b, loc, pred, mask);
  if (!all)
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, votes,
        arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, votes,
                               emitActiveMask(b, loc));
}

Value ROCDLTargetInfo::emitActiveMask(OpBuilder &b, Location loc) const {
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  return ROCDL::BallotOp::create(b, loc, b.getI64Type(), yes);
}

Value ROCDLTargetInfo::emitMatch(OpBuilder &b, Location loc, MatchKind kind,
                                 Value v, Value mask) const {
  llvm_unreachable("refused by checkSupported");
}

void ROCDLTargetInfo::emitSyncWarp(OpBuilder &b, Location loc,
                                   Value mask) const {
  // The wave runs converged: order its memory accesses.
  LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acq_rel, "wavefront");
}

Value ROCDLTargetInfo::emitBlockVote(OpBuilder &b, Location loc,
                                     BlockVoteKind kind, Value pred) const {
  llvm_unreachable("refused by checkSupported");
}

Value ROCDLTargetInfo::emitElectOne(OpBuilder &b, Location loc) const {
  Value first = LLVM::CountTrailingZerosOp::create(
      b, loc, b.getI64Type(), emitActiveMask(b, loc), false);
  Value lane = arith::ExtUIOp::create(b, loc, b.getI64Type(),
                                      emitLaneId(b, loc));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, first);
}

void ROCDLTargetInfo::emitPartialBarrier(OpBuilder &b, Location loc, Value id,
                                         Value threads, bool arrive) const {
  llvm_unreachable("refused by checkSupported");
}

void ROCDLTargetInfo::emitPdl(OpBuilder &b, Location loc, bool trigger) const {
  llvm_unreachable("refused by checkSupported");
}

void ROCDLTargetInfo::emitGridSync(KernelLowering &kl, OpBuilder &b) const {
  llvm_unreachable("refused by checkSupported");
}

void ROCDLTargetInfo::emitClusterBarrier(OpBuilder &b, Location loc,
                                         ClusterStep step) const {
  llvm_unreachable("refused by checkSupported");
}

Value ROCDLTargetInfo::emitClusterRank(OpBuilder &b, Location loc) const {
  llvm_unreachable("refused by checkSupported");
}

void ROCDLTargetInfo::emitRemoteArrive(OpBuilder &b, Location loc,
                                       Value barrier, Value rank) const {
  llvm_unreachable("refused by checkSupported");
}

/// s_endpgm through its intrinsic (no AMDGPU assembly parser is linked for
/// inline assembly); the intrinsic does not return, so LLVM drops what
/// follows it in its block.
void ROCDLTargetInfo::emitThreadExit(OpBuilder &b, Location loc) const {
  LLVM::CallIntrinsicOp::create(b, loc, b.getStringAttr("llvm.amdgcn.endpgm"),
                                ValueRange{});
}
