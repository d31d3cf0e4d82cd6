//===- ThreadOps.cpp - lanes and warps on NVIDIA GPUs ---------------------===//
//
// Part of tilelang-mlir.
//
// The NVVM instructions behind the warp-level ops (GPUTargetInfo's lanes
// and warps emitters): shfl.sync, vote.sync, match.sync, bar.warp.sync,
// bar.red and elect.sync (sm_90; the lowest active lane elsewhere).
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToNVVM/NVVMTargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::tile;

static Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

StringRef NVVMTargetInfo::deviceSyncScope() const { return "device"; }

Value NVVMTargetInfo::emitLaneId(OpBuilder &b, Location loc) const {
  return NVVM::LaneIdOp::create(b, loc, b.getI32Type());
}

Value NVVMTargetInfo::emitShuffle(OpBuilder &b, Location loc, ShuffleKind kind,
                                  Value v, Value offset, Value width,
                                  Value mask) const {
  // c = ((32 - width) << 8) | clamp: segments of `width` lanes; the last
  // lane of a segment bounds idx, xor and down, its first lane bounds up.
  Value segment = arith::ShLIOp::create(
      b, loc, arith::SubIOp::create(b, loc, i32Const(b, loc, 32), width),
      i32Const(b, loc, 8));
  Value c = kind == ShuffleKind::up
                ? segment
                : arith::OrIOp::create(b, loc, segment, i32Const(b, loc, 31))
                      .getResult();
  NVVM::ShflKind k = NVVM::ShflKind::idx;
  switch (kind) {
  case ShuffleKind::idx:
    k = NVVM::ShflKind::idx;
    break;
  case ShuffleKind::Xor:
    k = NVVM::ShflKind::bfly;
    break;
  case ShuffleKind::up:
    k = NVVM::ShflKind::up;
    break;
  case ShuffleKind::down:
    k = NVVM::ShflKind::down;
    break;
  }
  return NVVM::ShflOp::create(b, loc, b.getI32Type(), mask, v, offset, c, k,
                              UnitAttr());
}

Value NVVMTargetInfo::emitBallot(OpBuilder &b, Location loc, Value pred,
                                 Value mask) const {
  Value bits = NVVM::VoteSyncOp::create(b, loc, b.getI32Type(), mask, pred,
                                        NVVM::VoteSyncKind::ballot);
  return arith::ExtUIOp::create(b, loc, b.getI64Type(), bits);
}

Value NVVMTargetInfo::emitVote(OpBuilder &b, Location loc, bool all, Value pred,
                               Value mask) const {
  return NVVM::VoteSyncOp::create(
      b, loc, b.getI1Type(), mask, pred,
      all ? NVVM::VoteSyncKind::all : NVVM::VoteSyncKind::any);
}

Value NVVMTargetInfo::emitActiveMask(OpBuilder &b, Location loc) const {
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, b.getI32Type(), ValueRange{}, "activemask.b32 $0;", "=r",
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  return arith::ExtUIOp::create(b, loc, b.getI64Type(), asmOp.getResult(0));
}

Value NVVMTargetInfo::emitMatch(OpBuilder &b, Location loc, MatchKind kind,
                                Value v, Value mask) const {
  if (kind == MatchKind::any)
    return NVVM::MatchSyncOp::create(b, loc, b.getI32Type(), mask, v,
                                     NVVM::MatchSyncKind::any);
  // all: {mask or 0, whether all agree}; TileLang keeps the mask.
  auto pair = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {b.getI32Type(), b.getI1Type()});
  Value r = NVVM::MatchSyncOp::create(b, loc, pair, mask, v,
                                      NVVM::MatchSyncKind::all);
  return LLVM::ExtractValueOp::create(b, loc, r, ArrayRef<int64_t>{0});
}

void NVVMTargetInfo::emitSyncWarp(OpBuilder &b, Location loc,
                                  Value mask) const {
  NVVM::SyncWarpOp::create(b, loc, mask);
}

Value NVVMTargetInfo::emitBlockVote(OpBuilder &b, Location loc,
                                    BlockVoteKind kind, Value pred) const {
  NVVM::BarrierReduction red = NVVM::BarrierReduction::POPC;
  if (kind == BlockVoteKind::And)
    red = NVVM::BarrierReduction::AND;
  else if (kind == BlockVoteKind::Or)
    red = NVVM::BarrierReduction::OR;
  Value p = arith::ExtUIOp::create(b, loc, b.getI32Type(), pred);
  return NVVM::BarrierOp::create(
             b, loc, b.getI32Type(), Value(), Value(),
             NVVM::BarrierReductionAttr::get(b.getContext(), red), p)
      .getRes();
}

Value NVVMTargetInfo::emitElectOne(OpBuilder &b, Location loc) const {
  Value active = arith::TruncIOp::create(b, loc, b.getI32Type(),
                                         emitActiveMask(b, loc));
  if (chip.arch >= 90)
    return NVVM::ElectSyncOp::create(b, loc, b.getI1Type(), active);
  // The lowest active lane.
  Value first = LLVM::CountTrailingZerosOp::create(b, loc, b.getI32Type(),
                                                   active, false);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               emitLaneId(b, loc), first);
}

void NVVMTargetInfo::emitPartialBarrier(OpBuilder &b, Location loc, Value id,
                                        Value threads, bool arrive) const {
  if (arrive)
    NVVM::BarrierArriveOp::create(b, loc, id, threads);
  else
    NVVM::BarrierOp::create(b, loc, TypeRange{}, id, threads,
                            NVVM::BarrierReductionAttr(), Value());
}
