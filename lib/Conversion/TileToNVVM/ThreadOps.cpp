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
#include "dialects/Conversion/TileToGPU/KernelLowering.h"

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

void NVVMTargetInfo::emitPdl(OpBuilder &b, Location loc, bool trigger) const {
  NVVM::GriddepcontrolOp::create(b, loc,
                                 trigger
                                     ? NVVM::GridDepActionKind::launch_dependents
                                     : NVVM::GridDepActionKind::wait);
}

/// An i32 (or i64) from a PTX special register or instruction, as inline
/// assembly.
static Value asmValue(OpBuilder &b, Location loc, Type type, StringRef text,
                      StringRef constraints, ValueRange operands = {}) {
  auto op = LLVM::InlineAsmOp::create(
      b, loc, type, operands, text, constraints, /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr(), ArrayAttr());
  return op.getResult(0);
}

/// Cooperative groups' grid barrier (`this_grid().sync()` as CUDA 13
/// compiles it): the driver of a cooperative launch hands the kernel a
/// workspace in %envreg1:%envreg2 (null otherwise: trap); thread 0 of each
/// block adds 1 to the barrier word at offset 4 (block 0 adds 2^31 + 1 -
/// blocks, so that the count flips the top bit), with release semantics,
/// and spins until the top bit flips; the block's barriers around it hold
/// its other threads.
void NVVMTargetInfo::emitGridSync(KernelLowering &kl, OpBuilder &b) const {
  Location loc = kl.loc;
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value hi = arith::ExtUIOp::create(
      b, loc, i64, asmValue(b, loc, i32, "mov.u32 $0, %envreg1;", "=r"));
  Value lo = arith::ExtUIOp::create(
      b, loc, i64, asmValue(b, loc, i32, "mov.u32 $0, %envreg2;", "=r"));
  Value ws = arith::OrIOp::create(
      b, loc, lo,
      arith::ShLIOp::create(b, loc, hi,
                            arith::ConstantIntOp::create(b, loc, i64, 32)));
  Value none = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, ws,
      arith::ConstantIntOp::create(b, loc, i64, 0));
  guarded(b, loc, none, [&](OpBuilder &tb) {
    LLVM::InlineAsmOp::create(tb, loc, TypeRange{}, ValueRange{}, "trap;", "",
                              true, false, LLVM::TailCallKind::None,
                              LLVM::AsmDialectAttr(), ArrayAttr());
  });
  emitBarrier(b, loc, 0, 0);
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      kl.blockTid, cIdx(b, loc, 0));
  guarded(b, loc, first, [&](OpBuilder &tb) {
    Value blocks, leader;
    for (int d = 0; d < 3; ++d) {
      Value n = arith::IndexCastUIOp::create(tb, loc, i32, kl.gridDim(tb, d));
      blocks = blocks ? arith::MulIOp::create(tb, loc, blocks, n).getResult() : n;
      if (d < static_cast<int>(kl.blockIndices.size()))
        leader = andOf(tb, loc, leader,
                       arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::eq,
                                             kl.blockIndices[d],
                                             cIdx(tb, loc, 0)));
    }
    Value add = arith::SelectOp::create(
        tb, loc, leader,
        arith::SubIOp::create(
            tb, loc, arith::ConstantIntOp::create(tb, loc, i32, 0x80000001),
            blocks),
        arith::ConstantIntOp::create(tb, loc, i32, 1));
    Value word = arith::AddIOp::create(
        tb, loc, ws, arith::ConstantIntOp::create(tb, loc, i64, 4));
    Value old = asmValue(tb, loc, i32, "atom.add.release.gpu.u32 $0, [$1], $2;",
                         "=r,l,r", ValueRange{word, add});
    auto spin = scf::WhileOp::create(
        tb, loc, TypeRange{}, ValueRange{},
        [&](OpBuilder &wb, Location l, ValueRange) {
          Value now = asmValue(wb, l, i32, "ld.acquire.gpu.u32 $0, [$1];",
                               "=r,l", ValueRange{word});
          Value flipped = arith::CmpIOp::create(
              wb, l, arith::CmpIPredicate::slt,
              arith::XOrIOp::create(wb, l, now, old),
              arith::ConstantIntOp::create(wb, l, i32, 0));
          Value again = arith::XOrIOp::create(
              wb, l, flipped,
              arith::ConstantIntOp::create(wb, l, wb.getI1Type(), 1));
          scf::ConditionOp::create(wb, l, again, ValueRange{});
        },
        [&](OpBuilder &ab, Location l, ValueRange) {
          scf::YieldOp::create(ab, l, ValueRange{});
        });
    (void)spin;
  });
  emitBarrier(b, loc, 0, 0);
}

void NVVMTargetInfo::emitClusterBarrier(OpBuilder &b, Location loc,
                                        ClusterStep step) const {
  switch (step) {
  case ClusterStep::arrive:
    NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
    break;
  case ClusterStep::arrive_relaxed:
    NVVM::ClusterArriveRelaxedOp::create(b, loc, b.getUnitAttr());
    break;
  case ClusterStep::wait:
    NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
    break;
  }
}

Value NVVMTargetInfo::emitClusterRank(OpBuilder &b, Location loc) const {
  return NVVM::ClusterId::create(b, loc, b.getI32Type());
}

void NVVMTargetInfo::emitRemoteArrive(OpBuilder &b, Location loc, Value barrier,
                                      Value rank) const {
  auto clusterPtr = LLVM::LLVMPointerType::get(b.getContext(), 7);
  Value remote = NVVM::MapaOp::create(b, loc, clusterPtr, barrier, rank);
  NVVM::MBarrierArriveOp::create(b, loc, Type(), remote, Value(),
                                 NVVM::MemScopeKind::CLUSTER, false);
}

void NVVMTargetInfo::emitThreadExit(OpBuilder &b, Location loc) const {
  LLVM::InlineAsmOp::create(b, loc, TypeRange{}, ValueRange{}, "exit;", "",
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                            ArrayAttr());
}
