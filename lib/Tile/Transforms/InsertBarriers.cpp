//===- InsertBarriers.cpp - barriers between shared-memory accesses -------===//
//
// Part of tilelang-mlir.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tile/IR/TileOps.h"
#include "dialects/Tile/Transforms/Passes.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "dialects/Tile/Utils/ThreadVariance.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "tile-insert-barriers"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEINSERTBARRIERS
#include "dialects/Tile/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

namespace {

/// Read/written flags of each shared buffer since the last barrier;
/// `atomic`: updated by atomics (tile.atomic_*), which need no order among
/// themselves but do against plain reads and writes; `pending`: written by
/// asynchronous copies (cp.async) that have not landed: they must follow
/// the other threads' earlier accesses, and land for the issuing thread at
/// its next tile.async_wait, where they become writes that later reads of
/// other threads are ordered after (a barrier does not land them).
struct Access {
  bool read = false, written = false, atomic = false, pending = false;
  bool operator==(const Access &o) const {
    return read == o.read && written == o.written && atomic == o.atomic &&
           pending == o.pending;
  }
};
using State = llvm::MapVector<Value, Access>;

/// The shared buffers an op reads and writes (for regions: their bodies).
void collectAccesses(Operation *op, State &acc) {
  auto note = [&](Value v, bool write) {
    if (Value root = sharedRoot(v)) {
      Access &a = acc[root];
      (write ? a.written : a.read) = true;
    }
  };
  auto noteAtomic = [&](Value v) {
    if (Value root = sharedRoot(v))
      acc[root].atomic = true;
  };
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) -> WalkResult {
    if (isa<RoleOp>(inner))
      return WalkResult::skip(); // synchronized by the program (see run)
    auto noteAsync = [&](Value v) {
      if (Value root = sharedRoot(v))
        acc[root].pending = true;
    };
    if (auto cp = dyn_cast<CpAsyncOp>(inner)) {
      noteAsync(cp.getDst());
    } else if (auto copy = dyn_cast<CopyOp>(inner)) {
      if (copy.getBarrier()) // a TMA load: ordered by its barrier's waits
        return WalkResult::advance();
      if (copy.getAsync()) {
        // The pipeliner orders its own copies (waits, then a barrier before
        // the slot is read; a barrier before it is refilled).
        if (!copy->hasAttr(kPipelineOrderedAttr))
          noteAsync(copy.getDst());
        return WalkResult::advance();
      }
      note(copy.getSrc(), false);
      note(copy.getDst(), true);
    } else if (auto cc = dyn_cast<ClusterCopyOp>(inner)) {
      // It writes another block's memory: ordered by the program (a
      // cluster barrier, or the other block's wait on its barrier).
      note(cc.getSrc(), false);
    } else if (auto load = dyn_cast<memref::LoadOp>(inner)) {
      note(load.getMemRef(), false);
    } else if (auto store = dyn_cast<memref::StoreOp>(inner)) {
      note(store.getMemRef(), true);
    } else if (auto gemm = dyn_cast<GemmOp>(inner)) {
      note(gemm.getA(), false);
      note(gemm.getB(), false);
    } else if (auto gemm = dyn_cast<GemmSpOp>(inner)) {
      note(gemm.getA(), false);
      note(gemm.getE(), false);
      note(gemm.getB(), false);
    } else if (auto fill = dyn_cast<FillOp>(inner)) {
      note(fill.getDst(), true);
    } else if (auto r = dyn_cast<ReduceOp>(inner)) {
      note(r.getSrc(), false);
      note(r.getDst(), true);
    } else if (auto c = dyn_cast<CumSumOp>(inner)) {
      note(c.getSrc(), false);
      note(c.getDst(), true);
    } else if (auto a = dyn_cast<AtomicAddOp>(inner)) {
      noteAtomic(a.getDst());
      note(a.getValue(), false);
    } else if (auto a = dyn_cast<AtomicRMWOp>(inner)) {
      noteAtomic(a.getDst());
    } else if (auto a = dyn_cast<AtomicLoadOp>(inner)) {
      noteAtomic(a.getSrc());
    } else if (auto a = dyn_cast<AtomicStoreOp>(inner)) {
      noteAtomic(a.getDst());
    } else if (auto call = dyn_cast<CallExternOp>(inner)) {
      for (auto [arg, access] : llvm::zip(call.getArgs(), call.getAccess())) {
        if (access & 1)
          note(arg, false);
        if (access & 2)
          note(arg, true);
      }
    } else if (auto p = dyn_cast<PrintOp>(inner)) {
      note(p.getValue(), false);
    }
    return WalkResult::advance();
  });
}

bool conflicts(const State &before, const State &op) {
  for (auto &[buf, a] : op) {
    auto it = before.find(buf);
    if (it == before.end())
      continue;
    const Access &b = it->second;
    if (((a.written || a.pending) && (b.read || b.written || b.atomic)) ||
        (a.read && (b.written || b.atomic)) ||
        (a.atomic && (b.read || b.written)))
      return true;
  }
  return false;
}

void merge(State &into, const State &from) {
  for (auto &[buf, a] : from) {
    Access &x = into[buf];
    x.read |= a.read;
    x.written |= a.written;
    x.atomic |= a.atomic;
    x.pending |= a.pending;
  }
}

/// The state after a block barrier: the accesses before it are ordered;
/// asynchronous copies still in flight stay pending.
void barrierPassed(State &state) {
  State still;
  for (auto &[buf, a] : state)
    if (a.pending)
      still[buf].pending = true;
  state = std::move(still);
}

/// A thread's tile.async_wait: its copies in flight land (all of them: a
/// wait that leaves some groups in flight is taken as landing them too,
/// which orders more, never less).
void asyncCopiesLanded(State &state) {
  for (auto &[buf, a] : state)
    if (a.pending) {
      a.pending = false;
      a.written = true;
    }
}

/// A block barrier before `op` where `acc` conflicts with the accesses in
/// `state` (none right after another one); `state` starts over there.
void separate(Operation &op, State &state, const State &acc) {
  if (!conflicts(state, acc))
    return;
  Operation *prev = op.getPrevNode();
  if (!prev || !isa<BarrierOp>(prev)) {
    OpBuilder b(&op);
    BarrierOp::create(b, op.getLoc());
  }
  barrierPassed(state);
}

/// Whether `op` may sit between two roles of one group: it touches no
/// shared memory and is no barrier (index arithmetic, constants).
bool isGroupFiller(Operation &op) {
  if (isa<RoleOp, BarrierOp>(op) || op.getNumRegions() != 0)
    return false;
  State acc;
  collectAccesses(&op, acc);
  return acc.empty();
}

/// Whether two roles share threads: the later one runs after the earlier
/// one on those, so the two are not concurrent.
bool shareThreads(RoleOp a, RoleOp b) {
  return a.getBegin() < b.getEnd() && b.getBegin() < a.getEnd();
}

/// The roles of the group that starts at `first`, in order: the sibling
/// roles after it (group fillers between them) up to the first one that
/// shares threads with a role already in the group.
SmallVector<Operation *> roleGroup(RoleOp first) {
  SmallVector<Operation *> roles;
  for (Operation *p = first; p; p = p->getNextNode()) {
    if (auto role = dyn_cast<RoleOp>(p)) {
      if (llvm::any_of(roles, [&](Operation *r) {
            return shareThreads(cast<RoleOp>(r), role);
          }))
        break;
      roles.push_back(p);
    } else if (!isGroupFiller(*p)) {
      break;
    }
  }
  return roles;
}

/// The first role of the group of sibling roles `role` belongs to: the run
/// of adjacent roles it is in, cut into groups of concurrent roles (TileLang's
/// `if tx < 32: ...` then `if tx < 32: ... else: ...` is two groups, in
/// that order).
Operation *firstOfGroup(RoleOp role) {
  Operation *first = role;
  for (Operation *p = role->getPrevNode(); p; p = p->getPrevNode()) {
    if (isa<RoleOp>(p))
      first = p;
    else if (!isGroupFiller(*p))
      break;
  }
  while (true) {
    SmallVector<Operation *> group = roleGroup(cast<RoleOp>(first));
    if (llvm::is_contained(group, role.getOperation()))
      return first;
    Operation *next = group.back()->getNextNode();
    while (!isa<RoleOp>(next))
      next = next->getNextNode();
    first = next;
  }
}

/// The shared accesses of a role's body (collectAccesses skips roles).
void collectRoleAccesses(Operation *role, State &acc) {
  for (Operation &inner : role->getRegion(0).front())
    collectAccesses(&inner, acc);
}

class BarrierInserter {
public:
  BarrierInserter(int64_t threads, const ThreadVariance &variance)
      : threads(threads), variance(variance) {}

  /// Processes `block` starting from `state`; returns the state at its end.
  State run(Block &block, State state) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (isa<BarrierOp>(op)) {
        barrierPassed(state);
        continue;
      }
      if (isa<AsyncWaitOp>(op)) {
        asyncCopiesLanded(state);
        continue;
      }
      // The program's own `T.sync_threads(id, n)` over every thread of the
      // scope (the block's, or the role's) is a barrier too: none goes
      // after it. (TileLang's radix top-k syncs a 256-thread role this way
      // inside `if tx < 256 - offset` branches: a barrier inserted there
      // was not reached by every thread of the role, and the kernel hung.)
      if (auto named = dyn_cast<NamedBarrierOp>(op);
          named && named.getThreads() == threads) {
        barrierPassed(state);
        continue;
      }
      if (auto cc = dyn_cast<ClusterCopyOp>(op); cc && cc.getBarrier()) {
        // A cluster copy through a barrier synchronizes the threads before
        // its reads and after its stores itself (lowerClusterCopy).
        barrierPassed(state);
        continue;
      }
      if (auto add = dyn_cast<AtomicAddOp>(op); add && add.getTma()) {
        // A bulk add synchronizes the threads before and after it itself
        // (see KernelLowering::lowerAtomicAdd).
        barrierPassed(state);
        continue;
      }
      if (auto role = dyn_cast<RoleOp>(op)) {
        // A group of sibling roles over disjoint threads (threads [0, 128)
        // under `if tx < 128` and the rest under its `else`, the roles of
        // an explicit warp specialization) runs concurrently:
        // within it, each role's barriers synchronize its own threads and
        // the roles order their accesses against each other through the
        // program's transaction barriers, so no block barrier goes between
        // them (it would deadlock a producer waiting on its consumer).
        // Against the rest of the kernel the group is one op, as TileLang's
        // thread-conditioned regions are: a block barrier before it where
        // it conflicts with earlier accesses, and after it where later ones
        // conflict with it (all threads pass both points).
        if (role == firstOfGroup(role)) {
          State group;
          for (Operation *r : roleGroup(role))
            collectRoleAccesses(r, group);
          separate(op, state, group);
          merge(state, group);
        }
        // A role of part of a warp (`if tx == 0:` writing a prefix sum into
        // shared memory) cannot be synchronized by a barrier: none goes
        // inside; its threads order their own accesses (one thread needs
        // nothing), as in a branch whose condition differs between threads.
        if (role.getNumThreads() % 32 != 0)
          continue;
        int64_t outer = threads;
        threads = role.getNumThreads();
        run(role.getBody().front(), State());
        threads = outer;
        continue;
      }
      if (auto ws = dyn_cast<WarpSpecializeOp>(op)) {
        // Each role synchronizes only its own threads, and the roles share
        // memory only through transaction barriers.
        run(ws.getProducer().front(), State());
        run(ws.getConsumer().front(), State());
        state.clear();
        continue;
      }
      if (variance.isVaryingControl(&op)) {
        // A branch or loop whose condition or bounds differ between threads
        // (`if input_idx < end:` with input_idx from the thread index, a
        // loop to a per-thread count) is one op: a barrier before it where
        // its accesses conflict with earlier ones, none inside, since the
        // threads that skip the branch or leave the loop early would never
        // arrive (TileLang hoists its syncs out of such branches the same
        // way). The program orders accesses inside it itself.
        State acc;
        collectAccesses(&op, acc);
        separate(op, state, acc);
        merge(state, acc);
        continue;
      }
      if (isa<scf::ForOp, scf::WhileOp, PipelinedOp>(op)) {
        // Accesses before the loop that conflict with the body are
        // separated by one barrier before it, not by one in every trip
        // (a Q tile loaded before the loop over KV tiles).
        State body;
        collectAccesses(&op, body);
        separate(op, state, body);
        // The body may follow itself: iterate to a fixpoint.
        State entry = state;
        for (int i = 0; i < 3; ++i) {
          State end = entry;
          for (Region &r : op.getRegions())
            for (Block &b : r)
              end = run(b, end);
          State next = state;
          merge(next, end);
          if (next.size() == entry.size() &&
              llvm::all_of(next, [&](auto &kv) {
                auto it = entry.find(kv.first);
                return it != entry.end() && it->second == kv.second;
              }))
            break;
          entry = next;
        }
        // Insertion during the iterations is idempotent; the state after
        // the loop covers zero and more trips.
        State end = entry;
        for (Region &r : op.getRegions())
          for (Block &b : r)
            end = run(b, end);
        merge(state, end);
        continue;
      }
      if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
        State out = run(*ifOp.thenBlock(), state);
        if (ifOp.elseBlock())
          merge(out, run(*ifOp.elseBlock(), state));
        else
          merge(out, state);
        state = out;
        continue;
      }
      if (auto copy = dyn_cast<CopyOp>(op); copy && copy.getMulticastMask()) {
        // T.copy_cluster's TMA multicast writes its destination when it is
        // issued: after every thread's earlier accesses to it (a barrier
        // before); the wait on its barrier that follows orders it before
        // the later ones.
        State acc;
        if (Value root = sharedRoot(copy.getDst()))
          acc[root].written = true;
        separate(op, state, acc);
        continue;
      }
      State acc;
      collectAccesses(&op, acc);
      if (acc.empty())
        continue;
      separate(op, state, acc);
      merge(state, acc);
    }
    return state;
  }

private:
  int64_t threads; // the threads of the scope being processed
  const ThreadVariance &variance;
};

struct TileInsertBarriersPass
    : public tile::impl::TileInsertBarriersBase<TileInsertBarriersPass> {
  void runOnOperation() override {
    getOperation().walk([&](KernelOp kernel) {
      ThreadVariance variance(kernel);
      BarrierInserter(kernel.getNumThreads(), variance)
          .run(kernel.getBody().front(), State());
    });
  }
};

} // namespace
