//===- ThreadVariance.cpp - which values differ between threads -----------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/Utils/ThreadVariance.h"
#include "dialects/Tile/Utils/BufferUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::tile;

bool mlir::tile::producesThreadValue(Operation *op) {
  return isa<ThreadIdOp, ShuffleOp, WarpVoteOp, WarpMatchOp, ActiveMaskOp,
             WarpReduceOp, ElectOp, AtomicRMWOp, AtomicLoadOp,
             CallExternOp>(op);
}

bool mlir::tile::isPerThreadOp(Operation *op) {
  if (auto add = dyn_cast<AtomicAddOp>(op))
    return !isa<MemRefType>(add.getValue().getType());
  return isa<ThreadIdOp, WarpSizeOp, ShuffleOp, WarpVoteOp, WarpMatchOp,
             ActiveMaskOp, WarpReduceOp, SyncWarpOp, ElectOp, AtomicRMWOp,
             AtomicLoadOp, AtomicStoreOp, DeviceAssertOp, PrintOp,
             PdlTriggerOp, PdlWaitOp, ClusterRankOp, BarrierArriveRankOp,
             ThreadReturnOp, CallExternOp>(op);
}

/// A buffer each thread has its own copy of (outside tile.parallel):
/// local and var buffers, and fragments accessed element by element.
static bool isPerThreadMemory(Value v) {
  if (!isa<MemRefType>(v.getType()))
    return false;
  Type t = viewSource(v).getType();
  return isInScope(t, MemoryScope::local) || isInScope(t, MemoryScope::var) ||
         isInScope(t, MemoryScope::fragment);
}

/// Whether `op` may write the buffer `v` (one of its operands).
static bool mayWrite(Operation *op, Value v) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return !isMemoryEffectFree(op);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  return llvm::any_of(list, [&](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Write>(e.getEffect()) &&
           (!e.getValue() || e.getValue() == v);
  });
}

bool mlir::tile::isPerThreadLoop(ParallelOp loop) {
  bool storesLocal = false;
  WalkResult result = loop.getBody().walk([&](Operation *op) -> WalkResult {
    for (Value v : op->getOperands()) {
      if (!isa<MemRefType>(v.getType()))
        continue;
      Type t = viewSource(v).getType();
      if (isInScope(t, MemoryScope::fragment))
        return WalkResult::interrupt();
      bool writes = mayWrite(op, v);
      if (writes && !isInScope(t, MemoryScope::local))
        return WalkResult::interrupt();
      storesLocal |= writes;
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted() && storesLocal;
}

/// Whether the body of `op` can run with its register index unknown at
/// compile time: it touches no fragment (whose elements are registers
/// indexed by the loop's register), and indexes local buffers only at
/// indices that do not vary in the loop (an RNG state, a scalar).
bool mlir::tile::touchesOnlyMemory(ParallelOp op) {
  Region &loop = op.getBody();
  auto variant = [&](ValueRange indices) {
    return llvm::any_of(indices, [&](Value i) {
      return loop.isAncestor(i.getParentRegion());
    });
  };
  WalkResult result = loop.walk([&](Operation *inner) -> WalkResult {
    for (Value v : inner->getOperands()) {
      if (!isa<MemRefType>(v.getType()))
        continue;
      Type t = viewSource(v).getType();
      if (isInScope(t, MemoryScope::fragment))
        return WalkResult::interrupt();
      if (!isInScope(t, MemoryScope::local))
        continue;
      if (auto ld = dyn_cast<memref::LoadOp>(inner))
        if (variant(ld.getIndices()))
          return WalkResult::interrupt();
      if (auto st = dyn_cast<memref::StoreOp>(inner))
        if (variant(st.getIndices()))
          return WalkResult::interrupt();
      if (v.getDefiningOp() && loop.isAncestor(v.getParentRegion()))
        return WalkResult::interrupt(); // a view made in the loop
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

ThreadVariance::ThreadVariance(KernelOp k) : kernel(k.getOperation()) {
  bool changed = true;
  while (changed) {
    changed = false;
    k.getBody().walk<WalkOrder::PreOrder>(
        [&](Operation *op) { changed |= visit(op); });
  }
}

Operation *ThreadVariance::varyingControl(Operation *op) const {
  for (Operation *p = op->getParentOp(); p && p != kernel && !isa<RoleOp>(p);
       p = p->getParentOp())
    if (varyingOwners.contains(p))
      return p;
  return nullptr;
}

bool ThreadVariance::perThread(Operation *op) const {
  return underVaryingControl(op) ||
         llvm::any_of(op->getOperands(),
                      [&](Value v) { return isVarying(v); });
}

bool ThreadVariance::visit(Operation *op) {
  bool changed = false;
  auto anyVarying = [&](ValueRange vs) {
    return llvm::any_of(vs, [&](Value v) { return isVarying(v); });
  };
  auto markOwner = [&]() {
    if (varyingOwners.insert(op).second)
      changed = true;
  };
  // Loops and branches: their own rules for results and block arguments.
  if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
    if (isVarying(ifOp.getCondition()))
      markOwner();
    for (auto [i, r] : llvm::enumerate(ifOp.getResults())) {
      bool v = isVarying(ifOp.getCondition());
      for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
        if (!region->empty())
          v |= isVarying(
              region->front().getTerminator()->getOperand(i));
      if (v)
        changed |= mark(r);
    }
  } else if (auto forOp = dyn_cast<scf::ForOp>(op)) {
    bool bounds = isVarying(forOp.getLowerBound()) ||
                  isVarying(forOp.getUpperBound()) ||
                  isVarying(forOp.getStep());
    if (bounds) {
      markOwner();
      changed |= mark(forOp.getInductionVar());
    }
    auto yield = forOp.getBody()->getTerminator();
    for (auto [i, init] : llvm::enumerate(forOp.getInitArgs()))
      if (bounds || isVarying(init) || isVarying(yield->getOperand(i))) {
        changed |= mark(forOp.getRegionIterArgs()[i]);
        changed |= mark(forOp.getResult(i));
      }
  } else if (auto whileOp = dyn_cast<scf::WhileOp>(op)) {
    scf::ConditionOp cond = whileOp.getConditionOp();
    bool varies = isVarying(cond.getCondition());
    if (varies)
      markOwner();
    for (auto [i, init] : llvm::enumerate(whileOp.getInits()))
      if (varies || isVarying(init) ||
          isVarying(whileOp.getYieldOp()->getOperand(i)))
        changed |= mark(whileOp.getBeforeArguments()[i]);
    for (auto [i, arg] : llvm::enumerate(cond.getArgs()))
      if (varies || isVarying(arg)) {
        changed |= mark(whileOp.getAfterArguments()[i]);
        changed |= mark(whileOp.getResult(i));
      }
  } else if (auto loop = dyn_cast<ParallelOp>(op)) {
    // Each thread runs its own iterations (all of them, the same in every
    // thread, in a per-thread loop).
    if (!isPerThreadLoop(loop))
      for (Value arg : op->getRegion(0).getArguments())
        changed |= mark(arg);
  } else if (op->getNumRegions() && anyVarying(op->getOperands())) {
    markOwner();
    for (Region &region : op->getRegions())
      for (Value arg : region.getArguments())
        changed |= mark(arg);
    for (Value r : op->getResults())
      changed |= mark(r);
  } else if (!isa<BlockVoteOp, WarpSizeOp>(op) &&
             (producesThreadValue(op) || anyVarying(op->getOperands()))) {
    for (Value r : op->getResults())
      changed |= mark(r);
  }
  // Per-thread buffers written with values (or under conditions) that
  // differ between threads hold such values.
  bool ctl = underVaryingControl(op);
  for (Value o : op->getOperands()) {
    if (!isPerThreadMemory(o) || !mayWrite(op, o))
      continue;
    bool others = llvm::any_of(op->getOperands(), [&](Value v) {
      return v != o && isVarying(v);
    });
    if (ctl || others || producesThreadValue(op)) {
      changed |= mark(viewSource(o));
      changed |= mark(o);
    }
  }
  return changed;
}
