//===- SharedMemoryPlan.cpp - shared buffers that share bytes -------------===//
//
// Part of tilelang-mlir.
//
// The plan of shared memory when the buffers, placed one after the other
// (KernelLowering::placeShared), do not fit the chip: buffers whose
// lifetimes do not overlap may then share bytes, as TileLang's merge of
// shared allocations lets them. MLA decoding is the case: the output tile
// is written only after the last read of the query tiles.
//
// A lifetime is a span of the ops of one block, the scope: a use nested in
// a region counts as its ancestor op in the scope. The scope is the
// kernel's body; in a warp-specialized kernel, the consumer's body, where
// only the buffers no producer op touches may share; and from there, while
// every use of those buffers lies in one loop with the same bounds for
// every thread (the persistent loop over tiles), the loop's body.
//
// Where buffer B starts using bytes of buffer A (A's last op comes before
// B's first), every thread must be done with A and nothing asynchronous
// may still read or write A: the lowering emits, right before B's first op,
// a drain (GPUTargetInfo::emitAsyncDrain) and a barrier over the block (or
// the role). In a loop body the next iteration's A follows this one's B:
// A's first op gets the same drain.
//
//===----------------------------------------------------------------------===//

#include "dialects/Conversion/TileToGPU/KernelLowering.h"
#include "dialects/Tile/Utils/BufferUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "tile-shared-plan"

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// One buffer after the other
//===----------------------------------------------------------------------===//

int64_t KernelLowering::placeBarriers(DenseMap<Value, int64_t> *offsets) {
  int64_t offset = 0;
  kernel.walk([&](AllocBarrierOp alloc) {
    if (offsets)
      (*offsets)[alloc.getResult()] = offset;
    offset += alloc.getType().getNumElements() * 8;
  });
  return offset;
}

/// Places the barriers (first, 8 bytes each) and the shared allocations (in
/// order, aligned as sharedAlignment says); returns where they end.
/// With `offsets`, records each one's byte offset there.
int64_t KernelLowering::placeShared(DenseMap<Value, int64_t> *offsets) {
  int64_t offset = placeBarriers(offsets);
  kernel.walk([&](AllocSharedOp alloc) {
    offset = llvm::alignTo(offset, sharedAlignment(alloc));
    if (offsets)
      (*offsets)[alloc.getResult()] = offset;
    offset += sharedBytesOf(alloc);
  });
  return offset;
}

namespace {
/// One shared allocation of the plan.
struct Lifetime {
  AllocSharedOp alloc;
  int64_t bytes = 0, align = 128;
  /// The ops that access it (through views).
  SmallVector<Operation *> uses;
  /// Live everywhere: it shares bytes with no other buffer.
  bool pinned = false;
  /// The TMA loads into it (their writes land while no op of it runs).
  SmallVector<Operation *> tmaLoads;
  /// A warp-specialized kernel's producer fills it by TMA.
  bool producerFilled = false;
  /// First and last op of the scope using it (-1: never used).
  int64_t first = -1, last = -1;
  int64_t offset = 0;

  bool liveWith(const Lifetime &o) const {
    if (pinned || o.pinned)
      return true;
    if (first < 0 || o.first < 0)
      return false;
    return first <= o.last && o.first <= last;
  }
  bool sharesBytesWith(const Lifetime &o) const {
    return bytes > 0 && o.bytes > 0 && offset < o.offset + o.bytes &&
           o.offset < offset + bytes;
  }
};
} // namespace

/// Collects the ops that use `v`, looking through the views of it; fails
/// when an op the plan does not know takes the buffer (its accesses might
/// outlive the op: a yield out of a region, a pointer taken from it).
static LogicalResult collectUses(Value v, SmallVectorImpl<Operation *> &uses) {
  for (Operation *user : v.getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>() ||
        (!isa_and_present<TileDialect>(user->getDialect()) &&
        !isa<memref::LoadOp, memref::StoreOp, memref::DimOp,
             memref::SubViewOp, memref::CastOp>(user)))
      return failure();
    if (!isa<memref::SubViewOp, memref::CastOp>(user))
      uses.push_back(user);
    for (Value r : user->getResults())
      if (isa<MemRefType>(r.getType()) && failed(collectUses(r, uses)))
        return failure();
  }
  return success();
}

/// Whether every thread of the kernel computes the same `v`: values from
/// outside the kernel, constants, block indices, grid sizes and arithmetic
/// on them.
static bool isUniform(Value v, KernelOp kernel, int depth = 0) {
  if (depth > 8)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &kernel.getBody().front() ||
           !kernel->isAncestor(arg.getOwner()->getParentOp());
  Operation *def = v.getDefiningOp();
  if (!kernel->isAncestor(def) || matchPattern(v, m_Constant()) ||
      isa<gpu::GridDimOp>(def))
    return true;
  if (!isa<arith::ArithDialect>(def->getDialect()) || def->getNumRegions() ||
      !isMemoryEffectFree(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value o) {
    return isUniform(o, kernel, depth + 1);
  });
}

FailureOr<int64_t>
KernelLowering::placeSharedReusing(DenseMap<Value, int64_t> &offsets,
                                   llvm::SmallPtrSetImpl<Operation *> &drains,
                                   std::string &why) {
  // Barriers first, as in the plain plan.
  int64_t base = placeBarriers(&offsets);
  SmallVector<Lifetime> lives;
  bool escapes = false;
  kernel.walk([&](AllocSharedOp alloc) {
    Lifetime l;
    l.alloc = alloc;
    l.bytes = sharedBytesOf(alloc);
    l.align = sharedAlignment(alloc);
    l.pinned = failed(collectUses(alloc.getResult(), l.uses));
    escapes |= l.pinned;
    lives.push_back(std::move(l));
  });
  // TMA loads write their buffer while no op of the kernel runs: each is
  // waited for (on its barrier) before the buffer is read, so a buffer read
  // after its last load holds no write in flight past its last read (the
  // pipeliner issues a stage's load only for an iteration that runs). One
  // whose last use is a load is pinned below.
  kernel.walk([&](CopyOp copy) {
    if (!copy.getBarrier())
      return;
    if (AllocSharedOp dst = sharedAllocOf(copy.getDst()))
      for (Lifetime &l : lives)
        if (l.alloc == dst)
          l.tmaLoads.push_back(copy);
  });
  // Other blocks of the cluster write the destination of a cluster copy
  // whenever they run it, and a bulk one reads its source asynchronously.
  kernel.walk([&](ClusterCopyOp copy) {
    for (Value v : {copy.getSrc(), copy.getDst()})
      if (AllocSharedOp alloc = sharedAllocOf(v))
        for (Lifetime &l : lives)
          l.pinned |= l.alloc == alloc;
  });

  Block *scope = &kernel.getBody().front();
  WarpSpecializeOp ws;
  kernel.walk([&](WarpSpecializeOp op) { ws = op; });
  if (ws) {
    if (ws->getBlock() != scope) {
      why = "its warp-specialized roles are not at the top of the kernel";
      return failure();
    }
    bool turns = false;
    ws.getConsumer().walk([&](GemmOp g) {
      turns |= g->hasAttr("pingpong_begin") || g->hasAttr("pingpong_end");
    });
    if (turns) {
      why = "its consumer warpgroups take turns (ping-pong)";
      return failure();
    }
    // A buffer the producer touches otherwise than by its TMA loads is in
    // use across the roles. The stages it fills by TMA are the consumer's
    // to time: it waits for each load before reading it, so once its last
    // read of a stage is done no write to it is in flight (the output tile
    // after the main loop may take their bytes, as in TileLang).
    Region &consumer = ws.getConsumer();
    for (Lifetime &l : lives) {
      bool read = false;
      for (Operation *u : l.uses) {
        if (consumer.isAncestor(u->getParentRegion())) {
          read = true;
          continue;
        }
        l.pinned |= !llvm::is_contained(l.tmaLoads, u);
        l.producerFilled = true;
      }
      l.pinned |= !read;
      // The producer's loads lie outside the consumer's body, the scope.
      llvm::erase_if(l.uses, [&](Operation *u) {
        return !consumer.isAncestor(u->getParentRegion());
      });
      llvm::erase_if(l.tmaLoads, [&](Operation *u) {
        return !consumer.isAncestor(u->getParentRegion());
      });
    }
    scope = &consumer.front();
  }
  // Into the loop that holds every use of the buffers that may share.
  bool inLoop = false;
  while (true) {
    Operation *holder = nullptr;
    bool one = true;
    for (Lifetime &l : lives) {
      if (l.pinned)
        continue;
      for (Operation *u : l.uses) {
        Operation *a = scope->findAncestorOpInBlock(*u);
        one &= a && (!holder || a == holder);
        holder = a;
      }
    }
    auto loop = dyn_cast_or_null<scf::ForOp>(holder);
    if (!one || !loop || !isUniform(loop.getLowerBound(), kernel) ||
        !isUniform(loop.getUpperBound(), kernel) ||
        !isUniform(loop.getStep(), kernel))
      break;
    scope = loop.getBody();
    inLoop = true;
  }
  // Over a loop of the consumer (its tiles, a persistent kernel), the
  // producer runs ahead: it fills the next iteration's stages as soon as
  // the consumer frees them, while the consumer still works on this one.
  if (inLoop)
    for (Lifetime &l : lives)
      l.pinned |= l.producerFilled;
  DenseMap<Operation *, int64_t> position;
  SmallVector<Operation *> ops;
  for (Operation &op : *scope) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  for (Lifetime &l : lives) {
    if (l.pinned)
      continue;
    for (Operation *u : l.uses) {
      Operation *a = scope->findAncestorOpInBlock(*u);
      if (!a) {
        l.pinned = true;
        break;
      }
      int64_t p = position.lookup(a);
      l.first = l.first < 0 ? p : std::min(l.first, p);
      l.last = std::max(l.last, p);
    }
    // A TMA load as the buffer's last op (not inside a loop that reads it
    // after its wait) may still be writing when another buffer takes the
    // bytes.
    for (Operation *load : l.tmaLoads) {
      Operation *a = l.pinned ? nullptr : scope->findAncestorOpInBlock(*load);
      if (!a || (a == load && position.lookup(a) == l.last))
        l.pinned = true;
    }
  }
  if (llvm::all_of(lives, [](const Lifetime &l) { return l.pinned; })) {
    why = escapes ? "an op other than tile and memref accesses takes a "
                    "shared buffer"
                  : "every shared buffer is in use for the whole kernel "
                    "(pipeline stages, TMA destinations)";
    return failure();
  }

  // Largest first, each at the first offset (aligned as in the plain plan)
  // where it overlaps no placed buffer that is live with it.
  SmallVector<Lifetime *> order;
  for (Lifetime &l : lives)
    order.push_back(&l);
  llvm::stable_sort(order, [](const Lifetime *a, const Lifetime *b) {
    return a->bytes > b->bytes;
  });
  int64_t end = base;
  SmallVector<Lifetime *> placed;
  for (Lifetime *l : order) {
    l->offset = llvm::alignTo(base, l->align);
    for (bool moved = true; moved;) {
      moved = false;
      for (Lifetime *p : placed)
        if (l->liveWith(*p) && l->sharesBytesWith(*p)) {
          l->offset = llvm::alignTo(p->offset + p->bytes, l->align);
          moved = true;
        }
    }
    end = std::max(end, l->offset + l->bytes);
    placed.push_back(l);
  }

  for (Lifetime &l : lives) {
    offsets[l.alloc.getResult()] = l.offset;
    LLVM_DEBUG(llvm::dbgs() << "shared " << l.alloc.getType() << ": "
                            << l.bytes << " bytes at " << l.offset << ", ops "
                            << l.first << ".." << l.last
                            << (l.pinned ? " (pinned)" : "") << "\n");
  }
  for (auto [i, a] : llvm::enumerate(lives))
    for (const Lifetime &b : ArrayRef(lives).drop_front(i + 1)) {
      if (a.first < 0 || b.first < 0 || a.liveWith(b) || !a.sharesBytesWith(b))
        continue;
      const Lifetime &early = a.last < b.first ? a : b;
      const Lifetime &late = a.last < b.first ? b : a;
      drains.insert(ops[late.first]);
      if (inLoop)
        drains.insert(ops[early.first]);
    }
  return end;
}
