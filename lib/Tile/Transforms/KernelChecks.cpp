//===- KernelChecks.cpp - which threads run what, checked before layouts --===//
//
// Part of tilelang-mlir.
//
// The kernel-wide checks the layout inference runs first: each fragment
// lives in one role's registers, and a tile operation is not reached by only
// some of the threads that run it.
//
//===----------------------------------------------------------------------===//

#include "KernelChecks.h"
#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "dialects/Tile/Utils/ThreadVariance.h"

using namespace mlir;
using namespace mlir::tile;

ThreadRange mlir::tile::rangeOf(Operation *op) {
  if (auto role = op->getParentOfType<RoleOp>())
    return {role.getBegin(), role.getEnd()};
  return kBlockRange;
}

/// A fragment lives in the registers of the threads that use it: every op
/// using it (through views) must run in one role, or outside every role.
LogicalResult mlir::tile::findFragmentHomes(KernelOp kernel, FragmentHomes &homes) {
  auto describe = [](ThreadRange r) {
    std::string s;
    llvm::raw_string_ostream os(s);
    if (r != kBlockRange)
      os << "the role of threads [" << r.first << ", " << r.second << ")";
    else
      os << "the whole block (outside every role)";
    return s;
  };
  DenseMap<Value, Operation *> firstUse;
  WalkResult result =
      kernel.walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
        if (isa<AnnotateLayoutOp, memref::SubViewOp, memref::CastOp>(op))
          return WalkResult::advance();
        for (Value operand : op->getOperands()) {
          Value root = viewSource(operand);
          auto alloc = root.getDefiningOp<AllocFragmentOp>();
          if (!alloc)
            continue;
          ThreadRange r = rangeOf(op);
          // A role's threads read the elements of a block fragment that
          // every thread holds (`if tx == 0: B[0] = result[0]` after a
          // reduction): the lowering checks that the fragment is replicated.
          if (isa<memref::LoadOp>(op) && r != kBlockRange &&
              !op->getParentOfType<ParallelOp>()) {
            auto home = homes.find(root);
            if (home != homes.end() && home->second == kBlockRange)
              continue;
          }
          auto [it, inserted] = homes.try_emplace(root, r);
          if (inserted) {
            firstUse[root] = op;
            continue;
          }
          if (it->second == r)
            continue;
          InFlightDiagnostic diag =
              op->emitError("uses a fragment in ")
              << describe(r) << ", but it lives in the registers of "
              << describe(it->second)
              << ": a fragment belongs to one role (pass values between "
                 "roles through shared memory)";
          diag.attachNote(firstUse[root]->getLoc())
              << "used here in " << describe(it->second);
          diag.attachNote(alloc.getLoc()) << "the fragment is allocated here";
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
  return failure(result.wasInterrupted());
}

/// A fill of a thread's own buffer (local or var), or a copy between one
/// and memory or another: each thread does it alone (KernelLowering's
/// per-thread copies), so it may run where only some threads go
/// (TileKernels' top-2 gate fills its registers under a per-token mask).
static bool onThreadOwnBuffers(Operation *op) {
  auto own = [](Value v) {
    Type t = viewSource(v).getType();
    return isInScope(t, MemoryScope::local) || isInScope(t, MemoryScope::var);
  };
  auto memory = [](Value v) {
    Type t = viewSource(v).getType();
    return isGlobal(t) || isInScope(t, MemoryScope::shared);
  };
  if (auto fill = dyn_cast<FillOp>(op))
    return own(fill.getDst());
  if (auto copy = dyn_cast<CopyOp>(op))
    return (own(copy.getSrc()) && (own(copy.getDst()) || memory(copy.getDst()))) ||
           (memory(copy.getSrc()) && own(copy.getDst()));
  return false;
}

/// A tile operation runs on all the threads of its role (or block): under
/// a branch (or in a loop) on a value that differs between threads (the
/// thread index, a lane's vote, a thread's own element; ThreadVariance)
/// that is not a role, only some of them would reach it. One thread's
/// operations (shuffles, element atomics) may run there.
LogicalResult mlir::tile::checkThreadBranches(KernelOp kernel) {
  ThreadVariance variance(kernel);
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    if (!isa<TileDialect>(op->getDialect()) || isPerThreadOp(op) ||
        isa<AllocSharedOp, AllocFragmentOp, AllocLocalOp, AllocVarOp,
            AllocBarrierOp, YieldOp>(op) ||
        op->getParentOfType<ParallelOp>())
      return WalkResult::advance();
    // The executing thread's own cp.async copies and their groups.
    if (isa<CpAsyncOp, AsyncCommitOp, AsyncWaitOp>(op))
      return WalkResult::advance();
    if (auto copy = dyn_cast<CopyOp>(op); copy && copy.getBarrier())
      return WalkResult::advance(); // a TMA copy: one thread issues it
    if (onThreadOwnBuffers(op))
      return WalkResult::advance();
    Operation *branch = variance.varyingControl(op);
    if (!branch)
      return WalkResult::advance();
    InFlightDiagnostic diag =
        op->emitError("a tile operation under a condition on the thread "
                      "index that is not a role (or on another value that "
                      "differs between threads): it runs on all the threads "
                      "of its role or block, but only some reach it here. "
                      "Write the condition as a range of threads (`tx < 128`, "
                      "`tx >= 128 and tx < 256`, `else`), outside other "
                      "roles, or move the operation out of the branch");
    diag.attachNote(branch->getLoc()) << "the condition on the thread index";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

