//===- MergeBarriers.cpp - drop a barrier that orders nothing new ---------===//
//
// Part of tilelang-mlir.
//
// See the description of tile-merge-barriers in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "dialects/NVVM/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILEMERGEBARRIERS
#include "dialects/NVVM/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;

namespace {

/// Whether `memref` is per-thread storage: a memref.alloca, or a view of
/// one (the registers of a fragment before LLVM promotes them).
bool isPerThread(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (isa<memref::AllocaOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    memref = view.getViewSource();
  }
  return false;
}

/// LLVM intrinsics without memory effects that the lowering calls between
/// barriers (the softmax's exp2 and log2; conversions).
bool isPureIntrinsic(StringRef name) {
  for (StringRef prefix :
       {"llvm.nvvm.ex2.", "llvm.nvvm.lg2.", "llvm.nvvm.rcp.", "llvm.nvvm.sqrt.",
        "llvm.nvvm.rsqrt.", "llvm.nvvm.fmax", "llvm.nvvm.fmin", "llvm.nvvm.f2",
        "llvm.nvvm.ff2", "llvm.exp2.", "llvm.log2.", "llvm.fma.", "llvm.fabs.",
        "llvm.maxnum.", "llvm.minnum.", "llvm.maximum.", "llvm.minimum."})
    if (name.starts_with(prefix))
      return true;
  return false;
}

/// Whether `op` is a barrier of the whole block: gpu.barrier, or
/// nvvm.barrier without an id, a thread count or a reduction (bar.sync 0).
/// Named barriers are left alone: warp-specialized code pairs them with
/// bar.arrive of other warps, so two in a row are two signals, not one.
bool isBlockBarrier(Operation *op) {
  if (isa<gpu::BarrierOp>(op))
    return true;
  auto bar = dyn_cast<NVVM::BarrierOp>(op);
  return bar && !bar.getBarrierId() && !bar.getNumberOfThreads() &&
         !bar.getReductionOp();
}

/// A byte range of shared memory: [lo, hi) from `base` (null: the start
/// of the dynamic shared memory; another value: an offset only known at
/// run time, such as a base aligned by the kernel). Ranges from different
/// bases may overlap.
struct Range {
  Value base;
  int64_t lo = 0, hi = std::numeric_limits<int64_t>::max();
};

/// What the operations between two barriers do to memory others can see.
struct Effects {
  bool unknown = false;      // something not understood: conflicts with all
  bool globalRead = false, globalWrite = false;
  SmallVector<std::pair<Range, bool>> shared; // (range, written)

  bool empty() const {
    return !unknown && !globalRead && !globalWrite && shared.empty();
  }
  void merge(const Effects &o) {
    unknown |= o.unknown;
    globalRead |= o.globalRead;
    globalWrite |= o.globalWrite;
    shared.append(o.shared.begin(), o.shared.end());
  }
  /// Whether a barrier between `a` (before) and `b` (after) orders a pair
  /// of accesses to the same memory, one of them a write.
  static bool conflict(const Effects &a, const Effects &b) {
    if (a.empty() || b.empty())
      return false;
    if (a.unknown || b.unknown)
      return true;
    if ((a.globalWrite && (b.globalRead || b.globalWrite)) ||
        (a.globalRead && b.globalWrite))
      return true;
    for (auto &[ra, wa] : a.shared)
      for (auto &[rb, wb] : b.shared)
        if ((wa || wb) && (ra.base != rb.base || (ra.lo < rb.hi && rb.lo < ra.hi)))
          return true;
    return false;
  }
};

/// The bytes of shared memory a workgroup memref may cover: a
/// memref.view of the dynamic shared memory at offset `c` or `base + c`
/// with a static shape covers its own bytes; any other, all of it.
Range sharedRange(Value memref) {
  Range all;
  while (Operation *def = memref.getDefiningOp()) {
    auto view = dyn_cast<memref::ViewOp>(def);
    if (!view) {
      // A subview (or cast) lies within what it views.
      auto like = dyn_cast<ViewLikeOpInterface>(def);
      if (!like)
        return all;
      memref = like.getViewSource();
      continue;
    }
    if (!view.getSource().getDefiningOp<gpu::DynamicSharedMemoryOp>())
      return all;
    auto type = view.getType();
    if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
      return all;
    int64_t bytes = type.getNumElements() *
                    llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    Range r;
    Value offset = view.getByteShift();
    APInt c;
    if (matchPattern(offset, m_ConstantInt(&c))) {
      r.lo = c.getSExtValue();
    } else if (auto add = offset.getDefiningOp<arith::AddIOp>()) {
      if (matchPattern(add.getRhs(), m_ConstantInt(&c))) {
        r.base = add.getLhs();
        r.lo = c.getSExtValue();
      } else if (matchPattern(add.getLhs(), m_ConstantInt(&c))) {
        r.base = add.getRhs();
        r.lo = c.getSExtValue();
      } else {
        r.base = offset;
      }
    } else {
      r.base = offset;
    }
    r.hi = r.lo + bytes;
    return r;
  }
  return all;
}

/// Adds an access of `memref` to `e`: none for per-thread memory.
void noteAccess(Value memref, bool write, Effects &e) {
  if (isPerThread(memref))
    return;
  auto type = dyn_cast<MemRefType>(memref.getType());
  if (!type) {
    e.unknown = true;
    return;
  }
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  if (space && space.getValue() == gpu::AddressSpace::Workgroup)
    e.shared.push_back({sharedRange(memref), write});
  else if (!type.getMemorySpace() ||
           (space && space.getValue() == gpu::AddressSpace::Global))
    (write ? e.globalWrite : e.globalRead) = true;
  else
    e.unknown = true;
}

/// Adds what `op` (with its regions) does to memory that other threads of
/// the block can see. Nothing for thread-local work: accesses of
/// per-thread memory, operations without memory effects, and the
/// register-only operations below. Unknown ops (waits, fences, mbarriers,
/// inline assembly, an op holding a barrier) conflict with everything.
void collect(Operation *op, Effects &e) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return noteAccess(load.getMemRef(), false, e);
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return noteAccess(store.getMemRef(), true, e);
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return noteAccess(load.getBase(), false, e);
  if (auto store = dyn_cast<vector::StoreOp>(op))
    return noteAccess(store.getBase(), true, e);
  if (auto ld = dyn_cast<nvgpu::LdMatrixOp>(op))
    return noteAccess(ld.getSrcMemref(), false, e);
  // An asynchronous copy writes its destination some time before the
  // thread's wait for it (which counts as unknown): as a write at the
  // issue it conflicts with every access a barrier must keep before it.
  if (auto copy = dyn_cast<nvgpu::DeviceAsyncCopyOp>(op)) {
    noteAccess(copy.getSrc(), false, e);
    return noteAccess(copy.getDst(), true, e);
  }
  // Register-only operations the lowering emits that declare no effects;
  // a commit only closes the thread's group of asynchronous copies.
  if (isa<memref::AllocaOp, NVVM::ShflOp, NVVM::MmaOp,
          NVVM::CpAsyncCommitGroupOp>(op))
    return;
  if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op)) {
    e.unknown |= !isPureIntrinsic(call.getIntrin());
    return;
  }
  if (op->getNumRegions() == 0) {
    e.unknown |= !isMemoryEffectFree(op);
    return;
  }
  if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) {
    e.unknown = true;
    return;
  }
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &inner : block) {
        if (isBlockBarrier(&inner)) {
          e.unknown = true;
          return;
        }
        collect(&inner, e);
      }
}

struct TileMergeBarriersPass
    : public tile::impl::TileMergeBarriersBase<TileMergeBarriersPass> {
  void runOnOperation() override {
    SmallVector<Operation *> redundant;
    getOperation()->walk([&](Block *block) {
      // The block cut at its barriers: what each piece does, and the
      // barrier that ends it (null for the last piece).
      SmallVector<std::pair<Effects, Operation *>> pieces(1);
      for (Operation &op : *block) {
        if (isBlockBarrier(&op)) {
          pieces.back().second = &op;
          pieces.emplace_back();
          continue;
        }
        collect(&op, pieces.back().first);
      }
      if (pieces.size() < 2)
        return;
      // What precedes the first barrier and follows the last one includes
      // code outside this block (the previous iteration of a loop): both
      // count as unknown, so those barriers stay.
      pieces.front().first.unknown = true;
      pieces.back().first.unknown = true;
      // Since the last kept barrier (or the block's start): what a barrier
      // would have to order against the piece after it.
      Effects since = pieces.front().first;
      for (size_t i = 0; i + 1 < pieces.size(); ++i) {
        const Effects &next = pieces[i + 1].first;
        if (Effects::conflict(since, next)) {
          since = next;
        } else {
          redundant.push_back(pieces[i].second);
          since.merge(next);
        }
      }
    });
    for (Operation *op : redundant)
      op->erase();
  }
};

} // namespace
