//===- PipelineSchedule.cpp - assign pipeline stages ----------------------===//
//
// Part of tilelang-mlir.
//
// Phase 1 of software pipelining: decide the stage of every statement of a
// tile.pipelined loop. Phase 2 (PipelineExpand.cpp) implements the decision.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "dialects/Tile/Transforms/PipelineUtils.h"
#include "dialects/Tile/Transforms/Passes.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tile-pipeline-schedule"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEPIPELINESCHEDULE
#define GEN_PASS_DEF_TILEPIPELINE
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

bool mlir::tile::isPipelineProducer(PipelinedOp loop, Operation *op) {
  auto copy = dyn_cast<CopyOp>(op);
  if (!copy || !isGlobal(copy.getSrc().getType()) ||
      !isInScope(copy.getDst().getType(), MemoryScope::shared))
    return false;
  // A copy through a barrier (T.tma_copy, T.copy_cluster's multicast) is
  // synchronized by the program's arrivals and waits on that barrier.
  if (copy.getBarrier())
    return false;
  // Multi-buffering replaces the buffer inside the loop only: every use of
  // it must be there.
  auto alloc = copy.getDst().getDefiningOp<AllocSharedOp>();
  if (!alloc)
    return false;
  return llvm::all_of(alloc->getUsers(), [&](Operation *user) {
    return loop->isProperAncestor(user);
  });
}

void mlir::tile::statementDependencies(
    PipelinedOp loop, ArrayRef<Operation *> statements,
    function_ref<void(size_t user, size_t def)> callback) {
  DenseMap<Operation *, size_t> index;
  for (auto [i, s] : llvm::enumerate(statements))
    index[s] = i;
  Block *body = &loop.getBody().front();
  for (auto [i, s] : llvm::enumerate(statements)) {
    SetVector<Value> used;
    for (Value v : s->getOperands())
      used.insert(v);
    getUsedValuesDefinedAbove(s->getRegions(), used);
    SmallVector<Value> worklist(used.begin(), used.end());
    DenseSet<Operation *> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body || !seen.insert(def).second)
        continue;
      auto it = index.find(def);
      if (it != index.end()) {
        callback(i, it->second);
        continue;
      }
      llvm::append_range(worklist, def->getOperands());
    }
  }
}

LogicalResult mlir::tile::schedulePipelinedLoop(PipelinedOp loop) {
  SmallVector<Operation *> statements = loop.getStatements();
  size_t n = statements.size();
  Builder builder(loop.getContext());
  // A kernel that gives its threads roles synchronizes them itself: its
  // pipelined loops run as plain loops (every statement in stage 0, in
  // program order).
  auto kernel = loop->getParentOfType<KernelOp>();
  if (kernel && kernel.hasRoles()) {
    markExplicitRoles(kernel);
    SmallVector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    loop.setStageAttr(builder.getDenseI64ArrayAttr(SmallVector<int64_t>(n, 0)));
    loop.setOrderAttr(builder.getDenseI64ArrayAttr(order));
    loop->removeAttr(loop.getGroupAttrName());
    return success();
  }
  if (std::optional<ArrayRef<int64_t>> given = loop.getStage()) {
    // A user schedule: check it respects the data dependencies.
    SmallVector<int64_t> stage(*given);
    LogicalResult result = success();
    statementDependencies(loop, statements, [&](size_t user, size_t def) {
      if (succeeded(result) && stage[def] > stage[user])
        result = statements[user]->emitError()
                 << "runs in pipeline stage " << stage[user]
                 << " but uses a result of statement " << def
                 << ", which runs in the later stage " << stage[def];
    });
    if (failed(result))
      return failure();
    if (!loop.getOrder()) {
      SmallVector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      loop.setOrderAttr(builder.getDenseI64ArrayAttr(order));
    }
    return success();
  }
  int64_t numStages = loop.getNumStages();
  SmallVector<int64_t> stage(n, std::max<int64_t>(numStages - 1, 0));
  if (numStages >= 2) {
    for (auto [i, s] : llvm::enumerate(statements))
      if (isPipelineProducer(loop, s))
        stage[i] = 0;
    // Statements whose results a stage-0 statement uses run in stage 0 too.
    bool changed = true;
    while (changed) {
      changed = false;
      statementDependencies(loop, statements, [&](size_t user, size_t def) {
        if (stage[user] < stage[def]) {
          stage[def] = stage[user];
          changed = true;
        }
      });
    }
  }
  SmallVector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  loop.setStageAttr(builder.getDenseI64ArrayAttr(stage));
  loop.setOrderAttr(builder.getDenseI64ArrayAttr(order));
  LLVM_DEBUG(llvm::dbgs() << "scheduled " << loop << "\n");
  return success();
}

namespace {
struct TilePipelineSchedulePass
    : public tile::impl::TilePipelineScheduleBase<TilePipelineSchedulePass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](PipelinedOp loop) {
      return failed(schedulePipelinedLoop(loop)) ? WalkResult::interrupt()
                                                 : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

struct TilePipelinePass
    : public tile::impl::TilePipelineBase<TilePipelinePass> {
  using TilePipelineBase::TilePipelineBase;
  void runOnOperation() override {
    SmallVector<PipelinedOp> loops;
    getOperation().walk([&](PipelinedOp loop) { loops.push_back(loop); });
    for (PipelinedOp loop : loops)
      if (failed(schedulePipelinedLoop(loop)) ||
          failed(expandPipelinedLoop(loop, {copiesFirst, reuseSlots, groupPerCopy, asyncCopies})))
        return signalPassFailure();
  }
};
} // namespace
