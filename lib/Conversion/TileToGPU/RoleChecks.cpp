//===- RoleChecks.cpp - role and barrier programs the lowering refuses ----===//
//
// Part of tilelang-mlir.
//
// The checks of a kernel's roles (tile.role), named barriers, transaction
// barriers and register budgets that run before anything is emitted: a
// program these refuse would hang or misbehave on the GPU. They read the
// kernel and the target only, none of the lowering's state; the lowering
// keeps the named-barrier plan (planRoleBarriers).
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/ThreadOpUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::tile;

/// Gives every tile.role a named barrier the program does not use; refuses
/// barriers named at run time beside roles, and more roles than barriers.
FailureOr<RoleBarriers> mlir::tile::planRoleBarriers(KernelOp kernel) {
  RoleBarriers roleBarriers;
  llvm::SmallSet<int64_t, 16> taken;
  kernel.walk([&](NamedBarrierOp op) { taken.insert(op.getId()); });
  // Barriers named at run time: their ids, where known.
  PartialBarrierOp unknown;
  kernel.walk([&](PartialBarrierOp op) {
    std::optional<int64_t> id = getConstantIntValue(op.getId());
    if (id)
      taken.insert(*id);
    else
      unknown = op;
  });
  if (unknown && !kernel.getBody().getOps<RoleOp>().empty()) {
    unknown.emitOpError(
        "names its barrier at run time, in a kernel whose roles need named "
        "barriers of their own: the ids could collide; name it with a "
        "constant");
    return failure();
  }
  // One barrier per range of threads (roles of one range are the same
  // threads at different points of the program).
  int64_t next = 1;
  DenseMap<std::pair<int64_t, int64_t>, int64_t> byRange;
  WalkResult result = kernel.walk([&](RoleOp role) -> WalkResult {
    auto [it, fresh] = byRange.try_emplace({role.getBegin(), role.getEnd()}, 0);
    if (fresh) {
      while (next <= 15 && taken.contains(next))
        ++next;
      if (next > 15)
        return role.emitOpError("needs a named barrier, but the 15 of a "
                                "block are taken (by the roles and by "
                                "T.sync_threads(id, count))");
      it->second = next++;
    }
    roleBarriers[role] = it->second;
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  return roleBarriers;
}

/// Roles that are not whole warps run only scalar code, barrier operations
/// and TMA copies (one thread issues them); the register budgets that roles
/// set must fit in the register file; a decrease must not exceed the budget
/// at entry, and an increase below it is dropped (the threads keep theirs).
static LogicalResult checkBarriers(KernelOp kernel);

LogicalResult mlir::tile::verifyRoles(KernelOp kernel,
                                      const GPUTargetInfo &target) {
  int64_t warpSize = target.getWarpSize();
  if (!target.hasNamedBarriers()) {
    // A role of per-thread code only (scalar code, per-thread stores,
    // shuffles, atomics, an early exit: `if tx < n: ...`) never waits on a
    // barrier of its own; a role running tile operations does.
    WalkResult roles = kernel.walk([&](RoleOp role) {
      WalkResult needs = role.getBody().walk([&](Operation *op) {
        if (!isa<TileDialect>(op->getDialect()) || isPerThreadOp(op) ||
            isa<YieldOp, RoleOp>(op))
          return WalkResult::advance();
        return WalkResult::interrupt();
      });
      if (!needs.wasInterrupted())
        return WalkResult::advance();
      role.emitOpError("gives threads a role of their own, which needs "
                       "barriers over part of the block (named barriers); ")
          << target.getPlatformName() << " targets do not have them here";
      return WalkResult::interrupt();
    });
    if (roles.wasInterrupted())
      return failure();
  }
  int64_t total = kernel.getNumThreads();
  int64_t entry = std::min<int64_t>(256, (65536 / total) / 8 * 8);
  // Each thread's budget: the one its roles set (the last in program order;
  // roles of one range are the same threads at several points).
  SmallVector<int64_t> perThread(total, entry);
  SmallVector<SetMaxNRegOp> sets;
  WalkResult result = kernel.walk([&](RoleOp role) -> WalkResult {
    int64_t n = role.getNumThreads();
    WalkResult inner = role.getBody().walk([&](Operation *op) -> WalkResult {
      if (n % warpSize == 0 || !isa<TileDialect>(op->getDialect()))
        return WalkResult::advance();
      auto copy = dyn_cast<CopyOp>(op);
      if ((copy && copy.getBarrier()) || isPerThreadOp(op) ||
          isa<YieldOp, BarrierWaitOp, BarrierArriveOp, ThreadIdOp, FenceProxyAsyncOp,
              CpAsyncOp, AsyncCommitOp, AsyncWaitOp, PartialBarrierOp>(op))
        return WalkResult::advance();
      op->emitOpError("runs in a role of ")
          << n << " threads; tile operations need whole warps (a multiple "
          << "of " << warpSize << " threads)";
      return WalkResult::interrupt();
    });
    if (inner.wasInterrupted())
      return WalkResult::interrupt();
    role.getBody().walk([&](SetMaxNRegOp set) {
      sets.push_back(set);
      for (int64_t t = role.getBegin(); t < role.getEnd(); ++t)
        perThread[t] = set.getCount();
    });
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  if (failed(checkBarriers(kernel)))
    return failure();
  if (sets.empty())
    return success();
  // An increase to fewer registers than a thread has at entry (TileLang's
  // 240 for the consumers of a 256-thread block, which start with 256) asks
  // for what the threads already have: it is dropped, and they keep theirs.
  for (SetMaxNRegOp &set : sets) {
    if (!set.getIncrease() || set.getCount() >= entry)
      continue;
    auto role = set->getParentOfType<RoleOp>();
    for (int64_t t = role.getBegin(); t < role.getEnd(); ++t)
      perThread[t] = std::max(perThread[t], entry);
    set->erase();
    set = nullptr;
  }
  llvm::erase_if(sets, [](SetMaxNRegOp set) { return !set; });
  int64_t budget = 0;
  for (int64_t r : perThread)
    budget += r;
  for (SetMaxNRegOp set : sets) {
    if (!set.getIncrease() && set.getCount() > entry)
      return set.emitOpError("lowers the register budget to ")
             << set.getCount() << ", above the " << entry
             << " each of the block's " << total
             << " threads has at entry (use an increase)";
  }
  if (budget > 65536) {
    InFlightDiagnostic diag =
        kernel.emitOpError("its roles' register budgets (T.set_max_nreg) "
                           "add up to ")
        << budget << " registers, more than the 65536 of the register file";
    for (SetMaxNRegOp set : sets) {
      auto role = set->getParentOfType<RoleOp>();
      diag.attachNote(set.getLoc())
          << set.getCount() << " registers for each thread of the role of ["
          << role.getBegin() << ", " << role.getEnd() << ")";
    }
    return diag;
  }
  return success();
}

/// Every barrier a thread waits on gets arrivals; per-thread arrivals
/// (T.barrier_arrive) come from whole roles (or the whole block), so a
/// barrier's arrival count must be a sum of the sizes of the roles that
/// arrive on it.
static LogicalResult checkBarriers(KernelOp kernel) {
  WalkResult result = kernel.walk([&](AllocBarrierOp alloc) -> WalkResult {
    // Waits that could block: a wait on parity 1 of a barrier still in its
    // first phase returns at once (how a producer passes its first round of
    // `empty` slots), so a barrier nothing arrives on is fine as long as
    // every wait on it is on parity 1 -- as in a pipelined loop of one
    // iteration once canonicalize has folded the loop and dropped the
    // consumer's guarded release.
    SmallVector<BarrierWaitOp> waits;
    SmallVector<int64_t> sizes;
    bool arrives = false, perWarp = false;
    for (Operation *user : alloc->getUsers()) {
      if (auto wait = dyn_cast<BarrierWaitOp>(user))
        if (getConstantIntValue(wait.getParity()) != std::optional<int64_t>(1))
          waits.push_back(wait);
      // Arrivals from the blocks of a cluster: their count is the program's.
      if (isa<BarrierArriveRankOp, ClusterCopyOp>(user))
        arrives = perWarp = true;
      if (auto arrive = dyn_cast<BarrierArriveOp>(user)) {
        arrives = true;
        if (!arrive.getPerThread())
          perWarp = true;
        else if (!llvm::is_contained(sizes, threadsOf(arrive)))
          sizes.push_back(threadsOf(arrive));
      }
    }
    if (!waits.empty() && !arrives) {
      InFlightDiagnostic diag = waits.front().emitOpError(
          "waits on a barrier that nothing arrives on (a T.tma_copy only "
          "announces bytes; the threads must also T.barrier_arrive): it "
          "would wait forever");
      diag.attachNote(alloc.getLoc()) << "the barrier is allocated here";
      return WalkResult::interrupt();
    }
    if (perWarp || sizes.empty())
      return WalkResult::advance();
    for (int64_t count : alloc.getArrivals()) {
      // Sums of the arriving roles' sizes (each may arrive several times).
      llvm::BitVector reachable(count + 1);
      reachable.set(0);
      for (int64_t v = 1; v <= count; ++v)
        for (int64_t s : sizes)
          if (s <= v && reachable.test(v - s))
            reachable.set(v);
      if (reachable.test(count))
        continue;
      std::string list;
      llvm::raw_string_ostream os(list);
      llvm::interleaveComma(sizes, os);
      alloc.emitOpError("expects ")
          << count << " arrivals per phase, but the threads that arrive on it "
          << "(T.barrier_arrive: every thread of its role) come in groups of "
          << list << ", which cannot add up to " << count;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
