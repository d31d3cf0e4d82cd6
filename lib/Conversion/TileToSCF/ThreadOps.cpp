//===- ThreadOps.cpp - per-thread and atomic ops on the CPU ---------------===//
//
// Part of tilelang-mlir.
//
// The CPU runs a block as one thread of control, which stands for all of
// the block's threads executing the same scalar code (the thread index has
// no meaning here, so every value is the same in every thread). Atomics are
// plain read-modify-writes; an update outside tile.parallel, which each
// thread of a GPU block makes, is repeated once per thread where that
// changes the result (add, xor). Block votes are exact (every thread votes
// the same). Warp-level ops (lanes, shuffles, votes, reductions, election)
// are refused: the CPU has no warps.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToSCF/TileToSCF.h"

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/ControlFlowUtils.h"
#include "dialects/Tile/Utils/ThreadOpUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tile;

/// i1 true when `idx` lies inside `buffer` (unsigned compares: a negative
/// index is outside), or null when every index is a constant inside a
/// static extent.
static Value elementInBounds(OpBuilder &b, Location loc, Value buffer,
                             ValueRange idx) {
  auto type = cast<MemRefType>(buffer.getType());
  Value cond;
  for (auto [d, i] : llvm::enumerate(idx)) {
    int64_t extent = type.getDimSize(d);
    std::optional<int64_t> c = getConstantIntValue(i);
    if (c && !ShapedType::isDynamic(extent) && *c >= 0 && *c < extent)
      continue;
    Value bound =
        ShapedType::isDynamic(extent)
            ? memref::DimOp::create(b, loc, buffer, d).getResult()
            : arith::ConstantIndexOp::create(b, loc, extent).getResult();
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, bound);
    cond = cond ? arith::AndIOp::create(b, loc, cond, ok).getResult() : ok;
  }
  return cond;
}

/// The element at `idx`, or zero outside the buffer.
static Value loadOrZero(OpBuilder &b, Location loc, Value buffer,
                        ValueRange idx) {
  Value ok = elementInBounds(b, loc, buffer, idx);
  if (!ok)
    return memref::LoadOp::create(b, loc, buffer, idx);
  Type type = cast<MemRefType>(buffer.getType()).getElementType();
  auto ifOp = scf::IfOp::create(
      b, loc, ok,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(
            tb, l, ValueRange{memref::LoadOp::create(tb, l, buffer, idx)});
      },
      [&](OpBuilder &eb, Location l) {
        Value zero =
            arith::ConstantOp::create(eb, l, type, eb.getZeroAttr(type));
        scf::YieldOp::create(eb, l, zero);
      });
  return ifOp.getResult(0);
}

/// How many times the CPU makes an update that every thread of the block
/// makes on a GPU: the block's threads outside tile.parallel, once inside.
static int64_t updatesPerBlock(Operation *op) {
  if (op->getParentOfType<ParallelOp>())
    return 1;
  return op->getParentOfType<KernelOp>().getNumThreads();
}

/// Runs `body` `count` times (once without a loop).
static void repeat(OpBuilder &b, Location loc, int64_t count,
                   function_ref<void(OpBuilder &)> body) {
  if (count == 1) {
    body(b);
    return;
  }
  auto loop = scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                                 arith::ConstantIndexOp::create(b, loc, count),
                                 arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder lb = OpBuilder::atBlockTerminator(loop.getBody());
  body(lb);
}

static LogicalResult expandAtomicRMW(AtomicRMWOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  int64_t count = isIdempotent(op.getKind()) ? 1 : updatesPerBlock(op);
  if (op.getResult() && updatesPerBlock(op) > 1)
    return op.emitOpError("returns the previous value to each of the ")
           << updatesPerBlock(op)
           << " threads of the block, a different one to each, which the CPU "
              "backend (one thread of control per block) cannot give: make "
              "the update in a T.Parallel loop, or compile for a GPU target";
  Value dst = op.getDst();
  ValueRange idx = op.getOffsets();
  Value prev;
  repeat(b, loc, count, [&](OpBuilder &rb) {
    Value ok = elementInBounds(rb, loc, dst, idx);
    Type type = op.getValue().getType();
    if (!ok) {
      prev = memref::LoadOp::create(rb, loc, dst, idx);
      Value v = atomicCombine(rb, loc, op.getKind(), prev, op.getValue(),
                              op.getIsUnsigned());
      memref::StoreOp::create(rb, loc, v, dst, idx);
      return;
    }
    auto ifOp = scf::IfOp::create(
        rb, loc, ok,
        [&](OpBuilder &tb, Location l) {
          Value old = memref::LoadOp::create(tb, l, dst, idx);
          Value v = atomicCombine(tb, l, op.getKind(), old, op.getValue(),
                                  op.getIsUnsigned());
          memref::StoreOp::create(tb, l, v, dst, idx);
          scf::YieldOp::create(tb, l, old);
        },
        [&](OpBuilder &eb, Location l) {
          scf::YieldOp::create(eb, l,
                               ValueRange{arith::ConstantOp::create(
                                   eb, l, type, eb.getZeroAttr(type))});
        });
    prev = ifOp.getResult(0);
  });
  if (op.getResult())
    op.getResult().replaceAllUsesWith(prev);
  op.erase();
  return success();
}

/// The block's rank in its cluster, from its indices: x fastest, as
/// %cluster_ctarank counts (0 without clusters).
static Value clusterRank(OpBuilder &b, Location loc, ClusterRankOp op) {
  auto kernel = op->getParentOfType<KernelOp>();
  auto dims = kernel->getAttrOfType<DenseI64ArrayAttr>("tile.cluster");
  Value rank = arith::ConstantIndexOp::create(b, loc, 0);
  int64_t scale = 1;
  if (dims)
    for (auto [d, idx] : llvm::enumerate(kernel.getBody().getArguments())) {
      if (d >= dims.size())
        break;
      Value digit = arith::RemUIOp::create(
          b, loc, idx, arith::ConstantIndexOp::create(b, loc, dims[d]));
      rank = arith::AddIOp::create(
          b, loc, rank,
          arith::MulIOp::create(
              b, loc, digit, arith::ConstantIndexOp::create(b, loc, scale)));
      scale *= dims[d];
    }
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), rank);
}

LogicalResult mlir::tile::expandThreadOpsForCPU(ModuleOp module) {
  SmallVector<Operation *> ops;
  WalkResult refused = module.walk([&](Operation *op) {
    if (isa<WarpSizeOp, ShuffleOp, WarpVoteOp, WarpMatchOp, ActiveMaskOp,
            WarpReduceOp, ElectOp>(op)) {
      op->emitOpError("is an operation of a warp's lanes, which the CPU "
                      "backend (one thread of control per block, no warps) "
                      "cannot run: compile for a GPU target");
      return WalkResult::interrupt();
    }
    if (isa<ThreadReturnOp>(op)) {
      op->emitOpError("ends the executing thread, which the CPU backend (one "
                      "thread of control per block) cannot: compile for a GPU "
                      "target");
      return WalkResult::interrupt();
    }
    if (isa<ClusterBarrierOp, BarrierArriveRankOp>(op)) {
      op->emitOpError("synchronizes the blocks of a cluster, which the CPU "
                      "backend (blocks run one after another) cannot run: "
                      "compile for a GPU target");
      return WalkResult::interrupt();
    }
    if (auto call = dyn_cast<CallExternOp>(op)) {
      auto named = op->getAttrOfType<StringAttr>("tile.function");
      op->emitOpError("calls `")
          << (named ? named.getValue() : call.getCallee())
          << "` of the program's CUDA C++ source (T.import_source), which "
             "the CPU backend cannot run: compile for a CUDA target";
      return WalkResult::interrupt();
    }
    if (isa<GridSyncOp>(op)) {
      op->emitOpError("is a barrier of the whole grid, which the CPU backend "
                      "(blocks run one after another) cannot run: compile for "
                      "a GPU target, or split the work into two T.Kernel");
      return WalkResult::interrupt();
    }
    if (isa<AtomicRMWOp, AtomicLoadOp, AtomicStoreOp, BlockVoteOp, SyncWarpOp,
            PartialBarrierOp, PdlTriggerOp, PdlWaitOp, MakeTensorOp,
            ClusterRankOp>(op))
      ops.push_back(op);
    // A scalar atomic add outside tile.parallel is every thread's.
    if (auto add = dyn_cast<AtomicAddOp>(op))
      if (!isa<MemRefType>(add.getValue().getType()) &&
          updatesPerBlock(op) > 1)
        ops.push_back(op);
    return WalkResult::advance();
  });
  if (refused.wasInterrupted())
    return failure();
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto rmw = dyn_cast<AtomicRMWOp>(op)) {
      if (failed(expandAtomicRMW(rmw)))
        return failure();
    } else if (auto load = dyn_cast<AtomicLoadOp>(op)) {
      load.getResult().replaceAllUsesWith(
          loadOrZero(b, loc, load.getSrc(), load.getOffsets()));
      op->erase();
    } else if (auto store = dyn_cast<AtomicStoreOp>(op)) {
      guarded(b, loc, elementInBounds(b, loc, store.getDst(), store.getOffsets()),
              [&](OpBuilder &gb) {
                memref::StoreOp::create(gb, loc, store.getValue(),
                                        store.getDst(), store.getOffsets());
              });
      op->erase();
    } else if (auto vote = dyn_cast<BlockVoteOp>(op)) {
      // Every thread votes the same predicate.
      Type i32 = b.getI32Type();
      Value one = arith::ExtUIOp::create(b, loc, i32, vote.getPredicate());
      Value result = one;
      if (vote.getKind() == BlockVoteKind::count)
        result = arith::MulIOp::create(
            b, loc, one,
            arith::ConstantIntOp::create(
                b, loc, i32, op->getParentOfType<KernelOp>().getNumThreads()));
      vote.getResult().replaceAllUsesWith(result);
      op->erase();
    } else if (isa<SyncWarpOp, PartialBarrierOp>(op)) {
      op->erase(); // one thread of control: nothing to wait for
    } else if (isa<PdlTriggerOp, PdlWaitOp>(op)) {
      op->erase(); // kernels run in program order: the wait is satisfied
    } else if (auto rank = dyn_cast<ClusterRankOp>(op)) {
      rank.getResult().replaceAllUsesWith(clusterRank(b, loc, rank));
      op->erase();
    } else if (auto made = dyn_cast<MakeTensorOp>(op)) {
      made.getResult().replaceAllUsesWith(
          memrefAtAddress(b, loc, made.getResult().getType(),
                          made.getAddress(), made.getSizes()));
      op->erase();
    } else {
      // A scalar atomic add: once per thread of the block.
      auto loop = scf::ForOp::create(
          b, loc, arith::ConstantIndexOp::create(b, loc, 0),
          arith::ConstantIndexOp::create(b, loc, updatesPerBlock(op)),
          arith::ConstantIndexOp::create(b, loc, 1));
      op->moveBefore(loop.getBody()->getTerminator());
    }
  }
  return success();
}
